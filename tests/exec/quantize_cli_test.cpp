// Quantise on load (--quantize): Checkpoint::quantize against quantize_row, runs through the real
// binary close to the unquantised NLL, the same tokens on two virtual devices as on one, plans
// and estimates sized by block format, and the errors (bad value, columns off the block).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "core/error.h"
#include "core/json.h"
#include "core/thread_pool.h"
#include "kernels/quantize.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;
using testing::TempDir;

// A Llama checkpoint whose projections' columns are multiples of 256 (hidden 256, intermediate
// 512, 2 layers, vocab 512), f32 N(0, 0.05) weights, norms at 1; written in the test (the
// make-model presets' columns are not multiples of 256).
ModelConfig small_config() {
  ModelConfig c = preset_config("tiny", Arch::kLlama, 512);
  c.hidden_size = 256, c.num_layers = 2, c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 64;
  c.intermediate_size = 512;
  return c;
}

void write_small_model(const std::string& dir) {
  const ModelConfig c = small_config();
  struct T {
    std::string name;
    std::vector<std::int64_t> shape;
  };
  std::vector<T> ts{{"model.embed_tokens.weight", {c.vocab_size, c.hidden_size}},
                    {"model.norm.weight", {c.hidden_size}},
                    {"lm_head.weight", {c.vocab_size, c.hidden_size}}};
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l);
    const std::int64_t H = c.hidden_size, Q = c.num_heads * c.head_dim, KV = c.num_kv_heads * c.head_dim;
    const std::int64_t I = c.intermediate_size;
    ts.push_back({p + ".input_layernorm.weight", {H}});
    ts.push_back({p + ".post_attention_layernorm.weight", {H}});
    ts.push_back({p + ".self_attn.q_proj.weight", {Q, H}});
    ts.push_back({p + ".self_attn.k_proj.weight", {KV, H}});
    ts.push_back({p + ".self_attn.v_proj.weight", {KV, H}});
    ts.push_back({p + ".self_attn.o_proj.weight", {H, Q}});
    ts.push_back({p + ".mlp.gate_proj.weight", {I, H}});
    ts.push_back({p + ".mlp.up_proj.weight", {I, H}});
    ts.push_back({p + ".mlp.down_proj.weight", {H, I}});
  }
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  Json header = Json::object();
  std::vector<float> data;
  for (const T& t : ts) {
    std::int64_t n = 1;
    for (auto d : t.shape) n *= d;
    const auto begin = static_cast<std::int64_t>(data.size() * 4);
    for (std::int64_t i = 0; i < n; ++i) data.push_back(t.shape.size() == 1 ? 1.0f : normal(rng));
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {begin, begin + n * 4}}};
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h += ' ';
  std::ofstream f(dir + "/model.safetensors", std::ios::binary);
  const std::uint64_t len = h.size();
  f.write(reinterpret_cast<const char*>(&len), 8);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * 4));
  std::ofstream(dir + "/config.json") << config_to_json(c, DType::kF32).dump(2);
}

class QuantizeOnLoad : public ::testing::Test {
 protected:
  void SetUp() override { write_small_model(dir_.path()); }
  Json run_json(const std::string& args) {
    const testing::ProcessResult r = run_plexus(args + " --json");
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    return r.exit_code == 0 ? Json::parse(r.out) : Json();
  }
  std::string model() const { return shell_quote(dir_.path()); }
  TempDir dir_{"quantize_on_load"};
};

TEST_F(QuantizeOnLoad, CheckpointQuantizesTheProjectionsOnly) {
  Checkpoint ck(dir_.path());
  const std::string q = "model.layers.1.self_attn.q_proj.weight";
  const TensorRef before = ck.get(q);
  const std::vector<float> src(static_cast<const float*>(before.data),
                               static_cast<const float*>(before.data) + before.info->numel());
  ThreadPool pool(3);
  std::int64_t last_done = -1, total = 0;
  ck.quantize(DType::kQ4_K, pool, [&](std::int64_t done, std::int64_t t) {
    EXPECT_GE(done, last_done);
    last_done = done;
    total = t;
    return true;
  });
  EXPECT_TRUE(ck.quantized());
  // 2 layers × (256·256 + 2·128·256 + 256·256 + 3·512·256) projection weights.
  EXPECT_EQ(total, 2 * (2 * 256 * 256 + 2 * 128 * 256 + 3 * 512 * 256));
  EXPECT_EQ(last_done, total);
  const TensorRef after = ck.get(q);
  EXPECT_EQ(after.info->dtype, DType::kQ4_K);
  EXPECT_EQ(after.info->shape, (std::vector<std::int64_t>{256, 256}));
  std::vector<std::uint8_t> expect(static_cast<std::size_t>(dtype_row_bytes(DType::kQ4_K, 256 * 256)));
  for (int r = 0; r < 256; ++r) {
    quantize_row(DType::kQ4_K, src.data() + r * 256, expect.data() + r * 144, 256);
  }
  EXPECT_EQ(std::memcmp(after.data, expect.data(), expect.size()), 0);
  for (const char* kept : {"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight",
                           "model.layers.0.input_layernorm.weight"}) {
    EXPECT_EQ(ck.get(kept).info->dtype, DType::kF32) << kept;
  }
  // Quantising a quantised checkpoint again is refused (only f32/bf16/f16 sources).
  EXPECT_THROW(ck.quantize(DType::kQ8_0, pool), InputError);
}

TEST_F(QuantizeOnLoad, StopsWhenAsked) {
  Checkpoint ck(dir_.path());
  ThreadPool pool(2);
  EXPECT_THROW(ck.quantize(DType::kQ8_0, pool, [](std::int64_t done, std::int64_t) { return done == 0; }),
               Interrupted);
}

TEST_F(QuantizeOnLoad, PerplexityStaysCloseToTheUnquantisedModel) {
  std::string ids;
  for (int i = 0; i < 48; ++i) ids += (i ? "," : "") + std::to_string((i * 37 + 11) % 512);
  const std::string ppl = "perplexity " + model() + " --ids " + ids + " --batch-tokens 16 --threads 2";
  const double base = run_json(ppl)["nll"].get<double>();
  // Measured: |ΔNLL| q8_0 2e-5, q4_0 2e-3, q4_k 1e-3 on this model (mean NLL ≈ 6.2).
  struct Case {
    const char* type;
    double bound;
  };
  for (const Case c : {Case{"q8_0", 0.002}, Case{"q4_0", 0.02}, Case{"q4_k", 0.015}}) {
    const Json j = run_json(ppl + " --quantize " + c.type);
    ASSERT_TRUE(j.contains("nll")) << c.type;
    const double nll = j["nll"].get<double>();
    EXPECT_NE(nll, base) << c.type;  // the weights really changed
    EXPECT_NEAR(nll, base, c.bound) << c.type;
  }
}

TEST_F(QuantizeOnLoad, TwoVirtualDevicesGiveTheSameTokensAsOne) {
  const std::string gen = "generate " + model() + " --ids 3,14,15,92,65 --max-tokens 8 --threads 2 --quantize q8_0";
  const Json one = run_json(gen);
  const Json two = run_json(gen + " --virtual-devices 2");
  ASSERT_TRUE(one.contains("ids"));
  EXPECT_EQ(one["ids"], two["ids"]);
  ASSERT_TRUE(two.contains("execution"));
  EXPECT_GE(two["execution"]["stages"].get<int>(), 2);
  const Json ppl_one = run_json("perplexity " + model() + " --ids 3,14,15,92,65,35,89,79 --quantize q4_k");
  const Json ppl_two = run_json("perplexity " + model() + " --ids 3,14,15,92,65,35,89,79 --quantize q4_k --virtual-devices 2");
  EXPECT_EQ(ppl_one["nll"], ppl_two["nll"]);
}

// Projections in q4_0 (18 bytes per 32 weights), everything else f32 as stored: by hand.
TEST_F(QuantizeOnLoad, PlanAndEstimateSizeTheBlockFormatExactly) {
  const std::int64_t proj = 2 * (2 * 256 * 256 + 2 * 128 * 256 + 3 * 512 * 256);
  const std::int64_t other = (2 * 512 * 256 + 256 + 2 * 2 * 256) * 4;
  const Json plan = run_json("plan " + model() + " --quantize q4_0 --max-memory 0=1GiB --context 0");
  ASSERT_TRUE(plan.contains("model_bytes"));
  EXPECT_EQ(plan["model_bytes"].get<std::int64_t>(), proj / 32 * 18 + other);
  const Json q8 = run_json("plan " + model() + " --quantize q8_0 --max-memory 0=1GiB --context 0");
  EXPECT_EQ(q8["model_bytes"].get<std::int64_t>(), proj / 32 * 34 + other);

  const Json e = run_json("estimate " + model() + " --quantize q4_0");
  ASSERT_EQ(e["dtypes"].size(), 6u);
  EXPECT_EQ(e["dtypes"][5]["format"], "q4_0");
  EXPECT_EQ(e["dtypes"][5]["total_bytes"].get<std::int64_t>(), proj / 32 * 18 + other);
  // int8 = q8_0 and int4 = q4_k on the projections, the rest at 16 bits.
  EXPECT_EQ(e["dtypes"][3]["format"], "q8_0");
  EXPECT_EQ(e["dtypes"][3]["total_bytes"].get<std::int64_t>(), proj / 32 * 34 + other / 2);
  EXPECT_EQ(e["dtypes"][4]["format"], "q4_k");
  EXPECT_EQ(e["dtypes"][4]["total_bytes"].get<std::int64_t>(), proj / 256 * 144 + other / 2);
}

TEST_F(QuantizeOnLoad, BadValuesAreInputErrors) {
  for (const std::string& cmd : {"generate " + model() + " --ids 1,2 --max-tokens 1", "perplexity " + model() + " --ids 1,2,3",
                                 "plan " + model(), "estimate " + model()}) {
    const testing::ProcessResult r = run_plexus(cmd + " --quantize q5_1");
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("q8_0, q4_0 or q4_k"), std::string::npos) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("q5_1"), std::string::npos) << r.err;
  }
  // The tiny preset's down_proj has 176 columns: not a multiple of 32.
  TempDir tiny{"quantize_tiny"};
  MakeModelOptions o;
  o.vocab_size = 300;
  write_random_model(tiny.path(), o);
  for (const std::string& cmd : {"generate " + shell_quote(tiny.path()) + " --ids 1,2 --max-tokens 1",
                                 "plan " + shell_quote(tiny.path()) + " --max-memory 0=1GiB"}) {
    const testing::ProcessResult r = run_plexus(cmd + " --quantize q8_0");
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("mlp.down_proj.weight"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("block of 32"), std::string::npos) << r.err;
  }
  // --dtype int8 and --quantize together name two quantisations.
  const testing::ProcessResult both = run_plexus("plan " + model() + " --dtype int8 --quantize q8_0");
  EXPECT_EQ(both.exit_code, 2);
}

}  // namespace
}  // namespace plexus
