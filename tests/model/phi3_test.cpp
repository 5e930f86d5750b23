// Phi-3 (Phi3ForCausalLM): the engine against the independent float64 Phi-3 reference
// (reference_phi3.h) on tiny random checkpoints — fused qkv_proj and gate_up_proj, partial rotary,
// LongRoPE on each side of original_max_position_embeddings (and crossing it between prefill
// chunks), sliding window, tied embeddings; the fused weights viewed in place; bad configs exit 2
// naming field and value; the make-model presets.
#include <gtest/gtest.h>

#include <cmath>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/llama_family.h"
#include "model/make_model.h"
#include "model/module_tree.h"
#include "reference_phi3.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;
using testing::some_ids;
using testing::TempDir;

constexpr std::int64_t kVocab = 3000;

// A tiny Phi-3 (make-model --arch phi3: head_dim 16, partial_rotary_factor 0.75 so 12 rotated
// dims, LongRoPE from 16 to 128 positions), written by the real binary.
std::string make_phi3(const TempDir& dir, const std::string& dtype) {
  const std::string m = dir / "phi3";
  const testing::ProcessResult r = run_plexus("make-model " + shell_quote(m) + " --arch phi3 --dtype " + dtype +
                                              " --seed 11 --std 0.08 --vocab " + std::to_string(kVocab));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return m;
}

// n + 1 factors 1.0 .. `top`, a rope_scaling of type `type`.
Json longrope(const std::string& type, int n, double long_top) {
  Json s = Json::array(), l = Json::array();
  for (int i = 0; i < n; ++i) {
    s.push_back(1.0 + 0.3 * i / (n - 1));
    l.push_back(1.0 + (long_top - 1.0) * i * i / ((n - 1) * (n - 1)));
  }
  return {{"type", type}, {"short_factor", s}, {"long_factor", l}};
}

struct Case {
  const char* name;
  const char* dtype;
  Json patch;             // config.json fields to change
  int tokens = 24;        // 24: past original_max_position_embeddings (16); 12: within it
  int chunk = 0;          // the engine's max_batch_tokens (and the reference's calls); 0: one call
  double tolerance = 1e-4;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Phi3VsReference : public ::testing::TestWithParam<Case> {};

TEST_P(Phi3VsReference, PerTokenNll) {
  const Case& c = GetParam();
  TempDir dir(c.name);
  const std::string m = make_phi3(dir, c.dtype);
  if (!c.patch.is_null()) testing::patch_config(m, c.patch);
  const std::vector<std::int32_t> ids = some_ids(c.tokens, kVocab, 3);
  std::vector<double> ref_last;
  const std::vector<double> want = testing::reference_phi3_nll(m, ids, c.chunk, &ref_last);

  EngineOptions eo;
  eo.max_batch_tokens = c.chunk > 0 ? c.chunk : 64;
  Engine engine(m, eo);
  const PerplexityResult got = perplexity(engine, ids);
  ASSERT_EQ(got.nll.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.nll[i], want[i], c.tolerance) << c.name << " token " << i;
  if (c.chunk > 0) return;  // prefill in one call below: the reference's single call

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
    Phi3, Phi3VsReference,
    ::testing::Values(
        // Partial rotary 0.75, LongRoPE: 24 tokens pass the original 16 (long factors), 12 do not.
        Case{"longrope_long_f32", "f32", nullptr},
        Case{"longrope_short_f32", "f32", nullptr, 12},
        // Prefill in calls of 8: the first two within 16 positions (short), the third past them (long).
        Case{"longrope_chunks_cross_f32", "f32", nullptr, 24, 8},
        Case{"window_tied_f32", "f32", Json{{"sliding_window", 5}, {"tie_word_embeddings", true}}},
        // Phi-3.5-mini's kind: whole heads rotate (8 factors), "su" (the first Phi-3 configs'
        // name), a given attention factor.
        Case{"su_whole_heads_f32", "f32",
             Json{{"partial_rotary_factor", 1.0}, {"rope_scaling", [] {
                    Json r = longrope("su", 8, 30.0);
                    r["attention_factor"] = 1.3;
                    return r;
                  }()}}},
        // Phi-3-mini-4k's kind: no rope scaling, a window.
        Case{"plain_rope_window_f32", "f32",
             Json{{"partial_rotary_factor", nullptr}, {"rope_scaling", nullptr}, {"sliding_window", 7},
                  {"original_max_position_embeddings", nullptr}}},
        Case{"longrope_long_bf16", "bf16", nullptr, 24, 0, 2e-2}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// The fused tensors are viewed in place: q, k, v are row ranges of qkv_proj and gate, up of
// gate_up_proj, at the checkpoint's own bytes.
TEST(Phi3, FusedWeightsAreViewsOfTheCheckpoint) {
  TempDir dir("views");
  const std::string m = make_phi3(dir, "bf16");
  const ModelConfig c = load_model_config(m);
  ASSERT_EQ(c.arch, Arch::kPhi3);
  const Checkpoint ck(m);
  const LlamaFamilyModel model(c, ck);
  const std::int64_t Q = c.q_dim(), KV = c.kv_dim(), I = c.intermediate_size, row = c.hidden_size * 2;
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = ModuleTree::layer_prefix(l);
    const auto* qkv = static_cast<const std::uint8_t*>(ck.get(p + ".self_attn.qkv_proj.weight").data);
    const auto* gate_up = static_cast<const std::uint8_t*>(ck.get(p + ".mlp.gate_up_proj.weight").data);
    const LayerWeights& w = model.layer_weights(l);
    EXPECT_EQ(w.q.data, qkv);
    EXPECT_EQ(w.k.data, qkv + Q * row);
    EXPECT_EQ(w.v.data, qkv + (Q + KV) * row);
    EXPECT_EQ(w.gate.data, gate_up);
    EXPECT_EQ(w.up.data, gate_up + I * row);
    EXPECT_EQ(w.q.rows, Q);
    EXPECT_EQ(w.v.rows, KV);
    EXPECT_EQ(w.up.rows, I);
  }
  // Stored bytes counted once: the views add up to the fused tensors.
  std::int64_t stored = 0;
  const ModuleTree tree = ModuleTree::from_checkpoint(c, ck);
  for (const ParamInfo& p : tree.params()) {
    if (p.shape.size() == 2 && !p.tied_to) stored += p.numel() * 2;
  }
  EXPECT_EQ(model.weight_bytes(), stored);
}

// LongRoPE's tables: the short factors while the batch stays within original_max_position
// (largest position + 1 <= 16), the long ones past it; partial rotary leaves the unrotated
// half-dims at frequency 0.
TEST(Phi3, LongRopeTableByLargestPosition) {
  TempDir dir("tables");
  const std::string m = make_phi3(dir, "f32");
  const ModelConfig c = load_model_config(m);
  ASSERT_EQ(c.rope_scaling, RopeScaling::kLongRope);
  ASSERT_EQ(c.rope_original_max_position, 16);
  ASSERT_EQ(c.rotary_dim(), 12);
  const Checkpoint ck(m);
  const LlamaFamilyModel model(c, ck);
  const std::vector<double> short_f = rope_inv_freq(c), long_f = rope_inv_freq(c, true);
  ASSERT_EQ(short_f.size(), 8u);
  for (std::size_t i = 0; i < 6; ++i) {
    const double base = 1.0 / std::pow(c.rope_theta, 2.0 * static_cast<double>(i) / 12.0);
    EXPECT_DOUBLE_EQ(short_f[i], base / c.rope_short_factor[i]);
    EXPECT_DOUBLE_EQ(long_f[i], base / c.rope_long_factor[i]);
  }
  EXPECT_EQ(short_f[6], 0.0);
  EXPECT_EQ(short_f[7], 0.0);
  const std::vector<std::int32_t> within = {0, 5, 15}, past = {3, 16}, late_decode = {40};
  EXPECT_EQ(model.inv_freq(within).data(), model.inv_freq().data());
  EXPECT_NE(model.inv_freq(past).data(), model.inv_freq().data());
  EXPECT_EQ(model.inv_freq(past)[1], long_f[1]);
  EXPECT_EQ(model.inv_freq(late_decode)[1], long_f[1]);
  // attention factor sqrt(1 + ln(128/16) / ln 16), on the rotated dims only (partial rotary).
  EXPECT_NEAR(c.rope_attention_factor, std::sqrt(1 + std::log(8.0) / std::log(16.0)), 1e-12);
  EXPECT_EQ(model.attention_shape().rotary_dim, 12);
  EXPECT_FLOAT_EQ(model.attention_shape().rope_scale, static_cast<float>(c.rope_attention_factor));
}

std::vector<double> cli_nll(const std::string& model, const std::vector<std::int32_t>& ids, const std::string& flags) {
  const testing::ProcessResult r = run_plexus("perplexity " + shell_quote(model) + " --ids " + testing::ids_csv(ids) + " --json " + flags);
  EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.err;
  return r.exit_code == 0 ? parse_json(r.out, "perplexity --json").at("nll").get<std::vector<double>>() : std::vector<double>{};
}

// Two and three pipeline stages (the batch in micro-batches) give one device's NLL, bit for bit:
// every micro-batch of a call past original_max_position rotates with the long factors.
TEST(Phi3, PipelineStagesGiveOneDevicesNll) {
  TempDir dir("stages");
  const std::string m = make_phi3(dir, "bf16");
  const std::vector<std::int32_t> ids = some_ids(24, kVocab, 5);
  const std::vector<double> one = cli_nll(m, ids, "");
  ASSERT_EQ(one.size(), 23u);
  EXPECT_EQ(cli_nll(m, ids, "--pp 2"), one);
  EXPECT_EQ(cli_nll(m, ids, "--pp 3"), one);
}

// Tensor parallelism splits the fused weights per rank (q, k, v and gate, up row ranges of each
// rank's heads and MLP columns, views still): one device's NLL up to the partial sums' order.
TEST(Phi3, TensorParallelGivesOneDevicesNll) {
  TempDir dir("tp");
  const std::string m = make_phi3(dir, "f32");
  const std::vector<std::int32_t> ids = some_ids(24, kVocab, 6);
  const std::vector<double> one = cli_nll(m, ids, "");
  ASSERT_EQ(one.size(), 23u);
  for (const char* tp : {"--tp 2", "--tp 4"}) {  // 4: one query head a rank, the 2 kv heads replicated
    const std::vector<double> split = cli_nll(m, ids, tp);
    ASSERT_EQ(split.size(), one.size()) << tp;
    for (std::size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(split[i], one[i], 1e-5) << tp << " token " << i;
  }
}

void expect_bad_input(const std::string& args, const std::string& mention) {
  const testing::ProcessResult r = run_plexus(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(mention), std::string::npos) << args << "\nwanted: " << mention << "\ngot: " << r.err;
}

// A Phi-3 config with something plexus does not implement, or inconsistent, exits 2 naming the
// field and the value; never a silently different model.
TEST(Phi3, BadConfigsExitTwoNamingFieldAndValue) {
  TempDir dir("bad");
  const std::string m = make_phi3(dir, "f32");
  const std::string q = shell_quote(m);
  const Json good = longrope("longrope", 6, 20.0);
  Json bad_entry = good;
  bad_entry["long_factor"][2] = -1.0;
  Json short_list = good;
  short_list["short_factor"].erase(5);
  Json no_long = good;
  no_long.erase("long_factor");
  const std::vector<std::pair<Json, std::string>> cases = {
      {{{"rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}}}, "rope_scaling: type 'dynamic' is not supported"},
      {{{"rope_scaling", short_list}}, "rope_scaling.short_factor has 5 entries; it must have 6"},
      {{{"rope_scaling", bad_entry}}, "rope_scaling.long_factor[2] is -1.0"},
      {{{"rope_scaling", no_long}}, "rope_scaling.long_factor is missing"},
      {{{"partial_rotary_factor", 0.1875}}, "partial_rotary_factor 0.1875 rotates 3 of head_dim 16"},
      {{{"partial_rotary_factor", 1.5}}, "partial_rotary_factor is 1.5"},
      {{{"original_max_position_embeddings", 0}}, "original_max_position_embeddings is 0"},
  };
  for (const auto& [fields, mention] : cases) {
    testing::patch_config(m, fields);
    expect_bad_input("perplexity " + q + " --ids 1,2,3", mention);
    testing::patch_config(m, Json{{"rope_scaling", good}, {"partial_rotary_factor", 0.75}, {"original_max_position_embeddings", 16}});
  }
  EXPECT_EQ(run_plexus("perplexity " + q + " --ids 1,2,3").exit_code, 0);
  // LongRoPE is Phi-3's here: another family naming it is refused.
  const std::string llama = dir / "llama";
  ASSERT_EQ(run_plexus("make-model " + shell_quote(llama) + " --dtype f32").exit_code, 0);
  testing::patch_config(llama, Json{{"rope_scaling", longrope("longrope", 8, 4.0)}});
  expect_bad_input("perplexity " + shell_quote(llama) + " --ids 1,2,3", "rope_scaling: type 'longrope' is not supported");
}

// The phi-3.5-mini preset has Phi-3.5-mini-instruct's shape: 3.82B parameters, LongRoPE from
// 4096 to 131072 with 48 monotone factors each.
TEST(Phi3, Phi35MiniPresetShape) {
  TempDir dir("preset");
  const std::string m = dir / "phi35";
  const testing::ProcessResult r = run_plexus("make-model " + shell_quote(m) + " --preset phi-3.5-mini --config-only");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const ModelConfig c = load_model_config(m);
  EXPECT_EQ(c.arch, Arch::kPhi3);
  EXPECT_EQ(c.hidden_size, 3072);
  EXPECT_EQ(c.num_layers, 32);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 32);
  EXPECT_EQ(c.head_dim, 96);
  EXPECT_EQ(c.intermediate_size, 8192);
  EXPECT_EQ(c.vocab_size, 32064);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_EQ(c.rope_original_max_position, 4096);
  EXPECT_EQ(c.sliding_window, 262144);
  EXPECT_EQ(c.rotary_dim(), 96);
  ASSERT_EQ(c.rope_short_factor.size(), 48u);
  ASSERT_EQ(c.rope_long_factor.size(), 48u);
  for (std::size_t i = 1; i < 48; ++i) {
    EXPECT_GE(c.rope_short_factor[i], c.rope_short_factor[i - 1]);
    EXPECT_GE(c.rope_long_factor[i], c.rope_long_factor[i - 1]);
  }
  EXPECT_NEAR(c.rope_long_factor.back(), 60.0, 1e-9);
  EXPECT_NEAR(c.rope_attention_factor, std::sqrt(1 + std::log(32.0) / std::log(4096.0)), 1e-12);
  std::int64_t params = 0;
  const ModuleTree tree = ModuleTree::from_config(c);
  for (const ParamInfo& p : tree.params()) params += p.tied_to ? 0 : p.numel();
  EXPECT_EQ(params, 3821079552);  // Phi-3.5-mini-instruct: 3.82B
}

}  // namespace
}  // namespace plexus
