// Tensor-parallel shards of the Llama family: geometry (heads split or kv heads replicated),
// vocabulary rows, the module tree one rank holds, and shard weights that are exactly the full
// weights' row and column slices; expert parallelism's shards (each rank's experts whole, the
// others absent) and the sizes it refuses; gpt-oss's sinks and biases.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "compute/workspace.h"
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

TEST(TensorSplit, ExpertParallelSizesDivideTheExpertsAndTheHeads) {
  ModelConfig c = geometry(8, 4, 128);
  c.arch = Arch::kQwen3Moe;
  c.moe = MoeConfig{6, 2, 100, true, 1, {}};  // 6 experts of width 100
  EXPECT_EQ(working_tp_sizes(c, true), (std::vector<int>{1, 2}));
  EXPECT_EQ(working_tp_sizes(c), (std::vector<int>{1, 2, 4}));  // width 100 splits 4 ways
  const ModelConfig s = shard_config(c, 2, true);
  EXPECT_EQ(s.num_heads, 4);
  EXPECT_EQ(s.moe.num_experts, 6);                 // the router's E
  EXPECT_EQ(s.moe.expert_intermediate_size, 100);  // whole experts
  EXPECT_EQ(shard_config(c, 2).moe.expert_intermediate_size, 50);
  EXPECT_EQ(local_experts(c, TensorSplit{1, 2, true}).first, 3);
  EXPECT_EQ(local_experts(c, TensorSplit{1, 2, true}).count, 3);
  EXPECT_EQ(local_experts(c, TensorSplit{1, 2}).count, 6);  // --tp: a slice of every expert
  try {
    shard_config(c, 4, true);  // the heads split 4 ways, the 6 experts do not
    FAIL();
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--ep 4 cannot spread this model over 4 ranks: its 6 experts a layer must divide evenly"), std::string::npos) << m;
    EXPECT_NE(m.find("--ep 1, 2 work"), std::string::npos) << m;
  }
  try {
    shard_config(geometry(8, 4, 128), 2, true);  // dense
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--ep 2: this model (LlamaForCausalLM) has no experts"), std::string::npos) << e.what();
  }
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

// --ep: rank r's tree holds experts [r·E/n, (r+1)·E/n) of every mixture layer at full shape and
// no parameter of the others; every expert once over the ranks. Its weights: those experts as
// views of the full model's, their down projections partial sums, the others empty.
TEST(ExpertShards, EachRankHoldsItsExpertsWholeAndNoneOfTheOthers) {
  testing::TempDir dir("shard_ep");
  MakeModelOptions o;  // Qwen3-MoE tiny: 8 experts, layer 1 dense
  o.arch = Arch::kQwen3Moe;
  o.dtype = DType::kF32;
  write_random_model(dir.path(), o);
  const ModelConfig config = load_model_config(dir.path());
  const Checkpoint ck(dir.path());
  const LlamaFamilyModel full_model(config, ck);
  const ModuleTree full = ModuleTree::from_checkpoint(config, ck);
  const MoeNames names = moe_names(config.arch);
  const std::int64_t E = config.moe.num_experts;
  ASSERT_EQ(E, 8);
  for (int n : {2, 4}) {
    std::map<std::string, int> held;  // expert parameter -> ranks holding it
    for (int r = 0; r < n; ++r) {
      const TensorSplit s{r, n, true};
      const ModuleTree t = shard_module_tree(full, s);
      for (const ParamInfo& p : t.params()) {
        const std::int64_t e = expert_index(p.name, names);
        if (e < 0) continue;
        EXPECT_TRUE(e >= r * E / n && e < (r + 1) * E / n) << p.name << " on rank " << r << " of " << n;
        EXPECT_EQ(p.shape, full.find(p.name)->shape) << p.name;  // whole
        ++held[p.name];
      }
      // The dense layer's MLP and the attention split as --tp splits them.
      const ModuleTree tp = shard_module_tree(full, TensorSplit{r, n});
      for (const char* name : {"model.layers.1.mlp.gate_proj.weight", "model.layers.0.self_attn.q_proj.weight"}) {
        EXPECT_EQ(t.find(name)->shape, tp.find(name)->shape) << name;
      }
      const ModelShard shard(full_model, s);
      for (int l = 0; l < config.num_layers; ++l) {
        const LayerWeights& w = shard.model().layer_weights(l);
        const LayerWeights& f = full_model.layer_weights(l);
        for (std::int64_t e = 0; e < static_cast<std::int64_t>(w.experts.size()); ++e) {
          const ExpertWeights& x = w.experts[static_cast<std::size_t>(e)];
          if (local_experts(config, s).holds(e)) {
            EXPECT_EQ(x.gate.data, f.experts[static_cast<std::size_t>(e)].gate.data);  // a view, whole
            EXPECT_EQ(x.down.cols, config.moe.expert_intermediate_size);
            EXPECT_TRUE(x.down.partial_sum);
          } else {
            EXPECT_FALSE(x.held());
            EXPECT_EQ(x.gate.data, nullptr);
            EXPECT_EQ(x.down.bytes(), 0);
          }
        }
      }
    }
    std::size_t want = 0;
    for (const ParamInfo& p : full.params()) {
      if (expert_index(p.name, names) < 0) continue;
      ++want;
      EXPECT_EQ(held[p.name], 1) << p.name << " over " << n << " ranks";
    }
    EXPECT_EQ(held.size(), want);
  }
}

// gpt-oss (issue 35): --tp splits the attention sinks with their query heads and every expert's
// gate/up biases with its width; the o_proj, router and experts' down biases stay whole, the
// down bias added by rank 0 only (the others hold zeros in its place). --ep keeps the experts'
// biases whole beside whole experts. The shard trees (what the planner sizes) have the weights'
// shapes, and each rank's small vectors take exactly the bytes layer_vector_bytes gives its
// geometry (the device copy the run makes of them).
TEST(GptOssShards, SinksAndBiasesSplitWithTheirHeadsAndWidthsTheDownBiasOnce) {
  testing::TempDir dir("shard_gpt_oss");
  MakeModelOptions o;  // tiny gpt-oss: H 64, 4 heads, 2 kv heads, 4 experts of width 64, 2 per token
  o.arch = Arch::kGptOss;
  o.dtype = DType::kF32;
  o.vocab_size = 300;
  write_random_model(dir.path(), o);
  const ModelConfig config = load_model_config(dir.path());
  const Checkpoint ck(dir.path());
  const LlamaFamilyModel full_model(config, ck);
  const ModuleTree full = ModuleTree::from_checkpoint(config, ck);
  const std::int64_t E = config.moe.num_experts, Ie = config.moe.expert_intermediate_size, H = config.hidden_size;
  ASSERT_EQ(E, 4);
  ASSERT_EQ(Ie, 64);
  auto vector_bytes = [](const LayerWeights& w) {
    std::int64_t b = 0;
    for (const VectorView* v : {&w.q_bias, &w.k_bias, &w.v_bias, &w.o_bias, &w.q_norm, &w.k_norm, &w.input_norm,
                                &w.post_attention_norm, &w.sinks, &w.router_bias, &w.expert_gate_bias, &w.expert_up_bias,
                                &w.expert_down_bias}) {
      b += round_up_line(v->size) * static_cast<std::int64_t>(sizeof(float));
    }
    return b;
  };
  const std::string p = "model.layers.1.";
  for (int n : {2, 4}) {
    const std::int64_t heads = config.num_heads / n, Is = Ie / n;
    std::int64_t tree_numel = 0, replicated = 0;
    for (int r = 0; r < n; ++r) {
      SCOPED_TRACE("--tp " + std::to_string(n) + " rank " + std::to_string(r));
      const ModuleTree t = shard_module_tree(full, TensorSplit{r, n});
      EXPECT_EQ(t.find(p + "self_attn.sinks")->shape, (std::vector<std::int64_t>{heads}));
      EXPECT_EQ(t.find(p + "mlp.experts.gate_up_proj")->shape, (std::vector<std::int64_t>{E, H, 2 * Is}));
      EXPECT_EQ(t.find(p + "mlp.experts.gate_up_proj_bias")->shape, (std::vector<std::int64_t>{E, 2 * Is}));
      EXPECT_EQ(t.find(p + "mlp.experts.down_proj")->shape, (std::vector<std::int64_t>{E, Is, H}));
      EXPECT_EQ(t.find(p + "mlp.experts.down_proj_bias")->shape, (std::vector<std::int64_t>{E, H}));
      EXPECT_EQ(t.find(p + "mlp.router.weight")->shape, (std::vector<std::int64_t>{E, H}));
      for (const ParamInfo& x : t.params()) tree_numel += x.numel();
      const ModelShard shard(full_model, TensorSplit{r, n});
      const ModelConfig& sc = shard.model().config();
      for (int l = 0; l < config.num_layers; ++l) {
        const LayerWeights& f = full_model.layer_weights(l);
        const LayerWeights& w = shard.model().layer_weights(l);
        EXPECT_EQ(w.sinks.data, f.sinks.data + r * heads);  // rank r's query heads' sinks, in place
        EXPECT_EQ(w.sinks.size, heads);
        EXPECT_EQ(w.q_bias.data, f.q_bias.data + r * heads * config.head_dim);
        EXPECT_EQ(w.o_bias.data, f.o_bias.data);  // added once, after the group's sum
        EXPECT_EQ(w.router_bias.data, f.router_bias.data);
        ASSERT_EQ(w.expert_gate_bias.size, E * Is);
        ASSERT_EQ(w.expert_up_bias.size, E * Is);
        for (std::int64_t e = 0; e < E; ++e) {
          for (std::int64_t j = 0; j < Is; ++j) {  // expert e's columns [r·Is, (r+1)·Is)
            ASSERT_EQ(w.expert_gate_bias.data[e * Is + j], f.expert_gate_bias.data[e * Ie + r * Is + j]);
            ASSERT_EQ(w.expert_up_bias.data[e * Is + j], f.expert_up_bias.data[e * Ie + r * Is + j]);
          }
          const ExpertWeights& x = w.experts[static_cast<std::size_t>(e)];
          EXPECT_EQ(x.gate.rows, Is);
          EXPECT_EQ(x.down.cols, Is);
          EXPECT_TRUE(x.down.partial_sum);
        }
        ASSERT_EQ(w.expert_down_bias.size, E * H);
        if (r == 0) {
          EXPECT_EQ(w.expert_down_bias.data, f.expert_down_bias.data);
        } else {
          for (std::int64_t i = 0; i < E * H; ++i) ASSERT_EQ(w.expert_down_bias.data[i], 0.0f) << i;
        }
        EXPECT_EQ(vector_bytes(w), layer_vector_bytes(sc));
      }
    }
    // Over the ranks: the split tensors once, the whole ones (embedding, norms, o_proj and
    // router weights' biases, the router, the down bias) on every rank.
    for (const ParamInfo& x : full.params()) {
      const bool whole = x.name.find("norm") != std::string::npos || x.name.ends_with("o_proj.bias") ||
                         x.name.find("router") != std::string::npos || x.name.ends_with("down_proj_bias") ||
                         x.name == "model.embed_tokens.weight";
      replicated += whole ? x.numel() : 0;
    }
    std::int64_t full_numel = 0;
    for (const ParamInfo& x : full.params()) full_numel += x.numel();
    // 4 ranks, 2 kv heads: k and v (and their biases) held twice over the ranks.
    std::int64_t kv = 0;
    for (const ParamInfo& x : full.params()) {
      if (n == 4 && (x.name.find(".k_proj.") != std::string::npos || x.name.find(".v_proj.") != std::string::npos)) kv += x.numel();
    }
    EXPECT_EQ(tree_numel, full_numel + (n - 1) * replicated + kv) << n << " ranks";
  }
  for (int n : {2, 4}) {  // --ep: whole experts, their biases whole
    for (int r = 0; r < n; ++r) {
      SCOPED_TRACE("--ep " + std::to_string(n) + " rank " + std::to_string(r));
      const TensorSplit s{r, n, true};
      const ModuleTree t = shard_module_tree(full, s);
      EXPECT_EQ(t.find(p + "self_attn.sinks")->shape, (std::vector<std::int64_t>{config.num_heads / n}));
      EXPECT_EQ(t.find(p + "mlp.experts.gate_up_proj")->shape, (std::vector<std::int64_t>{E / n, H, 2 * Ie}));
      EXPECT_EQ(t.find(p + "mlp.experts.down_proj")->shape, (std::vector<std::int64_t>{E / n, Ie, H}));
      EXPECT_EQ(t.find(p + "mlp.experts.gate_up_proj_bias")->shape, (std::vector<std::int64_t>{E, 2 * Ie}));
      EXPECT_EQ(t.find(p + "mlp.experts.down_proj_bias")->shape, (std::vector<std::int64_t>{E, H}));
      const ModelShard shard(full_model, s);
      const LayerWeights& f = full_model.layer_weights(1);
      const LayerWeights& w = shard.model().layer_weights(1);
      EXPECT_EQ(w.sinks.data, f.sinks.data + r * (config.num_heads / n));
      EXPECT_EQ(w.expert_gate_bias.data, f.expert_gate_bias.data);
      EXPECT_EQ(w.expert_up_bias.data, f.expert_up_bias.data);
      EXPECT_EQ(w.expert_down_bias.data, f.expert_down_bias.data);  // each rank adds its own experts' rows
      for (std::int64_t e = 0; e < E; ++e) EXPECT_EQ(w.experts[static_cast<std::size_t>(e)].held(), local_experts(config, s).holds(e));
      EXPECT_EQ(vector_bytes(w), layer_vector_bytes(shard.model().config()));
    }
  }
  try {
    shard_config(config, 3);
    FAIL() << "--tp 3 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tp 1, 2, 4 work"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace plexus
