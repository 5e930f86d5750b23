// Tensor-parallel shards of the Llama family: geometry (heads split or kv heads replicated),
// vocabulary rows, the module tree one rank holds, and shard weights that are exactly the full
// weights' row and column slices.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "model/tensor_split.h"
#include "test_util.h"

namespace plexus {
namespace {

ModelConfig geometry(std::int64_t heads, std::int64_t kv, std::int64_t inter) {
  ModelConfig c;
  c.hidden_size = heads * 8;
  c.num_heads = heads;
  c.num_kv_heads = kv;
  c.head_dim = 8;
  c.intermediate_size = inter;
  c.num_layers = 1;
  c.vocab_size = 100;
  return c;
}

TEST(TensorSplit, HeadsSplitOrKvHeadsReplicated) {
  const ModelConfig c = geometry(32, 8, 14336);
  const ModelConfig s2 = shard_config(c, 2);
  EXPECT_EQ(s2.num_heads, 16);
  EXPECT_EQ(s2.num_kv_heads, 4);
  EXPECT_EQ(s2.intermediate_size, 7168);
  const ModelConfig s16 = shard_config(c, 16);  // 16 ranks, 8 kv heads: one replicated per rank
  EXPECT_EQ(s16.num_heads, 2);
  EXPECT_EQ(s16.num_kv_heads, 1);
  for (int r = 0; r < 16; ++r) {
    // Rank r's query heads 2r, 2r + 1 belong to kv head (2r) / 4.
    EXPECT_EQ(shard_first_kv_head(c, TensorSplit{r, 16}), r / 2);
  }
  EXPECT_EQ(shard_first_kv_head(c, TensorSplit{3, 4}), 6);
  EXPECT_EQ(working_tp_sizes(c), (std::vector<int>{1, 2, 4, 8, 16, 32}));
  try {
    shard_config(c, 3);
    FAIL();
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--tp 3 cannot split this model: its 32 attention heads, 8 kv heads"), std::string::npos) << m;
    EXPECT_NE(m.find("--tp 1, 2, 4, 8, 16, 32 work"), std::string::npos) << m;
  }
  EXPECT_THROW(shard_config(geometry(12, 4, 100), 8), InputError);  // 12 heads: no
  EXPECT_THROW(shard_config(geometry(8, 8, 100), 8), InputError);   // intermediate 100: no
}

TEST(TensorSplit, VocabularyRowsCoverEveryRowOnce) {
  for (std::int64_t vocab : {1, 7, 100, 32001}) {
    for (int n : {1, 2, 3, 4, 8}) {
      std::int64_t next = 0;
      for (int r = 0; r < n; ++r) {
        const VocabRows v = shard_vocab_rows(vocab, TensorSplit{r, n});
        EXPECT_EQ(v.first, next);
        EXPECT_LE(v.count, shard_vocab_width(vocab, n));
        next += v.count;
      }
      EXPECT_EQ(next, vocab) << vocab << " over " << n;
    }
  }
}

class ShardWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<testing::TempDir>("shard");
    MakeModelOptions o;  // tiny: H 64, 4 heads of 16, 2 kv heads, intermediate 176
    o.arch = Arch::kQwen2;
    o.dtype = DType::kBF16;
    o.vocab_size = 1001;
    write_random_model(dir_->path(), o);
    config_ = load_model_config(dir_->path());
    ck_ = std::make_unique<Checkpoint>(dir_->path());
    full_ = std::make_unique<LlamaFamilyModel>(config_, *ck_);
  }
  std::unique_ptr<testing::TempDir> dir_;
  ModelConfig config_;
  std::unique_ptr<Checkpoint> ck_;
  std::unique_ptr<LlamaFamilyModel> full_;
};

TEST_F(ShardWeights, RowsAreViewsAndColumnsAreCopiesMarkedPartial) {
  const int n = 2;
  for (int r = 0; r < n; ++r) {
    const ModelShard shard(*full_, TensorSplit{r, n});
    const LlamaFamilyModel& m = shard.model();
    EXPECT_EQ(m.config().num_heads, 2);
    EXPECT_EQ(m.config().num_kv_heads, 1);
    const LayerWeights& f = full_->layer_weights(1);
    const LayerWeights& w = m.layer_weights(1);
    const std::int64_t Q = 32, KV = 16, I = 88;
    EXPECT_EQ(w.q.data, f.q.row(r * Q));  // views in place
    EXPECT_EQ(w.q.rows, Q);
    EXPECT_EQ(w.k.data, f.k.row(r * KV));
    EXPECT_EQ(w.gate.data, f.gate.row(r * I));
    EXPECT_EQ(w.q_bias.data, f.q_bias.data + r * Q);
    EXPECT_FALSE(w.q.partial_sum);
    EXPECT_TRUE(w.o.partial_sum);
    EXPECT_TRUE(w.down.partial_sum);
    EXPECT_EQ(w.o.cols, Q);
    EXPECT_EQ(w.down.cols, I);
    for (std::int64_t row = 0; row < w.down.rows; ++row) {  // columns [r·I, (r+1)·I) of each row
      EXPECT_EQ(std::memcmp(w.down.row(row), static_cast<const std::uint8_t*>(f.down.row(row)) + r * I * 2,
                            static_cast<std::size_t>(I * 2)), 0);
    }
    const VocabRows v = shard_vocab_rows(1001, TensorSplit{r, n});
    EXPECT_EQ(m.lm_head().data, full_->lm_head().row(v.first));
    EXPECT_EQ(m.lm_head().rows, v.count);
    EXPECT_EQ(m.embedding().rows, 1001);  // whole on every rank
  }
}

TEST_F(ShardWeights, ShardTreesHoldTheSplitWeightsOnceAndTheRestOnEveryRank) {
  const ModuleTree full = ModuleTree::from_checkpoint(config_, *ck_);
  auto numel = [](const ModuleTree& t, const std::string& suffix) {
    std::int64_t n = 0;
    for (const ParamInfo& p : t.params()) {
      if (!p.tied_to && p.name.size() >= suffix.size() && p.name.compare(p.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        n += p.numel();
      }
    }
    return n;
  };
  for (int n : {2, 4}) {
    std::int64_t split = 0, whole = 0;
    for (int r = 0; r < n; ++r) {
      const ModuleTree t = shard_module_tree(full, TensorSplit{r, n});
      for (const char* s : {"q_proj.weight", "o_proj.weight", "gate_proj.weight", "down_proj.weight", "lm_head.weight", "q_proj.bias"}) {
        split += numel(t, s);
      }
      whole += numel(t, "embed_tokens.weight") + numel(t, "input_layernorm.weight");
    }
    std::int64_t want_split = 0;
    for (const char* s : {"q_proj.weight", "o_proj.weight", "gate_proj.weight", "down_proj.weight", "lm_head.weight", "q_proj.bias"}) {
      want_split += numel(full, s);
    }
    EXPECT_EQ(split, want_split) << n << " ranks";
    EXPECT_EQ(whole, n * (numel(full, "embed_tokens.weight") + numel(full, "input_layernorm.weight")));
  }
  // 4 ranks, 2 kv heads: each rank holds one kv head's rows, so k and v are held twice in all.
  const ModuleTree t = shard_module_tree(full, TensorSplit{0, 4});
  EXPECT_EQ(numel(t, "k_proj.weight") * 4, 2 * numel(full, "k_proj.weight"));
}

}  // namespace
}  // namespace plexus
