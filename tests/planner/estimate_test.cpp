// Model memory estimates: sizes per dtype, largest layer, training, KV cache.
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/quant_mix.h"
#include "planner/budgets.h"
#include "planner/memory_estimate.h"
#include "planner/planner.h"
#include "planner/sized_tree.h"
#include "test_models.h"

namespace plexus {
namespace {

using namespace plexus::testing;

TEST(Estimate, Llama3_8bSizes) {
  const ModelEstimate e = estimate_model(llama3_8b());
  EXPECT_EQ(e.num_params, 8030261248LL);
  ASSERT_EQ(e.per_dtype.size(), 5u + quant_mixes().size());  // the dtypes, then every named mix
  EXPECT_EQ(e.per_dtype[0].total_bytes, 8030261248LL * 4);
  EXPECT_EQ(e.per_dtype[1].total_bytes, 8030261248LL * 2);
  EXPECT_EQ(e.per_dtype[1].largest_layer_bytes, 128256LL * 4096 * 2);
  EXPECT_EQ(e.per_dtype[1].largest_layer, "model.embed_tokens");
  EXPECT_EQ(e.per_dtype[1].training_adam_bytes, 4 * e.per_dtype[1].total_bytes);
  EXPECT_EQ(e.per_dtype[1].kv_bytes_per_token, 2 * 32 * 1024 * 2);
  EXPECT_LT(e.per_dtype[3].total_bytes, e.per_dtype[1].total_bytes);
  EXPECT_LT(e.per_dtype[4].total_bytes, e.per_dtype[3].total_bytes);
  // int8 = q8_0 (34 bytes per 32 weights) and int4 = q4_k (144 bytes per 256) on the
  // projections; embeddings, norms and lm_head stay 16-bit.
  const std::int64_t linear = 8030261248LL - 2 * 128256LL * 4096 - 65 * 4096LL;
  const std::int64_t other = (2 * 128256LL * 4096 + 65 * 4096LL) * 2;
  EXPECT_EQ(e.per_dtype[3].total_bytes, linear / 32 * 34 + other);
  EXPECT_EQ(e.per_dtype[4].total_bytes, linear / 256 * 144 + other);
  EXPECT_EQ(e.per_dtype[3].format, "q8_0");
  EXPECT_EQ(e.per_dtype[4].format, "q4_k");
  EXPECT_EQ(e.per_dtype[1].format, "bfloat16");
  ASSERT_FALSE(e.kv_table.empty());
  EXPECT_EQ(e.kv_table.front().bytes, e.kv_table.front().context * e.kv_table.front().batch * 131072);
  // The Q8_0 mix: every matrix (embedding and lm_head too) in Q8_0, the 65 norms at 16 bits.
  EXPECT_EQ(e.per_dtype[5].name, "q8_0");
  EXPECT_EQ(e.per_dtype[5].total_bytes, (8030261248LL - 65 * 4096LL) / 32 * 34 + 65 * 4096LL * 2);
  // Fewer bits, fewer bytes: Q4_K_M below Q5_K_M below Q6_K, Q2_K the smallest K mix.
  auto row = [&](const std::string& name) {
    for (const DTypeEstimate& d : e.per_dtype)
      if (d.name == name) return d.total_bytes;
    ADD_FAILURE() << "no row " << name;
    return std::int64_t{0};
  };
  EXPECT_LT(row("q4_k_m"), row("q5_k_m"));
  EXPECT_LT(row("q5_k_m"), row("q6_k"));
  EXPECT_LT(row("q2_k"), row("q3_k_m"));
  EXPECT_LT(row("q3_k_m"), row("q4_k_m"));
  // --quantize lists its mix alone.
  EXPECT_EQ(estimate_model(llama3_8b(), QuantMix::kQ4_K_M).per_dtype.size(), 6u);
}

TEST(Estimate, TiedEmbeddingsCountOnce) {
  const ModelEstimate e = estimate_model(qwen2_05b());
  EXPECT_EQ(e.num_params, 494032768LL);
  EXPECT_EQ(e.per_dtype[1].total_bytes, 494032768LL * 2);
}

TEST(SizedTree, HierarchyAndTies) {
  const SizedTree t = SizedTree::build(qwen2_05b(), WeightDType::kBF16);
  EXPECT_EQ(t.size_of("lm_head"), 0);  // its storage is the embedding's
  EXPECT_EQ(t.size_of("model.embed_tokens"), 151936LL * 896 * 2);
  ASSERT_EQ(t.tied_groups().size(), 1u);
  EXPECT_EQ(t.tied_groups()[0], (std::vector<std::string>{"lm_head.weight", "model.embed_tokens.weight"}));
  EXPECT_EQ(t.layer_nodes().size(), 24u);
  EXPECT_EQ(t.total_bytes(), t.size_of("model") + t.size_of("lm_head"));
  SizedTreeOptions with_rotary;
  with_rotary.rotary_buffer_per_layer = true;
  const SizedTree r = SizedTree::build(qwen2_05b(), WeightDType::kBF16, with_rotary);
  EXPECT_EQ(r.total_bytes() - t.total_bytes(), 24 * 32 * 2);  // inv_freq: head_dim/2 floats per layer
}

// Exact block sizes by hand on Qwen2-0.5B (hidden 896, intermediate 4864, 24 layers, q/k/v
// biases): the biases, norms and the tied embedding stay 16-bit; a tree quantised on load
// (ModuleTree::quantize_as) sizes every matrix in its mix's type whatever the plan's dtype (the
// Q4_0 mix: projections Q4_0, the tied embedding as output Q6_K, which rows of 896 turn to Q8_0).
TEST(SizedTree, BlockFormatsAreSizedExactly) {
  const ModuleTree t = qwen2_05b();
  const std::int64_t H = 896, I = 4864, KV = 128, L = 24;
  const std::int64_t proj = L * (H * H + 2 * KV * H + H * H + 3 * I * H);
  std::int64_t numel = 0;
  for (const ParamInfo& p : t.params()) {
    if (!p.tied_to) numel += p.numel();
  }
  const std::int64_t other = (numel - proj) * 2;
  EXPECT_EQ(SizedTree::build(t, WeightDType::kInt8).total_bytes(), proj / 32 * 34 + other);
  // q4_k: a row of 896 columns is 3.5 blocks, sized as 4 whole ones (runs refuse such rows);
  // down_proj's 4864 columns are 19 blocks.
  EXPECT_EQ(SizedTree::build(t, WeightDType::kInt4).total_bytes(),
            L * ((2 * H + 2 * KV + 2 * I) * 4 * 144 + H * 19 * 144) + other);
  ModuleTree q = t;
  q.quantize_as(QuantMix::kQ4_0);
  EXPECT_TRUE(q.quantized());
  const std::int64_t embed = t.find("model.embed_tokens.weight")->numel();
  const std::int64_t small = other - embed * 2;  // norms and biases at 16 bits
  EXPECT_EQ(SizedTree::build(q, WeightDType::kBF16).total_bytes(), proj / 32 * 18 + embed / 32 * 34 + small);
  EXPECT_EQ(SizedTree::build(q, WeightDType::kF32).total_bytes(), proj / 32 * 18 + embed / 32 * 34 + small * 2);
  // q_proj: 896 rows of 28 q8_0 blocks.
  const ParamInfo* qp = t.find("model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(param_bytes(*qp, WeightDType::kInt8, false), 896 * 28 * 34);
  EXPECT_EQ(block_matrix_bytes(DType::kQ6_K, {10, 512}), 10 * 2 * 210);
  // A bias of a projection keeps 16 bits.
  EXPECT_EQ(param_bytes(*t.find("model.layers.0.self_attn.q_proj.bias"), WeightDType::kInt4, false), 896 * 2);
}

}  // namespace
// The largest config.json allows: 2^20 hidden, 4096 layers of 4096 heads, 2^24 vocabulary.
TEST(Estimate, PlansOfTheLargestConfigNeverOverflow) {
  // (max_position_embeddings 2^20 as well, so that --context 2^20 is not clamped to the model's positions)
  const Json config{{"model_type", "qwen2"}, {"hidden_size", 1 << 20}, {"num_hidden_layers", 4096}, {"num_attention_heads", 4096},
                    {"num_key_value_heads", 4096}, {"head_dim", 256}, {"intermediate_size", 1 << 22}, {"vocab_size", 1 << 24},
                    {"tie_word_embeddings", false}, {"max_position_embeddings", 1 << 20}};
  const ModuleTree t = ModuleTree::from_config(parse_model_config(config, "test config"));
  PlanRequest r;
  r.budgets = parse_max_memory("0=4194304TiB,1=4194304TiB,cpu=4194304TiB");
  for (const Strategy s : {Strategy::kStages, Strategy::kBalanced, Strategy::kSequential}) {
    r.strategy = s;
    // The KV cache of 2^20 tokens x 4096 sequences: 2^66 bytes. Summed per layer it wrapped
    // (UBSan: signed overflow in fill_report); now refused before planning.
    r.runtime.context = 1 << 20;
    r.runtime.batch = 4096;
    try {
      (void)plan_model(t, r);
      FAIL() << "planned 2^66 bytes of KV cache";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("the KV cache (--context 1048576 x --max-sequences 4096) overflows"), std::string::npos) << e.what();
    }
    r.runtime.batch = 64;  // 2^60 bytes of KV cache: fits 64 bits, but not with the weights under 1 EiB
    try {
      (void)plan_model(t, r);
      FAIL() << "planned more than 1 EiB";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("more than the 1 EiB plexus plans for"), std::string::npos) << e.what();
    }
    r.runtime.context = 1024;
    r.runtime.batch = 1;
    const Plan p = plan_model(t, r);
    EXPECT_GT(p.model_bytes, std::int64_t{1} << 50);
  }
  const ModelEstimate e = estimate_model(testing::tree_of("qwen2", 1 << 20, 4096, 4096, 4096, 256, 1 << 22, 1 << 24, false));
  EXPECT_GT(e.num_params, std::int64_t{1} << 55);
}

}  // namespace plexus
