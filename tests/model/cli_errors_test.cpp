// The real plexus binary on bad input: a clear message naming the file or field, exit 2, no crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <tuple>

#include "model/make_model.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;
using testing::TempDir;

void expect_bad_input(const std::string& args, const std::string& must_mention) {
  const testing::ProcessResult r = run_plexus(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\nstderr: " << r.err;
  EXPECT_NE(r.err.find(must_mention), std::string::npos) << args << "\nstderr: " << r.err;
}

// Rewrites FILE's safetensors header through `edit` (the data section kept byte for byte: edits
// that keep every tensor's byte count, such as a shape of the same size or a renamed tensor).
void edit_safetensors_header(const std::string& file, const std::function<void(Json&)>& edit) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  Json header = Json::parse(bytes.substr(8, n));
  edit(header);
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
  std::ofstream(file, std::ios::binary) << out << h << bytes.substr(8 + n);
}

std::string tiny_model(const TempDir& dir) {
  MakeModelOptions o;
  o.vocab_size = 300;
  write_random_model(dir.path(), o);
  return dir.path();
}

TEST(CliErrors, UsageErrors) {
  expect_bad_input("frobnicate", "unknown command");
  expect_bad_input("generate", "MODEL");
  expect_bad_input("generate /nonexistent --ids 1 --bogus", "--bogus");
  expect_bad_input("make-model /tmp/x --preset huge", "huge");
  expect_bad_input("make-model /tmp/x --arch falcon", "falcon");
  EXPECT_EQ(run_plexus("generate --help").exit_code, 0);
  EXPECT_NE(run_plexus("generate --help").out.find("--max-tokens"), std::string::npos);
  EXPECT_EQ(run_plexus("--help").exit_code, 0);
}

TEST(CliErrors, MissingAndMalformedModels) {
  expect_bad_input("generate /nonexistent/model --ids 1", "/nonexistent/model");
  TempDir dir("bad");
  const std::string m = tiny_model(dir);
  const std::string q = shell_quote(m);
  expect_bad_input("generate " + q + " --ids 1,2,300", "300");      // id outside the vocabulary
  expect_bad_input("perplexity " + q + " --ids 1,-2", "-2");
  expect_bad_input("generate " + q + " --prompt hi", "tokenizer");  // no tokenizer.json
  expect_bad_input("generate " + q + " --ids 1 --max-tokens 0", "--max-tokens");
  expect_bad_input("generate " + q + " --ids 1 --temperature -0.5", "--temperature");

  testing::patch_config(m, Json{{"architectures", {"BertModel"}}});
  expect_bad_input("generate " + q + " --ids 1", "BertModel");
  testing::patch_config(m, Json{{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 128}});
  expect_bad_input("generate " + q + " --ids 1", "shape");
  testing::patch_config(m, Json{{"hidden_size", 64}});
  {
    std::ofstream(m + "/config.json", std::ios::app) << "garbage";
  }
  expect_bad_input("generate " + q + " --ids 1", "config.json");
  // A model path that is a file of another kind (full of '[' bytes) says what it is not, not
  // "JSON nested deeper than 256 levels" (issue 32 item 17).
  std::ofstream(dir / "weights.bin", std::ios::binary) << std::string("\x7f" "ELF") + std::string(3000, '[');
  expect_bad_input("estimate " + shell_quote(dir / "weights.bin"),
                   "weights.bin is neither a GGUF file nor a config.json (a JSON object): it starts with the bytes 7f 45 4c 46 5b");
}

// Sizes no model has, and counts near 2^63: exit 2 naming the field, never a wrapped number.
TEST(CliErrors, HugeSizesAndCountsAreRefusedNotWrapped) {
  TempDir dir("huge");
  const std::string m = tiny_model(dir);
  const std::string q = shell_quote(m);
  // prompt + max_tokens overflowed and passed the context check; --max-tokens now has a range.
  expect_bad_input("generate " + q + " --ids 1 --max-tokens 9223372036854775807", "--max-tokens must be between 1 and");
  // hidden_size 10^9 printed "-6446677952709551616 parameters" with exit 0.
  testing::patch_config(m, Json{{"hidden_size", 1000000000}});
  expect_bad_input("estimate " + q, "field 'hidden_size' is 1000000000, above");
  expect_bad_input("plan " + q + " --virtual-devices 2", "field 'hidden_size' is 1000000000, above");
  testing::patch_config(m, Json{{"hidden_size", 64}, {"num_hidden_layers", 100000}});
  expect_bad_input("estimate " + q, "field 'num_hidden_layers' is 100000, above");
}

// Scratch is sized by the run's sequences: a 6-token run of a config claiming 2·10^8 positions
// took 3.1 GB (attention scores for the whole context, per thread) and fails under a 1.5 GB cap.
TEST(CliErrors, ScratchFollowsTheRunNotMaxPositionEmbeddings) {
#if defined(__SANITIZE_ADDRESS__)  // gcc
  GTEST_SKIP() << "AddressSanitizer reserves more address space than the cap allows";
#elif defined(__has_feature)  // clang
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer reserves more address space than the cap allows";
#endif
#endif
  TempDir dir("ctx");
  const std::string m = tiny_model(dir);
  testing::patch_config(m, Json{{"max_position_embeddings", 200000000}});
  const testing::ProcessResult r = testing::run_command("ulimit -v 1500000; " + shell_quote(PLEXUS_BINARY) + " generate " +
                                                         shell_quote(m) + " --ids 1,2,3,4,5,6 --max-tokens 2 --threads 2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A missing path is "not found" (not "holds no weights"), in every command that takes a model; a
// hub id not in the Hugging Face cache says how to download it (tests/cli/model_location_test.cpp).
TEST(CliErrors, ModelPathNotFound) {
  for (const std::string cmd : {"generate /no/such/dir --ids 1", "perplexity /no/such/dir --ids 1,2", "plan /no/such/dir",
                                "estimate /no/such/dir"}) {
    const testing::ProcessResult r = run_plexus(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("'/no/such/dir' not found"), std::string::npos) << cmd << "\n" << r.err;
    EXPECT_EQ(r.err.find("holds no weights"), std::string::npos) << cmd << "\n" << r.err;
  }
  const testing::ProcessResult hub = run_plexus("generate no-such-org/No-Such-Model-7B --ids 1");
  EXPECT_EQ(hub.exit_code, 2) << hub.err;
  EXPECT_NE(hub.err.find("nor in the Hugging Face cache"), std::string::npos) << hub.err;
  EXPECT_NE(hub.err.find("hf download no-such-org/No-Such-Model-7B"), std::string::npos) << hub.err;
  // An existing directory without a model says what it lacks.
  TempDir empty("empty");
  expect_bad_input("generate " + shell_quote(empty.path()) + " --ids 1", "it has no config.json");
}

// config.json is checked against the checkpoint and the vocabulary: a config of another model is
// refused rather than run with weights silently ignored or stop tokens that can never occur.
TEST(CliErrors, ConfigCrossCheckedAgainstCheckpoint) {
  TempDir dir("cross");
  const std::string m = tiny_model(dir);  // 4 layers, vocab 300
  const std::string q = shell_quote(m);
  ASSERT_EQ(run_plexus("generate " + q + " --ids 1 --max-tokens 1").exit_code, 0);

  testing::patch_config(m, Json{{"num_hidden_layers", 2}});
  expect_bad_input("generate " + q + " --ids 1", "holds 4 decoder layers");
  expect_bad_input("plan " + q + " --virtual-devices 2", "num_hidden_layers 2");
  testing::patch_config(m, Json{{"num_hidden_layers", 4}});

  testing::patch_config(m, Json{{"torch_dtype", "int3"}});
  expect_bad_input("generate " + q + " --ids 1", "'int3'");
  expect_bad_input("estimate " + q, "torch_dtype");
  testing::patch_config(m, Json{{"torch_dtype", "bfloat16"}});

  testing::patch_config(m, Json{{"eos_token_id", 300}});
  expect_bad_input("generate " + q + " --ids 1", "eos_token_id' is 300, outside the vocabulary");
  testing::patch_config(m, Json{{"eos_token_id", Json::array({2, 1000})}});
  expect_bad_input("generate " + q + " --ids 1", "eos_token_id[1]");
  testing::patch_config(m, Json{{"eos_token_id", "</s>"}});
  expect_bad_input("generate " + q + " --ids 1", "must be an integer token id");
  testing::patch_config(m, Json{{"eos_token_id", 2}, {"bos_token_id", -1}});
  expect_bad_input("generate " + q + " --ids 1", "bos_token_id");
  testing::patch_config(m, Json{{"bos_token_id", 1}});
  ASSERT_EQ(run_plexus("generate " + q + " --ids 1 --max-tokens 1").exit_code, 0);

  // A tokenizer whose end-of-sequence token lies outside the model's vocabulary.
  std::filesystem::copy_file(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral/tokenizer.json", m + "/tokenizer.json");
  std::ofstream(m + "/tokenizer_config.json") << R"({"eos_token": "\u2581Hello"})";
  expect_bad_input("generate " + q + " --ids 1", "end-of-sequence token id 22557");
  EXPECT_EQ(run_plexus("generate " + q + " --ids 1 --max-tokens 1 --ignore-eos").exit_code, 0);
}

// Issue 35: a mixture-of-experts checkpoint whose expert count, top-k or shapes disagree with its
// config.json exits 2 naming the tensor or the field and the numbers.
TEST(CliErrors, MixtureOfExpertsConfigCrossChecked) {
  TempDir dir("moe-cross");
  MakeModelOptions o;
  o.arch = Arch::kMixtral;  // 4 experts, 2 per token, hidden 64
  o.vocab_size = 300;
  write_random_model(dir.path(), o);
  const std::string q = shell_quote(dir.path());
  ASSERT_EQ(run_plexus("generate " + q + " --ids 1 --max-tokens 1").exit_code, 0);
  testing::patch_config(dir.path(), Json{{"num_local_experts", 3}});
  expect_bad_input("generate " + q + " --ids 1", "holds 4 experts per layer but config.json says num_local_experts 3");
  testing::patch_config(dir.path(), Json{{"num_local_experts", 6}});
  expect_bad_input("perplexity " + q + " --ids 1,2", "holds 4 experts per layer but config.json says num_local_experts 6");
  testing::patch_config(dir.path(), Json{{"num_local_experts", 4}, {"num_experts_per_tok", 5}});
  expect_bad_input("generate " + q + " --ids 1", "num_experts_per_tok (5) is more than the 4 experts a layer has");
  testing::patch_config(dir.path(), Json{{"num_experts_per_tok", 2}, {"intermediate_size", 100}});
  expect_bad_input("generate " + q + " --ids 1", "experts.0.w1.weight' has shape [176, 64] but config.json implies [100, 64]");
  testing::patch_config(dir.path(), Json{{"intermediate_size", 176}});
  ASSERT_EQ(run_plexus("generate " + q + " --ids 1 --max-tokens 1").exit_code, 0);

  TempDir qd("qwen3-moe-cross");
  o.arch = Arch::kQwen3Moe;  // 4 layers, layer 1 dense
  write_random_model(qd.path(), o);
  testing::patch_config(qd.path(), Json{{"mlp_only_layers", Json::array({1, 4})}});
  expect_bad_input("generate " + shell_quote(qd.path()) + " --ids 1", "mlp_only_layers[1] is 4; it must be a layer index from 0 to 3");
  testing::patch_config(qd.path(), Json{{"mlp_only_layers", Json::array({2})}});
  expect_bad_input("generate " + shell_quote(qd.path()) + " --ids 1", "lacks tensor 'model.layers.1.mlp.gate.weight'");
}

// Issue 35: a gpt-oss checkpoint whose fused expert tensors, router or layer types disagree with
// config.json exits 2 naming the tensor or field and the numbers.
TEST(CliErrors, GptOssConfigCrossChecked) {
  TempDir dir("gpt-oss-cross");
  MakeModelOptions o;
  o.arch = Arch::kGptOss;  // 4 experts of width 64, 2 per token, hidden 64, 4 layers
  o.vocab_size = 300;
  write_random_model(dir.path(), o);
  const std::string q = shell_quote(dir.path());
  ASSERT_EQ(run_plexus("generate " + q + " --ids 1 --max-tokens 1").exit_code, 0);
  testing::patch_config(dir.path(), Json{{"num_local_experts", 5}});
  expect_bad_input("generate " + q + " --ids 1", "tensor 'model.layers.0.mlp.router.weight' has shape [4, 64] but config.json implies [5, 64]");
  testing::patch_config(dir.path(), Json{{"num_local_experts", 4}, {"intermediate_size", 100}});
  expect_bad_input("generate " + q + " --ids 1",
                   "tensor 'model.layers.0.mlp.experts.gate_up_proj' has shape [4, 64, 128] but config.json implies [4, 64, 200]");
  testing::patch_config(dir.path(), Json{{"intermediate_size", 64}, {"num_experts_per_tok", 5}});
  expect_bad_input("generate " + q + " --ids 1", "num_experts_per_tok (5) is more than the 4 experts a layer has");
  testing::patch_config(dir.path(), Json{{"num_experts_per_tok", 2}, {"layer_types", Json::array({"sliding_attention"})}});
  expect_bad_input("generate " + q + " --ids 1", "field 'layer_types' must be a list of 4 entries");
  testing::patch_config(dir.path(), Json{{"layer_types", Json::array({"sliding_attention", "full_attention", "local", "full_attention"})}});
  expect_bad_input("generate " + q + " --ids 1", "layer_types[2] is 'local'");
  testing::patch_config(dir.path(), Json{{"layer_types", nullptr}, {"swiglu_limit", -1}});
  expect_bad_input("generate " + q + " --ids 1", "swiglu_limit is -1");
  testing::patch_config(dir.path(), Json{{"swiglu_limit", 7.0}});
  ASSERT_EQ(run_plexus("generate " + q + " --ids 1 --max-tokens 1").exit_code, 0);
  // --tp and --ep split gpt-oss where its heads, kv heads, experts' width and expert count divide.
  expect_bad_input("generate " + q + " --ids 1 --tp 3", "--tp 1, 2, 4 work");
  expect_bad_input("generate " + q + " --ids 1 --ep 3", "its 4 experts a layer must divide evenly");
}

// A copy of a golden GGUF file with the f32 value of metadata key `key` set to `v` (the bytes
// after the key: type 6, then the value).
std::string gguf_with_f32(const TempDir& dir, const std::string& key, float v) {
  std::ifstream in(std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf/gs-llama-q8_0.gguf", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t at = bytes.find(key);
  EXPECT_NE(at, std::string::npos) << key;
  EXPECT_EQ(bytes[at + key.size()], 6) << key << " is not an f32";
  std::memcpy(bytes.data() + at + key.size() + 4, &v, 4);
  const std::string path = dir / "patched.gguf";
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Issue 32 item 16: nonsense float hyper-parameters exit 2 naming the key and the value, from
// config.json and from GGUF metadata (a NaN epsilon gave NaN perplexity with exit 0; a rope
// theta of 0 or NaN, a negative epsilon, a silently different model).
TEST(CliErrors, NonsenseHyperParametersExitTwoNamingKeyAndValue) {
  TempDir dir("hparams");
  const std::string m = tiny_model(dir);
  const std::string q = shell_quote(m);
  const Json good = {{"rope_theta", 10000.0}, {"rms_norm_eps", 1e-6}};
  const std::vector<std::pair<Json, std::string>> cases = {
      {{{"rope_theta", 0}}, "rope_theta is 0"},
      {{{"rope_theta", -10000}}, "rope_theta is -10000"},
      {{{"rope_theta", 1e-300}}, "rope_theta is 1e-300"},
      {{{"rms_norm_eps", -1e-6}}, "rms_norm_eps is -1e-06"},
      {{{"rms_norm_eps", 2}}, "rms_norm_eps is 2"},
      {{{"partial_rotary_factor", 0.5}}, "partial_rotary_factor 0.5 is not supported"},
      {{{"partial_rotary_factor", 0}}, "partial_rotary_factor is 0"},
      {{{"rope_scaling", {{"rope_type", "linear"}, {"factor", 0}}}}, "rope_scaling.factor is 0"},
      {{{"rope_scaling", {{"rope_type", "llama3"}, {"factor", -8}}}}, "rope_scaling.factor is -8"},
      {{{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8}, {"low_freq_factor", 4}, {"high_freq_factor", 4}}}},
       "high_freq_factor (4) must be more than low_freq_factor (4)"},
      {{{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8}, {"original_max_position_embeddings", 0}}}},
       "original_max_position_embeddings is 0"},
      {{{"rope_scaling", 8}}, "rope_scaling must be an object or null, got 8"},
  };
  for (const auto& [fields, mention] : cases) {
    testing::patch_config(m, fields);
    expect_bad_input("perplexity " + q + " --ids 1,2,3", mention);
    expect_bad_input("estimate " + q, mention);
    testing::patch_config(m, good);
    testing::patch_config(m, Json{{"partial_rotary_factor", nullptr}, {"rope_scaling", nullptr}});
  }
  testing::patch_config(m, Json{{"architectures", {"MistralForCausalLM"}}, {"model_type", "mistral"}, {"sliding_window", -1}});
  expect_bad_input("perplexity " + q + " --ids 1,2,3", "sliding_window is -1");
  testing::patch_config(m, Json{{"sliding_window", nullptr}, {"partial_rotary_factor", 1.0}});
  EXPECT_EQ(run_plexus("perplexity " + q + " --ids 1,2,3").exit_code, 0);

  // GGUF metadata: the key as the file spells it.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& [key, v, shown] : std::vector<std::tuple<std::string, float, std::string>>{
           {"llama.attention.layer_norm_rms_epsilon", nan, "nan"},
           {"llama.attention.layer_norm_rms_epsilon", -1e-5f, "-1e-05"},
           {"llama.rope.freq_base", 0.0f, "0"},
           {"llama.rope.freq_base", nan, "nan"}}) {
    const std::string gguf = gguf_with_f32(dir, key, v);
    expect_bad_input("perplexity " + shell_quote(gguf) + " --ids 1,2,3", "patched.gguf: " + key + " is " + shown);
  }
  EXPECT_EQ(run_plexus("perplexity " + shell_quote(gguf_with_f32(dir, "llama.rope.freq_base", 10000.0f)) + " --ids 1,2,3").exit_code, 0);
}

// Issue 32 item 17: ids a tokenizer makes of --prompt / --text that the model's vocabulary lacks
// are reported under the flag the user gave, not as "--ids".
TEST(CliErrors, PromptIdsOutsideTheVocabularyNameThePromptFlag) {
  TempDir dir("prompt-vocab");
  const std::string m = tiny_model(dir);  // vocab 300; the Mistral tokenizer's ids go to 32000
  std::filesystem::copy_file(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral/tokenizer.json", m + "/tokenizer.json");
  const std::string q = shell_quote(m);
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {"generate " + q + " --prompt 'Hello world'", "--prompt"},
           {"perplexity " + q + " --text 'Hello world'", "--text"}}) {
    const testing::ProcessResult r = run_plexus(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(flag + " (as the tokenizer encodes it): token id 22557 is outside the vocabulary [0, 300)"), std::string::npos)
        << args << "\n" << r.err;
    EXPECT_EQ(r.err.find("--ids"), std::string::npos) << r.err;
  }
  expect_bad_input("generate " + q + " --ids 1,300", "--ids: token id 300 is outside the vocabulary [0, 300)");
  expect_bad_input("perplexity " + q + " --ids 1,300", "--ids: token id 300 is outside the vocabulary [0, 300)");
}

TEST(CliErrors, CorruptSafetensors) {
  TempDir dir("corrupt");
  const std::string m = tiny_model(dir);
  const std::string path = m + "/model.safetensors";
  // Truncate: the last tensor's range now runs past the end.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  expect_bad_input("generate " + shell_quote(m) + " --ids 1", "model.safetensors");
  std::filesystem::resize_file(path, 4);
  expect_bad_input("generate " + shell_quote(m) + " --ids 1", "truncated");
}

TEST(CliErrors, MakeModelGenerateRoundTrip) {
  TempDir dir("roundtrip");
  const std::string out = dir / "nested/m";  // parent directories are created too
  const testing::ProcessResult made = run_plexus("make-model " + shell_quote(out) + " --preset tiny --arch qwen3 --dtype f16 --seed 5 --vocab 400");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // Refuses to overwrite without --force.
  expect_bad_input("make-model " + shell_quote(out), "--force");
  const testing::ProcessResult g = run_plexus("generate " + shell_quote(out) + " --ids 3,4,5 --max-tokens 5 --json --ignore-eos");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const Json j = Json::parse(g.out);
  EXPECT_EQ(j["ids"].size(), 5u);
  for (const char* k : {"prefill_tokens_per_s", "decode_tokens_per_s", "ttft_ms"}) EXPECT_TRUE(j.contains(k)) << k;
  // 5 tokens: the first from prefill, 4 decode steps; their host time is a part of a step.
  EXPECT_EQ(j["decode_steps"], 4);
  const double host_ms = j["host_ms_per_step"].get<double>();
  EXPECT_GE(host_ms, 0.0);
  EXPECT_LT(host_ms, 1e3 / j["decode_tokens_per_s"].get<double>());
  // The load time (mapping and prefaulting the weights, setting up the run) rides along.
  ASSERT_TRUE(j.contains("load_seconds"));
  EXPECT_GT(j["load_seconds"].get<double>(), 0.0);
  const testing::ProcessResult v = run_plexus("generate " + shell_quote(out) + " --ids 3,4,5 --max-tokens 2 --verbose");
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.err.find("[model loaded in "), std::string::npos) << v.err;
  const testing::ProcessResult b = run_plexus("generate " + shell_quote(out) + " --ids 3,4,5 --max-tokens 2 --batch 2 --json");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_GT(Json::parse(b.out)["load_seconds"].get<double>(), 0.0);
  // The run was monitored: the summary of the session rides along.
  ASSERT_TRUE(j.contains("monitor"));
  EXPECT_TRUE(j["monitor"]["aggregate"].contains("total_avg_utilization"));
  EXPECT_GT(j["monitor"]["duration_s"].get<double>(), 0.0);
  // Energy per token rides along too: null without an energy source (no GPU here), a number with NVML.
  ASSERT_TRUE(j.contains("energy"));
  EXPECT_TRUE(j["energy"].contains("j_per_token"));
  EXPECT_EQ(j["energy"]["method"].get<std::string>(), "unavailable");
  const testing::ProcessResult p = run_plexus("perplexity " + shell_quote(out) + " --ids 3,4,5,6 --json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const Json pj = Json::parse(p.out);
  EXPECT_EQ(pj["nll"].size(), 3u);
  EXPECT_EQ(pj["n_tokens"], 4);
  EXPECT_GT(pj["ppl"].get<double>(), 1.0);
}

// Issue 35: gpt-oss experts stored as MXFP4 (NAME_blocks + NAME_scales) whose shapes or dtypes
// disagree with config.json, or with one part missing, exit 2 naming the tensor and the numbers.
TEST(CliErrors, GptOssMxfp4ExpertsCrossChecked) {
  TempDir dir("gpt-oss-mxfp4");
  MakeModelOptions o;
  o.arch = Arch::kGptOss;  // 4 experts of width 64, hidden 64: gate_up (4, 128, 64), down (4, 64, 64)
  o.vocab_size = 300;
  o.mxfp4_experts = true;
  write_random_model(dir.path(), o);
  const std::string q = shell_quote(dir.path()), file = dir / "model.safetensors";
  const std::string gu = "model.layers.1.mlp.experts.gate_up_proj", down = "model.layers.2.mlp.experts.down_proj";
  ASSERT_EQ(run_plexus("generate " + q + " --ids 1 --max-tokens 1").exit_code, 0);
  const auto set = [&](const std::string& name, const char* key, const Json& value) {
    edit_safetensors_header(file, [&](Json& h) { h[name][key] = value; });
  };
  set(gu + "_blocks", "shape", Json::array({2, 256, 2, 16}));  // the same bytes, the experts halved
  expect_bad_input("generate " + q + " --ids 1",
                   "tensor '" + gu + "_blocks' has shape [2, 256, 2, 16] but config.json implies [4, 128, 2, 16] "
                   "(num_local_experts 4; 2 · intermediate_size 64; hidden_size 64 / 32; 16 bytes a block)");
  set(gu + "_blocks", "shape", Json::array({4, 128, 2, 16}));
  set(down + "_scales", "shape", Json::array({4, 128, 1}));
  expect_bad_input("estimate " + q,
                   "tensor '" + down + "_scales' has shape [4, 128, 1] but config.json implies [4, 64, 2] "
                   "(num_local_experts 4; hidden_size 64; intermediate_size 64 / 32)");
  set(down + "_scales", "shape", Json::array({4, 64, 2}));
  set(down + "_scales", "dtype", "I8");
  expect_bad_input("generate " + q + " --ids 1", "tensor '" + down + "_scales' is I8; MXFP4 blocks and scales are U8");
  set(down + "_scales", "dtype", "U8");
  edit_safetensors_header(file, [&](Json& h) {  // the scales under another name: the blocks alone
    h[down + "_scalez"] = h[down + "_scales"];
    h.erase(down + "_scales");
  });
  expect_bad_input("plan " + q + " --json", "holds '" + down + "_blocks' but not '" + down + "_scales'");
  edit_safetensors_header(file, [&](Json& h) {
    h[down + "_scales"] = h[down + "_scalez"];
    h.erase(down + "_scalez");
  });
  ASSERT_EQ(run_plexus("generate " + q + " --ids 1 --max-tokens 1").exit_code, 0);
  testing::patch_config(dir.path(), Json{{"intermediate_size", 48}});  // 2 · 48 rows where the file holds 128
  expect_bad_input("generate " + q + " --ids 1", "tensor '" + std::string("model.layers.0.mlp.experts.gate_up_proj_blocks") +
                                                     "' has shape [4, 128, 2, 16] but config.json implies [4, 96, 2, 16]");
  // make-model's flag: MXFP4 experts are gpt-oss's, and the other choice is the --dtype.
  expect_bad_input("make-model " + shell_quote(dir / "x") + " --expert-dtype mxfp4", "--expert-dtype is for gpt-oss");
  expect_bad_input("make-model " + shell_quote(dir / "x") + " --arch gpt-oss --expert-dtype f16", "'f16' is neither mxfp4 nor the --dtype (bf16)");
}

}  // namespace
}  // namespace plexus
