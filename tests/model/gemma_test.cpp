// Gemma 2 and Gemma 3 text models: the engine against the independent double-precision reference
// (reference_gemma.h) on tiny random checkpoints from make-model — soft-capping, sliding and
// global layers with a prompt longer than the window, q/k norms, tied embeddings, Gemma 3's two
// rope bases and linear scaling, a Gemma3ForConditionalGeneration layout — and config.json's
// Gemma fields, with the bad ones refused naming field and value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "core/mmap_file.h"
#include "exec/executor.h"
#include "exec/run_devices.h"
#include "model/config.h"
#include "model/make_model.h"
#include "model/module_tree.h"
#include "model/safetensors.h"
#include "reference_gemma.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::some_ids;
using testing::TempDir;

struct GemmaCase {
  const char* name;
  Arch arch;
  DType dtype;
  Json patch;  // config.json fields to change
  double tolerance;
};

void PrintTo(const GemmaCase& c, std::ostream* os) { *os << c.name; }

// Soft-caps small enough to act on the tiny models' scores and logits (the presets' 50 and 30
// barely bend values of order 1).
Json small_caps() { return Json{{"attn_logit_softcapping", 1.0}, {"final_logit_softcapping", 1.5}}; }

void make_gemma(const std::string& dir, Arch arch, DType dtype, const Json& patch) {
  MakeModelOptions o;
  o.arch = arch;
  o.dtype = dtype;
  o.std = 0.1;  // activations of order 1: the soft-caps and norms matter
  write_random_model(dir, o);
  if (!patch.is_null()) testing::patch_config(dir, patch);
}

// The engine's per-token NLL of ids, and its greedy next token.
std::vector<double> engine_nll(const std::string& dir, const std::vector<std::int32_t>& ids, std::int32_t* next = nullptr) {
  EngineOptions eo;
  eo.max_batch_tokens = 64;
  Engine engine(dir, eo);
  const PerplexityResult r = perplexity(engine, ids);
  if (next != nullptr) {
    GenerateOptions g;
    g.max_tokens = 1;
    *next = generate(engine, ids, g).ids[0];
  }
  return r.nll;
}

class GemmaVsReference : public ::testing::TestWithParam<GemmaCase> {};

TEST_P(GemmaVsReference, PerTokenNll) {
  const GemmaCase& c = GetParam();
  TempDir dir(c.name);
  make_gemma(dir.path(), c.arch, c.dtype, c.patch);
  const std::vector<std::int32_t> ids = some_ids(24, 3000, 7);  // 24 tokens: past the window of 8
  std::vector<double> last;
  const std::vector<double> want = testing::reference_gemma_nll(dir.path(), ids, &last);
  std::int32_t next = -1;
  const std::vector<double> got = engine_nll(dir.path(), ids, &next);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], c.tolerance) << c.name << " token " << i;
    worst = std::max(worst, std::abs(got[i] - want[i]));
  }
  std::printf("%s: max |nll - reference| %.2e (tolerance %.0e)\n", c.name, worst, c.tolerance);
  std::size_t best = 0;
  for (std::size_t i = 1; i < last.size(); ++i)
    if (last[i] > last[best]) best = i;
  EXPECT_EQ(next, static_cast<std::int32_t>(best));
}

INSTANTIATE_TEST_SUITE_P(
    Gemma, GemmaVsReference,
    ::testing::Values(GemmaCase{"gemma2_f32", Arch::kGemma2, DType::kF32, small_caps(), 1e-4},
                      GemmaCase{"gemma2_preset_caps_f32", Arch::kGemma2, DType::kF32, nullptr, 1e-4},
                      GemmaCase{"gemma3_f32", Arch::kGemma3, DType::kF32, nullptr, 1e-4},
                      GemmaCase{"gemma3_caps_f32", Arch::kGemma3, DType::kF32, small_caps(), 1e-4},
                      GemmaCase{"gemma3_pattern_f32", Arch::kGemma3, DType::kF32,
                                Json{{"layer_types", nullptr}, {"sliding_window_pattern", 2}, {"rope_scaling", nullptr}}, 1e-4},
                      GemmaCase{"gemma2_bf16", Arch::kGemma2, DType::kBF16, small_caps(), 2e-2},
                      GemmaCase{"gemma3_bf16", Arch::kGemma3, DType::kBF16, nullptr, 2e-2}),
    [](const ::testing::TestParamInfo<GemmaCase>& i) { return std::string(i.param.name); });

// The test's knobs reach the result: the reference's NLL moves by far more than the tolerance
// when the soft-caps, the window or Gemma 3's local rope base change (a test of them can fail).
TEST(GemmaReference, CapsWindowAndLocalBaseMatter) {
  const std::vector<std::int32_t> ids = some_ids(24, 3000, 7);
  auto max_diff = [&](Arch arch, const Json& a, const Json& b) {
    TempDir da("gemma_a"), db("gemma_b");
    make_gemma(da.path(), arch, DType::kF32, a);
    make_gemma(db.path(), arch, DType::kF32, b);
    const std::vector<double> x = testing::reference_gemma_nll(da.path(), ids), y = testing::reference_gemma_nll(db.path(), ids);
    double d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
    return d;
  };
  EXPECT_GT(max_diff(Arch::kGemma2, small_caps(), Json{{"attn_logit_softcapping", nullptr}, {"final_logit_softcapping", 1.5}}), 1e-2);
  EXPECT_GT(max_diff(Arch::kGemma2, small_caps(), Json{{"attn_logit_softcapping", 1.0}, {"final_logit_softcapping", nullptr}}), 1e-2);
  EXPECT_GT(max_diff(Arch::kGemma3, nullptr, Json{{"sliding_window", 64}}), 1e-3);
  EXPECT_GT(max_diff(Arch::kGemma3, nullptr, Json{{"rope_local_base_freq", 1000000.0}}), 1e-3);
}

// Layers over two virtual devices, the host and the disk, the tied head on another device than the
// embedding: the one-device NLL bit for bit. --tp 2 (heads split, o/down summed): within 1e-5.
TEST(Gemma, MultiDeviceOffloadAndTensorParallelGiveOneDevicesNll) {
  for (const Arch arch : {Arch::kGemma2, Arch::kGemma3}) {
    TempDir dir("gemma_multi");
    make_gemma(dir.path(), arch, DType::kBF16, arch == Arch::kGemma2 ? small_caps() : Json(nullptr));
    const std::vector<std::int32_t> ids = some_ids(24, 3000, 5);
    EngineOptions eo;
    eo.max_batch_tokens = 16;
    eo.threads = 2;
    Engine engine(dir.path(), eo);
    const std::vector<double> want = perplexity(engine, ids).nll;
    Budgets b;
    for (int i = 0; i < 2; ++i) b.set(DeviceId::accelerator(i), std::uint64_t{256} << 20);
    DeviceRegistry devices = make_run_devices(b, 2, std::uint64_t{256} << 20);
    ExecutorOptions o;
    o.max_batch_tokens = 16;
    o.max_context = 128;
    const DeviceMap map = DeviceMap::from_json(
        Json{{"model.embed_tokens", 0}, {"model.layers.0", 0}, {"model.layers.1", "cpu"}, {"model.layers.2", "disk"},
             {"model.layers.3", 1}, {"model.norm", 1}, {"lm_head", 1}},
        "test map");
    Executor x(dir.path(), map, devices, o);
    const std::vector<double> got = perplexity(x, ids).nll;
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << arch_name(arch) << " token " << i;

    const testing::ProcessResult r =
        testing::run_plexus("perplexity " + testing::shell_quote(dir.path()) + " --tp 2 --json --ids " + testing::ids_csv(ids));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json j = parse_json(r.out, "perplexity --json");
    ASSERT_EQ(j["nll"].size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(j["nll"][i].get<double>(), want[i], 1e-5) << "--tp 2 token " << i;
  }
}

// Writes `tensors` (name → (info, bytes)) as a safetensors file.
void write_safetensors_file(const std::string& path, const std::vector<std::pair<std::string, std::pair<TensorInfo, std::string>>>& tensors) {
  Json header = Json::object();
  std::string data;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", t.first.dtype_name}, {"shape", t.first.shape}, {"data_offsets", {data.size(), data.size() + t.second.size()}}};
    data += t.second;
  }
  const std::string h = header.dump();
  const std::uint64_t n = h.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << h << data;
}

// A Gemma3ForConditionalGeneration checkpoint (its language model's tensors nested, a vision
// tower beside them) runs its language model: the same NLL as the causal LM it was made from.
// Both of Hugging Face's layouts: language_model.model.* (transformers < 4.52) and
// model.language_model.* (since), the vision tower beside it.
class GemmaConditional : public ::testing::TestWithParam<bool> {};

TEST_P(GemmaConditional, RunsItsLanguageModel) {
  const bool newer = GetParam();
  TempDir causal("gemma3_causal"), vlm("gemma3_vlm");
  make_gemma(causal.path(), Arch::kGemma3, DType::kF32, nullptr);
  std::vector<std::pair<std::string, std::pair<TensorInfo, std::string>>> tensors;
  {
    const SafetensorsFile f(causal / "model.safetensors");
    for (const TensorInfo& t : f.tensors()) {
      const auto* p = static_cast<const char*>(f.data(t));
      const std::string name = newer ? "model.language_model." + t.name.substr(std::string("model.").size()) : "language_model." + t.name;
      tensors.push_back({name, {t, std::string(p, p + (t.end - t.begin))}});
    }
    TensorInfo v = f.tensors().front();
    v.shape = {4, 4};
    tensors.push_back({std::string(newer ? "model." : "") + "vision_tower.vision_model.embeddings.patch_embedding.weight",
                       {v, std::string(64, '\0')}});
  }
  write_safetensors_file(vlm / "model.safetensors", tensors);
  const Json text = parse_json(read_text_file(causal / "config.json"), "config");
  const Json outer = {{"architectures", {"Gemma3ForConditionalGeneration"}}, {"model_type", "gemma3"}, {"text_config", text},
                      {"vision_config", {{"model_type", "siglip_vision_model"}}}};
  std::ofstream(vlm / "config.json") << outer.dump(2);

  const std::vector<std::int32_t> ids = some_ids(20, 3000, 9);
  const std::vector<double> want = testing::reference_gemma_nll(vlm.path(), ids);
  const std::vector<double> got = engine_nll(vlm.path(), ids), direct = engine_nll(causal.path(), ids);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4) << "token " << i;
    EXPECT_EQ(got[i], direct[i]) << "token " << i;
  }
  const testing::ProcessResult r = testing::run_plexus("perplexity " + testing::shell_quote(vlm.path()) + " --ids " + testing::ids_csv(ids));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("vision tensor(s) skipped"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Layouts, GemmaConditional, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return std::string(i.param ? "model_language_model" : "language_model_model"); });

// Gemma 3 1B's config.json as Google publishes it (defaults left out): every field read.
TEST(GemmaConfig, Gemma3TextDefaultsAndPattern) {
  const Json j = {{"architectures", {"Gemma3ForCausalLM"}}, {"model_type", "gemma3_text"}, {"hidden_size", 1152},
                  {"intermediate_size", 6912}, {"num_hidden_layers", 26}, {"num_attention_heads", 4},
                  {"num_key_value_heads", 1}, {"head_dim", 256}, {"sliding_window", 512}, {"sliding_window_pattern", 6},
                  {"rope_theta", 1000000.0}, {"rope_local_base_freq", 10000.0}, {"query_pre_attn_scalar", 256},
                  {"vocab_size", 262144}, {"rope_scaling", nullptr}, {"final_logit_softcapping", nullptr},
                  {"attn_logit_softcapping", nullptr}, {"hidden_activation", "gelu_pytorch_tanh"}, {"torch_dtype", "bfloat16"}};
  const ModelConfig c = parse_model_config(j, "config.json");
  EXPECT_EQ(c.arch, Arch::kGemma3);
  EXPECT_TRUE(c.gemma && c.qk_norm && c.tie_word_embeddings);
  EXPECT_EQ(c.query_pre_attn_scalar, 256);
  EXPECT_EQ(c.attn_logit_softcap, 0);
  EXPECT_EQ(c.rope_local_theta, 10000.0);
  for (int l = 0; l < 26; ++l) {
    EXPECT_EQ(c.layer_window(l), (l + 1) % 6 == 0 ? 0 : 512) << l;
    EXPECT_EQ(c.local_rope_layer(l), (l + 1) % 6 != 0) << l;
  }
  EXPECT_EQ(c.layer_shape().rope_tables, 2);
}

TEST(GemmaConfig, Gemma2DefaultsAndConditionalTextConfig) {
  const ModelConfig g2 = parse_model_config(Json{{"model_type", "gemma2"}}, "config.json");  // every field Gemma2Config's default
  EXPECT_EQ(g2.arch, Arch::kGemma2);
  EXPECT_EQ(g2.hidden_size, 2304);
  EXPECT_EQ(g2.attn_logit_softcap, 50.0);
  EXPECT_EQ(g2.final_logit_softcap, 30.0);
  EXPECT_EQ(g2.layer_window(0), 4096);
  EXPECT_EQ(g2.layer_window(1), 0);
  EXPECT_EQ(g2.rope_local_theta, 0);
  // gemma-3-4b's shape: text_config leaves the heads and vocabulary to Gemma3TextConfig.
  const Json vlm = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                    {"text_config", {{"hidden_size", 2560}, {"intermediate_size", 10240}, {"num_hidden_layers", 34},
                                     {"model_type", "gemma3_text"}, {"sliding_window", 1024},
                                     {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}}}},
                    {"torch_dtype", "bfloat16"}, {"eos_token_id", {1, 106}}};
  const ModelConfig g3 = parse_model_config(vlm, "config.json");
  EXPECT_EQ(g3.arch, Arch::kGemma3);
  EXPECT_EQ(g3.num_heads, 8);
  EXPECT_EQ(g3.num_kv_heads, 4);
  EXPECT_EQ(g3.vocab_size, 262208);
  EXPECT_EQ(g3.rope_scaling, RopeScaling::kLinear);
  EXPECT_EQ(g3.rope_factor, 8.0);
  EXPECT_EQ(g3.torch_dtype, DType::kBF16);
  EXPECT_EQ(g3.eos_token_ids, (std::vector<std::int64_t>{1, 106}));
}

// What plexus does not implement is refused, naming the field and its value.
TEST(GemmaConfig, UnsupportedFieldsNamedWithTheirValue) {
  auto message = [](const Json& j) {
    try {
      parse_model_config(j, "config.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const Json llama = {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 64}, {"num_hidden_layers", 2},
                      {"num_attention_heads", 4}, {"intermediate_size", 128}, {"vocab_size", 100}};
  Json j = llama;
  j["attn_logit_softcapping"] = 50.0;
  EXPECT_NE(message(j).find("attn_logit_softcapping is 50.0"), std::string::npos) << message(j);
  j = llama;
  j["final_logit_softcapping"] = 30;
  EXPECT_NE(message(j).find("final_logit_softcapping is 30"), std::string::npos) << message(j);
  j = Json{{"model_type", "gemma3_text"}, {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}};
  EXPECT_NE(message(j).find("rope_scaling"), std::string::npos) << message(j);
  j = Json{{"model_type", "gemma3_text"}, {"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 4.0}}}};
  EXPECT_NE(message(j).find("type 'dynamic'"), std::string::npos) << message(j);
  j = Json{{"model_type", "gemma2"}, {"hidden_activation", "gelu"}};
  EXPECT_NE(message(j).find("hidden_activation 'gelu'"), std::string::npos) << message(j);
  j = Json{{"model_type", "gemma2"}, {"attn_logit_softcapping", -1}};
  EXPECT_NE(message(j).find("attn_logit_softcapping is -1"), std::string::npos) << message(j);
  j = Json{{"model_type", "gemma3_text"}, {"sliding_window_pattern", 0}};
  EXPECT_NE(message(j).find("sliding_window_pattern is 0"), std::string::npos) << message(j);
  j = Json{{"model_type", "gemma3_text"}, {"layer_types", {"sliding_attention"}}};
  EXPECT_NE(message(j).find("layer_types"), std::string::npos) << message(j);
  j = Json{{"architectures", {"Gemma3ForConditionalGeneration"}}};
  EXPECT_NE(message(j).find("text_config"), std::string::npos) << message(j);
}

// The CLI: exit 2 and the field named, nothing run.
TEST(GemmaConfig, CliExitsTwoOnAnUnsupportedField) {
  TempDir dir("gemma_bad");
  make_gemma(dir.path(), Arch::kGemma2, DType::kF32, Json{{"hidden_activation", "relu"}});
  const testing::ProcessResult r = testing::run_plexus("perplexity " + testing::shell_quote(dir.path()) + " --ids 1,2,3");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("hidden_activation 'relu'"), std::string::npos) << r.err;
  TempDir llama("llama_capped");
  MakeModelOptions o;
  o.dtype = DType::kF32;
  write_random_model(llama.path(), o);
  testing::patch_config(llama.path(), Json{{"final_logit_softcapping", 30.0}});
  const testing::ProcessResult l = testing::run_plexus("perplexity " + testing::shell_quote(llama.path()) + " --ids 1,2,3");
  EXPECT_EQ(l.exit_code, 2) << l.err;
  EXPECT_NE(l.err.find("final_logit_softcapping is 30.0"), std::string::npos) << l.err;
}

// make-model's real shapes as Google's config.json files describe them, read back through the
// config parser; their parameter counts are those Hugging Face reports for the checkpoints.
TEST(GemmaPresets, RealShapesAsPublished) {
  struct Want {
    const char* preset;
    Arch arch;
    std::int64_t hidden, heads, kv_heads, intermediate, vocab, window, params;
  };
  for (const Want& w : {Want{"gemma-2-2b", Arch::kGemma2, 2304, 8, 4, 9216, 256000, 4096, 2614341888},
                        Want{"gemma-3-1b", Arch::kGemma3, 1152, 4, 1, 6912, 262144, 512, 999885952}}) {
    TempDir dir(w.preset);
    MakeModelOptions o;
    o.preset = w.preset;
    o.arch = w.arch;
    o.config_only = true;
    EXPECT_EQ(write_random_model(dir.path(), o), w.params) << w.preset;
    const ModelConfig c = load_model_config(dir.path());
    EXPECT_EQ(c.arch, w.arch);
    EXPECT_EQ(c.num_layers, 26);
    EXPECT_EQ(c.head_dim, 256);
    EXPECT_EQ(c.hidden_size, w.hidden);
    EXPECT_EQ(c.num_heads, w.heads);
    EXPECT_EQ(c.num_kv_heads, w.kv_heads);
    EXPECT_EQ(c.intermediate_size, w.intermediate);
    EXPECT_EQ(c.vocab_size, w.vocab);
    EXPECT_EQ(c.sliding_window, w.window);
    EXPECT_EQ(c.query_pre_attn_scalar, 256);
    EXPECT_TRUE(c.tie_word_embeddings);
    EXPECT_EQ(c.layer_window(5), 0);  // layer 5: odd (Gemma 2), the 6th (Gemma 3): global
    EXPECT_EQ(c.layer_window(4), w.window);
    EXPECT_EQ(c.attn_logit_softcap, w.arch == Arch::kGemma2 ? 50.0 : 0.0);
    EXPECT_EQ(c.final_logit_softcap, w.arch == Arch::kGemma2 ? 30.0 : 0.0);
    EXPECT_EQ(c.rope_local_theta, w.arch == Arch::kGemma3 ? 10000.0 : 0.0);
    std::int64_t n = 0;
    const ModuleTree tree = ModuleTree::from_config(c);
    for (const ParamInfo& p : tree.params())
      if (!p.tied_to) n += p.numel();
    EXPECT_EQ(n, w.params) << w.preset;
  }
}

}  // namespace
}  // namespace plexus
