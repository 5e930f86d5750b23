// The engine against an independent double-precision forward pass, on checkpoints of every
// architecture written by make-model; and the bitwise promises (chunking, threads, shards,
// prefill vs decode).
#include <gtest/gtest.h>

#include <cmath>

#include "model/make_model.h"
#include "reference_forward.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "runtime/sampler.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::some_ids;
using testing::TempDir;

struct Case {
  const char* name;
  Arch arch;
  DType dtype;
  Json patch;  // config.json fields to change
  std::optional<MoeConfig> moe = std::nullopt;  // the mixture written, in place of the preset's
  bool mxfp4_experts = false;  // gpt-oss: experts as MXFP4 _blocks + _scales (OpenAI's layout)
  double nll_tolerance = 1e-4;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class EngineVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(EngineVsReference, NllWithin1e4) {
  const Case& c = GetParam();
  TempDir dir(c.name);
  MakeModelOptions o;
  o.arch = c.arch;
  o.dtype = c.dtype;
  o.seed = 7;
  o.std = 0.08;
  o.vocab_size = 3000;
  o.moe = c.moe;
  o.mxfp4_experts = c.mxfp4_experts;
  write_random_model(dir.path(), o);
  if (!c.patch.is_null()) testing::patch_config(dir.path(), c.patch);
  const std::vector<std::int32_t> ids = some_ids(24, 3000, static_cast<int>(c.arch));
  std::vector<double> ref_last;
  const std::vector<double> want = testing::reference_nll(dir.path(), ids, &ref_last);

  EngineOptions eo;
  eo.max_batch_tokens = 64;
  Engine engine(dir.path(), eo);
  const PerplexityResult got = perplexity(engine, ids);
  ASSERT_EQ(got.nll.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.nll[i], want[i], c.nll_tolerance) << c.name << " token " << i;

  // Greedy decode continues with the reference's argmax.
  GenerateOptions g;
  g.max_tokens = 1;
  const GenerateResult r = generate(engine, ids, g);
  std::size_t best = 0;
  for (std::size_t i = 1; i < ref_last.size(); ++i)
    if (ref_last[i] > ref_last[best]) best = i;
  EXPECT_EQ(r.ids[0], static_cast<std::int32_t>(best));
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, EngineVsReference,
    ::testing::Values(Case{"llama_f32", Arch::kLlama, DType::kF32, nullptr},
                      Case{"qwen2_f32", Arch::kQwen2, DType::kF32, nullptr},
                      Case{"qwen3_f32", Arch::kQwen3, DType::kF32, nullptr},
                      Case{"mistral_window_f32", Arch::kMistral, DType::kF32, Json{{"sliding_window", 5}}},
                      Case{"llama3_rope_f32", Arch::kLlama, DType::kF32,
                           Json{{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                                  {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}}},
                                {"rope_theta", 500000.0}}},
                      Case{"llama_no_head_dim_f32", Arch::kLlama, DType::kF32, Json{{"head_dim", nullptr}}},
                      Case{"llama_bf16", Arch::kLlama, DType::kBF16, nullptr},
                      Case{"qwen3_f16", Arch::kQwen3, DType::kF16, nullptr},
                      Case{"mixtral_f32", Arch::kMixtral, DType::kF32, nullptr},
                      Case{"mixtral_window_f32", Arch::kMixtral, DType::kF32, Json{{"sliding_window", 5}}},
                      Case{"mixtral_bf16", Arch::kMixtral, DType::kBF16, nullptr},
                      Case{"qwen3_moe_f32", Arch::kQwen3Moe, DType::kF32, nullptr},
                      Case{"qwen3_moe_top3_unnormalised_f32", Arch::kQwen3Moe, DType::kF32,
                           Json{{"norm_topk_prob", false}, {"num_experts_per_tok", 3}}},
                      Case{"qwen3_moe_sparse_step2_f32", Arch::kQwen3Moe, DType::kF32, nullptr, MoeConfig{6, 2, 40, true, 2, {}}},
                      // gpt-oss: window 8 on layers 0 and 2, sinks, YaRN 32 from 64 positions
                      // (truncate false), biased top-2-then-softmax router, clamped SwiGLU experts.
                      Case{"gpt_oss_f32", Arch::kGptOss, DType::kF32, nullptr},
                      Case{"gpt_oss_bf16", Arch::kGptOss, DType::kBF16, nullptr},
                      // Experts as OpenAI's checkpoints store them (MXFP4 blocks + scales), run as
                      // stored; the reference dequantises them itself. The engine multiplies
                      // block-format weights by 8-bit activations (kernels/cpu/quant_x.h), the
                      // reference by exact ones: 3-15e-3 apart per token at seed 7, so 0.05.
                      Case{"gpt_oss_mxfp4_experts_f32", Arch::kGptOss, DType::kF32, nullptr, std::nullopt, true, 0.05},
                      // The clamp bites (gate and up of about ±1 at this std), top-3, YaRN's range rounded.
                      Case{"gpt_oss_clamped_top3_truncate_f32", Arch::kGptOss, DType::kF32,
                           Json{{"swiglu_limit", 0.3}, {"num_experts_per_tok", 3},
                                {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 32.0}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
                                                  {"truncate", true}, {"original_max_position_embeddings", 64}}}}},
                      // HF's defaults: no layer_types (even layers sliding), no rope_scaling (YaRN 32 from 4096),
                      // eps 1e-5, theta 150000, 131072 positions.
                      Case{"gpt_oss_defaults_f32", Arch::kGptOss, DType::kF32,
                           Json{{"layer_types", nullptr}, {"rope_scaling", nullptr}, {"swiglu_limit", nullptr}, {"rms_norm_eps", nullptr},
                                {"rope_theta", nullptr}, {"max_position_embeddings", nullptr}}}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

std::vector<double> nll_with(const std::string& dir, const std::vector<std::int32_t>& ids, int threads, int batch_tokens) {
  EngineOptions eo;
  eo.threads = threads;
  eo.max_batch_tokens = batch_tokens;
  Engine engine(dir, eo);
  return perplexity(engine, ids).nll;
}

// Dense (Qwen2) and a mixture of experts (Qwen3-MoE: each expert's tokens grouped per chunk).
TEST(Engine, BitwiseAcrossChunkingThreadsAndShards) {
  for (const Arch arch : {Arch::kQwen2, Arch::kQwen3Moe}) {
    SCOPED_TRACE(arch_name(arch));
    TempDir single("single"), sharded("sharded");
    MakeModelOptions o;
    o.arch = arch;
    o.seed = 3;
    o.std = 0.08;
    o.vocab_size = 1000;
    write_random_model(single.path(), o);
    o.shards = 3;
    write_random_model(sharded.path(), o);
    const std::vector<std::int32_t> ids = some_ids(40, 1000, 1);
    const std::vector<double> base = nll_with(single.path(), ids, 1, 256);
    EXPECT_EQ(nll_with(single.path(), ids, 2, 256), base);
    EXPECT_EQ(nll_with(single.path(), ids, 3, 7), base);
    EXPECT_EQ(nll_with(single.path(), ids, 2, 1), base);
    EXPECT_EQ(nll_with(sharded.path(), ids, 2, 16), base);
  }
}

TEST(Engine, DecodeLogitsEqualPrefillLogits) {
  TempDir dir("decode");
  MakeModelOptions o;
  o.arch = Arch::kLlama;
  o.seed = 4;
  o.std = 0.08;
  o.vocab_size = 500;
  write_random_model(dir.path(), o);
  EngineOptions eo;
  eo.max_batch_tokens = 64;
  Engine engine(dir.path(), eo);
  const std::vector<std::int32_t> ids = some_ids(12, 500, 2);
  // All positions at once.
  KvCache a = engine.new_cache(12);
  std::vector<float> all(12 * 500);
  std::vector<std::int32_t> pos(12);
  std::vector<std::int64_t> rows(12);
  std::vector<KvCache*> caches(12, &a);
  for (int i = 0; i < 12; ++i) pos[i] = i, rows[i] = i;
  engine.forward(TokenBatch{ids, pos, caches}, rows, all.data());
  // One token at a time through the KV cache.
  KvCache b = engine.new_cache(12);
  std::vector<float> one(500);
  KvCache* bp = &b;
  const std::int64_t row0 = 0;
  for (int i = 0; i < 12; ++i) {
    engine.forward(TokenBatch{std::span(ids).subspan(i, 1), std::span(pos).subspan(i, 1), std::span(&bp, 1)},
                   std::span(&row0, 1), one.data());
    for (int v = 0; v < 500; ++v) ASSERT_EQ(one[v], all[i * 500 + v]) << "position " << i;
  }
}

TEST(Engine, SamplingIsSeededAndRespectsTopK) {
  std::vector<float> logits = {0.1f, 3.0f, 2.9f, -1.0f, 2.95f};
  SamplingOptions s;
  s.greedy = false;
  s.temperature = 5.0;
  s.top_k = 2;
  s.seed = 42;
  Sampler a(s, 5), b(s, 5);
  for (int i = 0; i < 200; ++i) {
    std::vector<float> l1 = logits, l2 = logits;
    const std::int32_t x = a.sample(l1.data());
    EXPECT_EQ(x, b.sample(l2.data()));
    EXPECT_TRUE(x == 1 || x == 4) << x;
  }
  s.top_k = 0;
  s.top_p = 0.01;  // only the most likely survives
  Sampler c(s, 5);
  std::vector<float> l3 = logits;
  EXPECT_EQ(c.sample(l3.data()), 1);
  SamplingOptions greedy;
  Sampler d(greedy, 5);
  std::vector<float> l4 = logits;
  EXPECT_EQ(d.sample(l4.data()), 1);
}

}  // namespace
}  // namespace plexus
