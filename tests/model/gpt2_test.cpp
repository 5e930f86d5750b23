// GPT-2 (GPT2LMHeadModel) end to end: make-model's checkpoints in Hugging Face's names and Conv1D
// layout, run by the engine, against the independent float64 forward (reference_gpt2.cpp); the
// layout variants real checkpoints have; GPT-2's two new operations against their oracles; and
// accelerate's device maps in Hugging Face's names; the config fields plexus refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "compute/cpu_ops.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json.h"
#include "core/mmap_file.h"
#include "kernels/ref/layernorm_gelu_ref.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/llama_family.h"
#include "model/make_model.h"
#include "model/safetensors.h"
#include "reference_gpt2.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::some_ids;
using testing::TempDir;

constexpr std::int64_t kVocab = 3000;

void make_gpt2(const std::string& dir, DType dtype) {
  MakeModelOptions o;
  o.arch = Arch::kGpt2;
  o.dtype = dtype;
  o.seed = 11;
  o.std = 0.08;
  o.vocab_size = kVocab;
  write_random_model(dir, o);
}

std::vector<double> engine_nll(const std::string& dir, const std::vector<std::int32_t>& ids) {
  EngineOptions eo;
  eo.max_batch_tokens = 64;
  Engine engine(dir, eo);
  return perplexity(engine, ids).nll;
}

struct Gpt2Case {
  const char* name;
  DType dtype;
  double tolerance;
};
void PrintTo(const Gpt2Case& c, std::ostream* os) { *os << c.name; }

class Gpt2VsReference : public ::testing::TestWithParam<Gpt2Case> {};

TEST_P(Gpt2VsReference, PerTokenNll) {
  const Gpt2Case& c = GetParam();
  TempDir dir(c.name);
  make_gpt2(dir.path(), c.dtype);
  const std::vector<std::int32_t> ids = some_ids(24, kVocab, 38);
  std::vector<double> ref_last;
  const std::vector<double> want = testing::reference_gpt2_nll(dir.path(), ids, &ref_last);
  const std::vector<double> got = engine_nll(dir.path(), ids);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], c.tolerance) << c.name << " token " << i;

  // Greedy decode continues with the reference's argmax.
  Engine engine(dir.path(), EngineOptions{});
  GenerateOptions g;
  g.max_tokens = 1;
  const GenerateResult r = generate(engine, ids, g);
  std::size_t best = 0;
  for (std::size_t i = 1; i < ref_last.size(); ++i)
    if (ref_last[i] > ref_last[best]) best = i;
  EXPECT_EQ(r.ids[0], static_cast<std::int32_t>(best));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Gpt2VsReference,
                         ::testing::Values(Gpt2Case{"gpt2_f32", DType::kF32, 1e-4}, Gpt2Case{"gpt2_bf16", DType::kBF16, 2e-2}),
                         [](const auto& info) { return std::string(info.param.name); });

// Rewrites DIR/model.safetensors as the original GPT-2 uploads are: names without
// "transformer.", each layer's causal-mask buffers attn.bias (1, 1, P, P) and attn.masked_bias ().
void rewrite_as_original_upload(const std::string& dir, std::int64_t layers) {
  const std::string path = dir + "/model.safetensors";
  std::vector<std::pair<std::string, std::pair<Json, std::string>>> tensors;  // name, (header entry, bytes)
  {
    const SafetensorsFile f(path);
    for (const TensorInfo& t : f.tensors()) {
      const std::string name = t.name.rfind("transformer.", 0) == 0 ? t.name.substr(12) : t.name;
      const auto* d = static_cast<const char*>(f.data(t));
      tensors.push_back({name, {Json{{"dtype", t.dtype_name}, {"shape", t.shape}}, std::string(d, t.end - t.begin)}});
    }
  }
  for (std::int64_t l = 0; l < layers; ++l) {
    const std::string p = "h." + std::to_string(l) + ".attn.";
    std::string mask;
    for (int i = 0; i < 16; ++i) {
      const float v = (i % 4) <= (i / 4) ? 1.0f : 0.0f;
      mask.append(reinterpret_cast<const char*>(&v), 4);
    }
    const float masked = -1e4f;
    tensors.push_back({p + "bias", {Json{{"dtype", "F32"}, {"shape", {1, 1, 4, 4}}}, mask}});
    tensors.push_back({p + "masked_bias", {Json{{"dtype", "F32"}, {"shape", Json::array()}},
                                           std::string(reinterpret_cast<const char*>(&masked), 4)}});
  }
  Json header = Json::object();
  std::uint64_t off = 0;
  std::string data;
  for (auto& [name, entry] : tensors) {
    Json e = entry.first;
    e["data_offsets"] = {off, off + entry.second.size()};
    header[name] = e;
    off += entry.second.size();
    data += entry.second;
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::uint64_t n = h.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << h << data;
}

TEST(Gpt2Layout, UnprefixedNamesAndMaskBuffersRunTheSame) {
  TempDir dir("gpt2_upload");
  make_gpt2(dir.path(), DType::kF32);
  const std::vector<std::int32_t> ids = some_ids(12, kVocab, 5);
  const std::vector<double> prefixed = engine_nll(dir.path(), ids);
  rewrite_as_original_upload(dir.path(), 4);
  EXPECT_EQ(engine_nll(dir.path(), ids), prefixed);  // the same weights, bit for bit
  const std::vector<double> want = testing::reference_gpt2_nll(dir.path(), ids);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(prefixed[i], want[i], 1e-4) << "token " << i;
}

TEST(Gpt2Layout, MakeModelWritesHuggingFaceNamesAndConv1DShapes) {
  TempDir dir("gpt2_names");
  make_gpt2(dir.path(), DType::kF32);
  const Json cfg = read_json_file(dir / "config.json");
  EXPECT_EQ(cfg["architectures"][0], "GPT2LMHeadModel");
  EXPECT_EQ(cfg["n_embd"], 64);
  EXPECT_EQ(cfg["activation_function"], "gelu_new");
  const SafetensorsFile f(dir / "model.safetensors");
  const TensorInfo* c_attn = f.find("transformer.h.0.attn.c_attn.weight");
  ASSERT_NE(c_attn, nullptr);
  EXPECT_EQ(c_attn->shape, (std::vector<std::int64_t>{64, 192}));  // (in, 3·out)
  ASSERT_NE(f.find("transformer.h.3.mlp.c_fc.weight"), nullptr);
  EXPECT_EQ(f.find("transformer.h.3.mlp.c_fc.weight")->shape, (std::vector<std::int64_t>{64, 256}));
  EXPECT_EQ(f.find("lm_head.weight"), nullptr);  // tied to wte
}

// The gpt2 preset: GPT-2 small as openai-community/gpt2's config.json, 124,439,808 parameters
// (wte and wpe, 12 blocks, ln_f; lm_head tied), its config.json read back as written.
TEST(Gpt2Layout, PresetGpt2IsGpt2Small) {
  TempDir dir("gpt2_preset");
  MakeModelOptions o;
  o.preset = "gpt2";
  o.arch = Arch::kLlama;  // --arch left at its default: the preset fixes it
  o.config_only = true;
  EXPECT_EQ(write_random_model(dir.path(), o), 124439808);
  const Json j = read_json_file(dir / "config.json");
  const ModelConfig c = parse_model_config(j, "gpt2");
  EXPECT_EQ(c.arch, Arch::kGpt2);
  EXPECT_EQ(c.hidden_size, 768);
  EXPECT_EQ(c.num_layers, 12);
  EXPECT_EQ(c.num_heads, 12);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.intermediate_size, 3072);
  EXPECT_EQ(c.max_position_embeddings, 1024);
  EXPECT_EQ(c.vocab_size, 50257);
  EXPECT_EQ(c.eos_token_ids, std::vector<std::int64_t>{50256});
  EXPECT_TRUE(j["n_inner"].is_null());  // 4·n_embd
  EXPECT_THROW(preset_config("gpt2", Arch::kQwen2, 0), InputError);
}

TEST(Gpt2Ops, CpuLayernormAndGeluMatchTheirOracles) {
  ThreadPool pool(3);
  CpuOps ops(generic_kernels(), pool);
  std::mt19937 rng(38);
  std::uniform_real_distribution<float> u(-3.0f, 4.0f);
  for (const std::int64_t d : {1, 7, 64, 769}) {
    const std::int64_t rows = 5;
    std::vector<float> x(static_cast<std::size_t>(rows * d)), w(static_cast<std::size_t>(d)), b(w.size());
    for (float& v : x) v = u(rng);
    for (float& v : w) v = u(rng);
    for (float& v : b) v = u(rng);
    std::vector<float> want(x.size()), got(x.size());
    ref::layernorm(x.data(), w.data(), b.data(), rows, d, 1e-5, want.data());
    ops.layernorm(x.data(), w.data(), b.data(), rows, d, 1e-5f, got.data());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << "d=" << d;
    ops.layernorm(x.data(), w.data(), b.data(), rows, d, 1e-5f, x.data());  // in place
    EXPECT_EQ(x, got);
  }
  std::vector<float> x(10001);
  for (float& v : x) v = 2.0f * u(rng);
  std::vector<float> want(x.size());
  ref::gelu_tanh(x.data(), static_cast<std::int64_t>(x.size()), want.data());
  ops.gelu_tanh(x.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], want[i], 1e-6 + 1e-6 * std::fabs(want[i])) << i;
}

// The Conv1D weights are read where the file holds them: q, k, v are column thirds of c_attn
// (rows 3·H apart), o/up/down the stored (in, out) matrices; the model's layer holds c_attn once.
TEST(Gpt2Layout, Conv1DWeightsAreViewedInPlaceNotCopied) {
  TempDir dir("gpt2_in_place");
  make_gpt2(dir.path(), DType::kBF16);
  const ModelConfig c = load_model_config(dir.path());
  const std::int64_t H = c.hidden_size, I = c.intermediate_size;
  const Checkpoint ck(dir.path());
  const SafetensorsFile& file = *ck.files().at(0);
  auto stored = [&](const std::string& name) {
    const TensorInfo* t = file.find(name);
    EXPECT_NE(t, nullptr) << name;
    return t ? static_cast<const std::uint8_t*>(file.data(*t)) : nullptr;
  };
  const std::uint8_t* c_attn = stored("transformer.h.1.attn.c_attn.weight");
  const char* thirds[] = {"q_proj", "k_proj", "v_proj"};
  for (int i = 0; i < 3; ++i) {
    const TensorRef r = ck.get("model.layers.1.self_attn." + std::string(thirds[i]) + ".weight");
    EXPECT_EQ(r.data, c_attn + i * H * 2) << thirds[i];
    EXPECT_EQ(r.in_out_ld, 3 * H);
    EXPECT_EQ(r.info->shape, (std::vector<std::int64_t>{H, H}));
  }
  const TensorRef up = ck.get("model.layers.1.mlp.up_proj.weight");
  EXPECT_EQ(up.data, stored("transformer.h.1.mlp.c_fc.weight"));
  EXPECT_EQ(up.in_out_ld, I);
  EXPECT_EQ(up.info->shape, (std::vector<std::int64_t>{I, H}));
  const TensorRef down = ck.get("model.layers.1.mlp.down_proj.weight");
  EXPECT_EQ(down.data, stored("transformer.h.1.mlp.c_proj.weight"));
  EXPECT_EQ(down.in_out_ld, H);
  EXPECT_EQ(ck.get("model.layers.1.self_attn.o_proj.weight").data, stored("transformer.h.1.attn.c_proj.weight"));

  const LlamaFamilyModel model(c, ck);
  const LayerWeights& w = model.layer_weights(1);
  EXPECT_EQ(w.q.data, c_attn);  // c_attn once, (3·H, H) stored (in, out)
  EXPECT_EQ(w.q.rows, 3 * H);
  EXPECT_EQ(w.q.in_out_ld, 3 * H);
  EXPECT_EQ(w.k.data, nullptr);
  EXPECT_EQ(w.v.data, nullptr);
  EXPECT_EQ(w.up.data, up.data);
  EXPECT_EQ(w.down.in_out_ld, H);
  // The weights counted once: c_attn, c_proj, c_fc, mlp.c_proj per layer, and the embedding.
  EXPECT_EQ(model.weight_bytes(), (c.vocab_size * H + c.num_layers * (4 * H * H + 2 * H * I)) * 2);
}

// --quantize makes (out, in) blocks of the (in, out) weights: the Q8_0 run stays near the
// float64 reference, and far from it when the transposition is wrong would show at once.
TEST(Gpt2Layout, QuantizeTransposesConv1DWeightsIntoBlocks) {
  TempDir dir("gpt2_q8");
  make_gpt2(dir.path(), DType::kF32);
  const std::vector<std::int32_t> ids = some_ids(12, kVocab, 9);
  const std::vector<double> want = testing::reference_gpt2_nll(dir.path(), ids);
  std::string list;
  for (std::int32_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  const testing::ProcessResult r =
      testing::run_plexus("perplexity " + testing::shell_quote(dir.path()) + " --ids " + list + " --quantize Q8_0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json nll = parse_json(r.out, "perplexity --json")["nll"];
  ASSERT_EQ(nll.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(nll[i].get<double>(), want[i], 3e-2) << "token " << i;
}

// Two virtual devices (the positions with the embedding on the first), and every layer streamed
// from the host or from disk: one device's NLL, bit for bit.
TEST(Gpt2Layout, VirtualDevicesAndOffloadGiveOneDevicesNll) {
  TempDir dir("gpt2_devices");
  make_gpt2(dir.path(), DType::kF32);
  const std::string ppl = "perplexity " + testing::shell_quote(dir.path()) + " --ids 1,2,3,4,5,6,7,8,9,10,11 --batch-tokens 4 --json";
  auto nll = [&](const std::string& extra) {
    const testing::ProcessResult r = testing::run_plexus(ppl + extra);
    EXPECT_EQ(r.exit_code, 0) << extra << "\n" << r.err;
    return r.exit_code == 0 ? parse_json(r.out, "perplexity --json")["nll"] : Json();
  };
  const Json one = nll("");
  ASSERT_EQ(one.size(), 10u);
  EXPECT_EQ(nll(" --virtual-devices 2 --micro-batches 2"), one);
  EXPECT_EQ(nll(" --max-memory 0=15MiB,cpu=64GiB"), one);
  EXPECT_EQ(nll(" --max-memory 0=15MiB --offload-disk"), one);
}

// config.json fields plexus does not implement: exit 2, naming the field and its value.
TEST(Gpt2Config, UnimplementedFieldsExitTwoNamingFieldAndValue) {
  struct Bad {
    Json patch;
    std::string says;
  };
  const Bad cases[] = {
      {Json{{"scale_attn_by_inverse_layer_idx", true}}, "scale_attn_by_inverse_layer_idx is true"},
      {Json{{"reorder_and_upcast_attn", true}}, "reorder_and_upcast_attn is true"},
      {Json{{"scale_attn_weights", false}}, "scale_attn_weights is false"},
      {Json{{"activation_function", "relu"}}, "activation_function 'relu'"},
      {Json{{"tie_word_embeddings", false}}, "tie_word_embeddings is false"},
      {Json{{"layer_norm_epsilon", -1.0}}, "layer_norm_epsilon is -1"},
      {Json{{"n_embd", 60}, {"n_head", 7}}, "n_embd (60) is not divisible by n_head (7)"},
      // a config that is not this checkpoint's: the tensor named as the engine and the file name it
      {Json{{"n_embd", 32}}, "'model.embed_tokens.weight' (from the file's 'transformer.wte.weight') has shape [3000, 64]"},
      {Json{{"n_inner", 100}}, "(from the file's 'transformer.h.0.mlp.c_fc.weight') has shape [256, 64]"},
  };
  TempDir dir("gpt2_bad");
  make_gpt2(dir.path(), DType::kF32);
  const Json good = read_json_file(dir / "config.json");
  for (const Bad& b : cases) {
    testing::patch_config(dir.path(), b.patch);
    const testing::ProcessResult r = testing::run_plexus("generate " + testing::shell_quote(dir.path()) + " --ids 1,2 --max-tokens 1");
    EXPECT_EQ(r.exit_code, 2) << b.patch.dump() << "\n" << r.err;
    EXPECT_NE(r.err.find(b.says), std::string::npos) << b.patch.dump() << "\n" << r.err;
    std::ofstream(dir / "config.json") << good.dump(2);
  }
  EXPECT_EQ(testing::run_plexus("generate " + testing::shell_quote(dir.path()) + " --ids 1,2 --max-tokens 1").exit_code, 0);
}

// accelerate's strategies place GPT2LMHeadModel's own modules (infer_auto_device_map with
// no_split_module_classes ["GPT2Block"], lm_head.weight tied to transformer.wte.weight). The
// expected maps are accelerate's algorithm worked by hand on the model's f32 sizes:
//   transformer.wte 3000·64·4 = 768000, transformer.wpe 1024·64·4 = 262144, transformer.drop 0,
//   transformer.h.N (12·64² + 13·64)·4 = 199936, transformer.ln_f 512, lm_head 0 (tied).
// sequential, 0=1300000: transformer (1830400) does not fit and is split; wte fits beside the
//   largest other module (wpe) kept free, and brings the tied lm_head along; wpe, drop fit under
//   1300000 − 199936; h does not and is split, h.0 does not fit: 1=700000 takes h.0–h.2, cpu the rest.
// sequential, 0=1048576: as above, but wpe (768000 + 262144 > 1048576 − 199936) goes to 1 with
//   drop, h.0, h.1 (262144 + 3·199936 > 700000).
// balanced, 0=1=4MiB: get_balanced_memory caps 0 at 1830400 / 2 + 1.25·199936 = 1165120 (the
//   first GPT2Block outweighs the mean of the 27 leaf modules), so wpe again goes to 1 with the rest.
// Plans FLAGS on the tiny GPT-2: `plan --json`'s device_map is `map`, a note says wpe runs on 0
// exactly when `wpe_moved`, and the run with those flags gives one device's NLL, bit for bit.
void expect_accelerate_map(const std::string& flags, const Json& map, bool wpe_moved) {
  TempDir dir("gpt2_plan");
  make_gpt2(dir.path(), DType::kF32);
  const std::string ids = " --ids " + testing::ids_csv(some_ids(20, kVocab, 5));
  const testing::ProcessResult alone = testing::run_plexus("perplexity " + testing::shell_quote(dir.path()) + ids + " --json");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const testing::ProcessResult r = testing::run_plexus("plan " + testing::shell_quote(dir.path()) + " " + flags + " --context 64 --json");
  ASSERT_EQ(r.exit_code, 0) << flags << "\n" << r.err;
  const Json plan = parse_json(r.out, "plan --json");
  EXPECT_EQ(plan["device_map"], map) << flags;
  const std::string notes = plan.contains("notes") ? plan["notes"].dump() : "";
  EXPECT_EQ(notes.find("it runs wpe on 0") != std::string::npos, wpe_moved) << flags << "\n" << notes;
  const testing::ProcessResult run =
      testing::run_plexus("perplexity " + testing::shell_quote(dir.path()) + ids + " " + flags + " --context 64 --json");
  ASSERT_EQ(run.exit_code, 0) << flags << "\n" << run.err;
  EXPECT_EQ(parse_json(run.out, "perplexity --json")["nll"], parse_json(alone.out, "perplexity --json")["nll"]) << flags;
}

TEST(Gpt2Plan, SequentialSplitsTheBlocksOverTwoDevicesAndCpu) {
  expect_accelerate_map(
      "--strategy sequential --max-memory 0=1300000,1=700000,cpu=1GiB",
      Json{{"transformer.wte", 0}, {"lm_head", 0}, {"transformer.wpe", 0}, {"transformer.drop", 0}, {"transformer.h.0", 1},
           {"transformer.h.1", 1}, {"transformer.h.2", 1}, {"transformer.h.3", "cpu"}, {"transformer.ln_f", "cpu"}},
      false);
}

TEST(Gpt2Plan, SequentialPlacesWpeApartFromWteWhichTheRunKeepsTogether) {
  expect_accelerate_map(
      "--strategy sequential --max-memory 0=1048576,1=700000,cpu=1GiB",
      Json{{"transformer.wte", 0}, {"lm_head", 0}, {"transformer.wpe", 1}, {"transformer.drop", 1}, {"transformer.h.0", 1},
           {"transformer.h.1", 1}, {"transformer.h.2", "cpu"}, {"transformer.h.3", "cpu"}, {"transformer.ln_f", "cpu"}},
      true);
}

TEST(Gpt2Plan, BalancedCapsTheFirstDeviceByTheFirstBlock) {
  expect_accelerate_map("--strategy balanced --max-memory 0=4MiB,1=4MiB,cpu=1GiB",
                        Json{{"transformer.wte", 0}, {"lm_head", 0}, {"transformer.wpe", 1}, {"transformer.drop", 1},
                             {"transformer.h", 1}, {"transformer.ln_f", 1}},
                        true);
}

// A device map in Hugging Face's names (as `plan --json` prints it) runs as given; a part of a
// GPT2Block, or a module GPT-2 lacks, is refused naming the entry.
TEST(Gpt2Plan, DeviceMapInHuggingFaceNamesRunsPartsOfABlockAreRefused) {
  TempDir dir("gpt2_map");
  make_gpt2(dir.path(), DType::kF32);
  const std::string budgets = " --max-memory 0=16MiB,1=16MiB,cpu=1GiB --context 64";
  const Json map{{"transformer.wte", 0}, {"transformer.wpe", 0}, {"transformer.h.0", 0}, {"transformer.h.1", 1},
                 {"transformer.h.2", 1}, {"transformer.h.3", "cpu"}, {"transformer.ln_f", 1}, {"lm_head", 1}};
  write_file_atomically(dir / "map.json", map.dump());
  const std::string ids = " --ids " + testing::ids_csv(some_ids(16, kVocab, 6));
  const testing::ProcessResult alone = testing::run_plexus("perplexity " + testing::shell_quote(dir.path()) + ids + " --json");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const std::string with_map = budgets + " --device-map " + testing::shell_quote(dir / "map.json");
  const testing::ProcessResult plan = testing::run_plexus("plan " + testing::shell_quote(dir.path()) + with_map + " --json");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_EQ(parse_json(plan.out, "plan --json")["device_map"], map);
  const testing::ProcessResult run = testing::run_plexus("perplexity " + testing::shell_quote(dir.path()) + ids + with_map + " --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(parse_json(run.out, "perplexity --json")["nll"], parse_json(alone.out, "perplexity --json")["nll"]);
  for (const auto& [entry, says] : std::vector<std::pair<std::string, std::string>>{
           {"transformer.h.0.attn", "GPT2Block is never split (accelerate's no_split_module_classes); map 'transformer.h.0' whole"},
           {"transformer.h.9", "'transformer.h.9' names no module of GPT2LMHeadModel"}}) {
    Json bad = map;
    bad[entry] = 0;
    write_file_atomically(dir / "bad.json", bad.dump());
    const testing::ProcessResult r = testing::run_plexus("plan " + testing::shell_quote(dir.path()) + budgets + " --device-map " +
                                                         testing::shell_quote(dir / "bad.json"));
    EXPECT_EQ(r.exit_code, 2) << entry << "\n" << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
}

// --tp splits the heads (c_attn's q, k, v columns per head), c_fc's columns with its bias, and
// c_proj / mlp.c_proj by their input rows (partial sums, their biases added once after the sum):
// one device's NLL up to the partial sums' order, the Conv1D weights in place and (--quantize)
// as (out, in) blocks; --tp 3 cannot split the 4 heads and is refused naming them.
TEST(Gpt2Parallel, TensorParallelGivesOneDevicesNll) {
  TempDir dir("gpt2_tp");
  make_gpt2(dir.path(), DType::kF32);
  const std::string ppl = "perplexity " + testing::shell_quote(dir.path()) + " --ids " + testing::ids_csv(some_ids(20, kVocab, 4)) + " --json";
  auto nll = [&](const std::string& extra) {
    const testing::ProcessResult r = testing::run_plexus(ppl + extra);
    EXPECT_EQ(r.exit_code, 0) << extra << "\n" << r.err;
    return r.exit_code == 0 ? parse_json(r.out, "perplexity --json").at("nll").get<std::vector<double>>() : std::vector<double>{};
  };
  for (const char* q : {"", " --quantize Q8_0"}) {
    const std::vector<double> one = nll(q);
    ASSERT_EQ(one.size(), 19u) << q;
    for (const char* tp : {" --tp 2", " --tp 4"}) {  // 4: one head a rank
      if (*q != 0 && std::string(tp) == " --tp 4") continue;  // 16 columns a rank would cut Q8_0's blocks of 32
      const std::vector<double> split = nll(std::string(q) + tp);
      ASSERT_EQ(split.size(), one.size()) << q << tp;
      for (std::size_t i = 0; i < one.size(); ++i) EXPECT_NEAR(split[i], one[i], 1e-5) << q << tp << " token " << i;
    }
  }
  const testing::ProcessResult three = testing::run_plexus(ppl + " --tp 3");
  EXPECT_EQ(three.exit_code, 2) << three.err;
  EXPECT_NE(three.err.find("its 4 attention heads"), std::string::npos) << three.err;
}

// GPT-2 has n_positions learned positions and nothing beyond: a run past them is refused.
TEST(Gpt2Config, GeneratingBeyondNPositionsExitsTwo) {
  TempDir dir("gpt2_positions");
  make_gpt2(dir.path(), DType::kF32);
  const std::vector<std::int32_t> ids = some_ids(1020, kVocab, 9);
  const std::string run = "generate " + testing::shell_quote(dir.path()) + " --ids " + testing::ids_csv(ids);
  const testing::ProcessResult r = testing::run_plexus(run + " --max-tokens 10");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("1024"), std::string::npos) << r.err;
  EXPECT_EQ(testing::run_plexus(run + " --max-tokens 4").exit_code, 0);  // 1024 positions: the last one used
}

}  // namespace
}  // namespace plexus
