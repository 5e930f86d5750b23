// `plexus quantize`: each tensor takes the type llama-quantize gives it in the same mix, and the
// round-to-nearest types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS) are byte-identical to
// llama.cpp's quantisation of the same checkpoint (q/k rows permuted as llama.cpp's converter
// permutes them); the metadata and names are llama.cpp's, the file runs in plexus as the source
// quantised on load does, and bad input exits 2 leaving nothing behind.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>

#include "core/gguf_file.h"
#include "core/json.h"
#include "core/thread_pool.h"
#include "kernels/quantize.h"
#include "model/checkpoint.h"
#include "model/gguf_export.h"
#include "model/make_model.h"
#include "model/quant_policy.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::ProcessResult;
using testing::TempDir;
using testing::run_command;
using testing::run_plexus;
using testing::shell_quote;
namespace fs = std::filesystem;

const std::string kGoldenDir = std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

bool have_numpy() { return run_command("/usr/bin/python3 -c 'import numpy'").exit_code == 0; }

// tests/tools/mkmodel.py's gguf-small checkpoint (the golden files' source for llama, seed 201).
std::string make_source(const TempDir& dir, const std::string& arch, const std::string& name = "src") {
  const std::string out = dir / name;
  const ProcessResult r = run_command("/usr/bin/python3 " + shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/tools/mkmodel.py") +
                                      " " + shell_quote(out) + " --preset gguf-small --arch " + arch +
                                      " --dtype f32 --seed 201 --std 0.05");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

std::string quantize(const std::string& src, const std::string& out, const std::string& type) {
  const ProcessResult r = run_plexus("quantize " + shell_quote(src) + " " + shell_quote(out) + " --type " + type);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

#define REQUIRE_NUMPY() \
  if (!have_numpy()) GTEST_SKIP() << "needs /usr/bin/python3 with numpy (scripts/setup.sh installs python3-numpy)"

// The GGUF type codes whose quantisation is deterministic round-to-nearest (llama.cpp's and ours
// agree byte for byte): F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, IQ4_XS.
bool byte_identical_type(std::uint32_t ggml_type) {
  for (std::uint32_t t : {0u, 1u, 2u, 3u, 6u, 7u, 8u, 20u, 23u}) {
    if (ggml_type == t) return true;
  }
  return false;
}

class QuantizeGolden : public ::testing::TestWithParam<const char*> {};

// llama.cpp's files of gs-llama (tests/data/gguf): every tensor in the mix's type, the
// deterministic ones byte for byte (the K types come from our own search).
TEST_P(QuantizeGolden, TensorsAreLlamaCppsTypesAndBytes) {
  REQUIRE_NUMPY();
  const std::string type = GetParam();
  const TempDir dir("quantize-golden");
  const std::string src = make_source(dir, "llama");
  const GgufFile ours(quantize(src, dir / "ours.gguf", type));
  const GgufFile theirs(kGoldenDir + "/gs-llama-" + type + ".gguf");
  int compared = 0;
  for (const GgufTensor& t : ours.tensors()) {
    const GgufTensor* g = theirs.find_tensor(t.name);
    ASSERT_NE(g, nullptr) << t.name << " is not in llama.cpp's file";
    EXPECT_EQ(t.dims, g->dims) << t.name;
    ASSERT_EQ(t.ggml_type, g->ggml_type) << t.name << ": not llama.cpp's type in " << type;
    ASSERT_EQ(t.bytes, g->bytes) << t.name;
    if (!byte_identical_type(t.ggml_type)) continue;
    EXPECT_EQ(std::memcmp(ours.data(t), theirs.data(*g), t.bytes), 0) << t.name << " differs from llama.cpp's " << type;
    ++compared;
  }
  EXPECT_EQ(ours.tensors().size(), theirs.tensors().size());
  // q8_0: all 21; q4_0: all but output (Q6_K); q4_k_m: the five norms (every matrix Q4_K / Q6_K).
  EXPECT_EQ(compared, type == std::string("q8_0") ? 21 : type == std::string("q4_0") ? 20 : 5);
  EXPECT_EQ(ours.require_int("general.file_type"), theirs.require_int("general.file_type"));
  for (const char* key : {"llama.context_length", "llama.embedding_length", "llama.block_count", "llama.feed_forward_length",
                          "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.dimension_count"}) {
    EXPECT_EQ(ours.require_int(key), theirs.require_int(key)) << key;
  }
  EXPECT_EQ(ours.get_float("llama.attention.layer_norm_rms_epsilon"), theirs.get_float("llama.attention.layer_norm_rms_epsilon"));
  EXPECT_EQ(ours.get_float("llama.rope.freq_base"), theirs.get_float("llama.rope.freq_base"));
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeGolden, ::testing::Values("q8_0", "q4_0", "q4_k_m"));

// tests/data/gguf/gs-llama-blk-golden.gguf: three tensors of llama-quantize's Q4_1, Q5_0, Q5_1,
// IQ4_NL and IQ4_XS files of gs-llama (benchmarks/llama_cpp/record_mix_choices.sh), named
// "TYPE/NAME". quantize_row on the source rows, and `plexus quantize`, give the same bytes.
class QuantizeBlockGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantizeBlockGolden, QuantizeRowIsByteIdenticalToLlamaCpp) {
  REQUIRE_NUMPY();
  const std::string type = GetParam();
  const TempDir dir("quantize-blk-golden");
  const std::string src = make_source(dir, "llama");
  const GgufFile golden(kGoldenDir + "/gs-llama-blk-golden.gguf");
  const DType t = quant_mix_info(quantize_flag("type", type)).base;
  // Not permuted (v, down): quantize_row on the checkpoint's rows.
  const Checkpoint ckpt(src);
  for (const auto& [hf, name] : {std::pair<std::string, std::string>{"model.layers.0.self_attn.v_proj.weight", "blk.0.attn_v.weight"},
                                 {"model.layers.1.mlp.down_proj.weight", "blk.1.ffn_down.weight"}}) {
    const GgufTensor* g = golden.find_tensor(type + "/" + name);
    ASSERT_NE(g, nullptr) << type << "/" << name;
    const TensorRef ref = ckpt.get(hf);
    ASSERT_EQ(ref.info->dtype, DType::kF32);
    const std::int64_t rows = ref.info->shape[0], cols = ref.info->shape[1];
    const std::int64_t row_bytes = dtype_row_bytes(t, cols);
    ASSERT_EQ(g->bytes, static_cast<std::uint64_t>(rows * row_bytes));
    std::vector<std::uint8_t> q(static_cast<std::size_t>(row_bytes));
    for (std::int64_t r = 0; r < rows; ++r) {
      quantize_row(t, static_cast<const float*>(ref.data) + r * cols, q.data(), cols);
      ASSERT_EQ(std::memcmp(q.data(), static_cast<const std::uint8_t*>(golden.data(*g)) + r * row_bytes, q.size()), 0)
          << type << " " << name << " row " << r;
    }
  }
  // The whole way: plexus quantize (attn_q with its rows permuted).
  const GgufFile ours(quantize(src, dir / "ours.gguf", type));
  for (const char* name : {"blk.0.attn_q.weight", "blk.0.attn_v.weight", "blk.1.ffn_down.weight"}) {
    const GgufTensor* a = ours.find_tensor(name);
    const GgufTensor* g = golden.find_tensor(type + "/" + name);
    ASSERT_TRUE(a && g) << name;
    ASSERT_EQ(a->ggml_type, g->ggml_type) << name;
    ASSERT_EQ(a->bytes, g->bytes) << name;
    EXPECT_EQ(std::memcmp(ours.data(*a), golden.data(*g), a->bytes), 0) << type << " " << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeBlockGolden, ::testing::Values("Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "IQ4_XS"));

TEST(Quantize, WritesLlamaCppNamesForQwen) {
  REQUIRE_NUMPY();
  const TempDir dir("quantize-qwen");
  for (const std::string arch : {"qwen2", "qwen3"}) {
    const GgufFile f(quantize(make_source(dir, arch, arch), dir / (arch + ".gguf"), "q8_0"));
    EXPECT_EQ(f.require_string("general.architecture"), arch);
    EXPECT_EQ(f.require_int(arch + ".block_count"), 2);
    EXPECT_EQ(f.require_int(arch + ".attention.key_length"), 64);
    const GgufTensor* embd = f.find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->ggml_type, 8u) << "the embedding takes the mix's Q8_0, as in llama.cpp";
    EXPECT_EQ(embd->dims, (std::vector<std::int64_t>{256, 2048}));
    const GgufTensor* q = f.find_tensor("blk.1.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->ggml_type, 8u);
    EXPECT_EQ(q->dims, (std::vector<std::int64_t>{256, 256}));
    if (arch == "qwen2") {
      for (const char* b : {"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.attn_v.bias"}) {
        const GgufTensor* t = f.find_tensor(b);
        ASSERT_NE(t, nullptr) << b;
        EXPECT_EQ(t->ggml_type, 0u) << b;
      }
    } else {
      const GgufTensor* qn = f.find_tensor("blk.0.attn_q_norm.weight");
      ASSERT_NE(qn, nullptr);
      EXPECT_EQ(qn->dims, (std::vector<std::int64_t>{64}));
      EXPECT_NE(f.find_tensor("blk.0.attn_k_norm.weight"), nullptr);
    }
  }
}

// The file's tensors are the ones quantise-on-load (Checkpoint::quantize) makes from the same
// checkpoint, byte for byte (llama's q/k rows in llama.cpp's order: row 2j + h of a head is HF
// row h * head_dim / 2 + j), so a run of the file and a --quantize run multiply the same weights.
TEST(Quantize, TensorsEqualQuantiseOnLoad) {
  REQUIRE_NUMPY();
  const TempDir dir("quantize-onload");
  for (const std::string arch : {"llama", "qwen2"}) {
    const std::string src = make_source(dir, arch, arch);
    for (const std::string type : {"q8_0", "q4_0", "q4_k", "Q2_K", "IQ4_XS"}) {
      const GgufFile f(quantize(src, dir / (arch + "-" + type + ".gguf"), type));
      Checkpoint ckpt(src);
      ThreadPool pool(2);
      const QuantMix mix = quantize_flag("type", type);
      ckpt.quantize(mix, quant_model_facts(load_model_config(src)), pool);
      int compared = 0;
      for (const std::string& hf : ckpt.names()) {
        const std::string name = gguf_tensor_name(hf);
        const GgufTensor* g = f.find_tensor(name);
        ASSERT_NE(g, nullptr) << hf << " → " << name;
        const TensorRef ref = ckpt.get(hf);
        const DType t = ref.info->dtype;
        ASSERT_EQ(g->dtype, t) << name;
        if (ref.info->shape.size() != 2) continue;  // norms, biases: f32 both ways
        const std::int64_t rows = ref.info->shape[0];
        const std::int64_t row_bytes = dtype_row_bytes(t, ref.info->shape[1]);
        ASSERT_EQ(g->bytes, static_cast<std::uint64_t>(rows * row_bytes)) << name;
        const bool permuted = arch == "llama" && (name.find(".attn_q.") != std::string::npos || name.find(".attn_k.") != std::string::npos);
        const auto* ours = static_cast<const std::uint8_t*>(f.data(*g));
        const auto* onload = static_cast<const std::uint8_t*>(ref.data);
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t head = r / 64, within = r % 64;
          const std::int64_t from = permuted ? head * 64 + (within % 2) * 32 + within / 2 : r;
          ASSERT_EQ(std::memcmp(ours + r * row_bytes, onload + from * row_bytes, static_cast<std::size_t>(row_bytes)), 0)
              << arch << " " << type << " " << name << " row " << r;
        }
        ++compared;
      }
      EXPECT_EQ(compared, 16) << arch << " " << type << ": the projections, embedding and lm_head";
      EXPECT_EQ(f.require_int("general.file_type"), quant_mix_info(mix).ftype);
    }
  }
}

// A run of the file in plexus scores a text exactly as the source quantised on load does.
TEST(Quantize, FileRunsLikeQuantiseOnLoad) {
  REQUIRE_NUMPY();
  const TempDir dir("quantize-nll");
  for (const std::string arch : {"qwen2", "llama"}) {
    // With a vocabulary: plexus opens a GGUF file's tokenizer even for --ids.
    const std::string src = dir / arch;
    ASSERT_EQ(run_command("/usr/bin/python3 " + shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/tools/mkmodel.py") + " " +
                          shell_quote(src) + " --preset gguf-small --arch " + arch + " --dtype bf16 --seed 5 --vocab 32000")
                  .exit_code,
              0);
    fs::copy_file(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral/tokenizer.json", src + "/tokenizer.json");
    fs::copy_file(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral/tokenizer_config.json", src + "/tokenizer_config.json");
    const std::string file = quantize(src, dir / (arch + ".gguf"), "q4_0");
    const std::string ids = "1,17,300,5,2047,64,99,31999,3,8";
    const ProcessResult g = run_plexus("perplexity " + shell_quote(file) + " --ids " + ids + " --json --threads 1");
    ASSERT_EQ(g.exit_code, 0) << g.err;
    const ProcessResult q = run_plexus("perplexity " + shell_quote(src) + " --quantize q4_0 --ids " + ids + " --json --threads 1");
    ASSERT_EQ(q.exit_code, 0) << q.err;
    const Json a = Json::parse(g.out), b = Json::parse(q.out);
    ASSERT_EQ(a["nll"].size(), b["nll"].size());
    for (std::size_t i = 0; i < a["nll"].size(); ++i) {
      if (arch == "qwen2") {
        EXPECT_EQ(a["nll"][i].get<double>(), b["nll"][i].get<double>()) << arch << " token " << i;
      } else {  // rope over (2i, 2i+1) pairs of the permuted rows: the same q·k, summed in another order
        EXPECT_NEAR(a["nll"][i].get<double>(), b["nll"][i].get<double>(), 1e-5) << arch << " token " << i;
      }
    }
  }
}

// The tokenizer goes in as llama.cpp reads it, the vocabulary padded to the model's vocab_size
// (llama.cpp wants one token per embedding row), the chat template with it; no tokenizer: a
// warning that llama.cpp needs one.
TEST(Quantize, CarriesTheTokenizer) {
  REQUIRE_NUMPY();
  const TempDir dir("quantize-tok");
  const std::string src = dir / "src";
  ASSERT_EQ(run_command("/usr/bin/python3 " + shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/tools/mkmodel.py") + " " +
                        shell_quote(src) + " --preset gguf-small --arch llama --dtype bf16 --seed 1 --vocab 32016")
                .exit_code,
            0);
  const std::string tok = std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral";
  fs::copy_file(tok + "/tokenizer.json", src + "/tokenizer.json");
  Json config = Json::parse(read_text(tok + "/tokenizer_config.json"));
  const std::string tmpl = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}";
  config["chat_template"] = tmpl;
  write_text(src + "/tokenizer_config.json", config.dump());
  const ProcessResult r = run_plexus("quantize " + shell_quote(src) + " " + shell_quote(dir / "t.gguf") + " --type q4_0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  const GgufFile f(dir / "t.gguf");
  EXPECT_EQ(f.require_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.require_int("tokenizer.ggml.bos_token_id"), 1);
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  const GgufValue* types = f.find("tokenizer.ggml.token_type");
  const GgufValue* scores = f.find("tokenizer.ggml.scores");
  ASSERT_TRUE(tokens && types && scores);
  ASSERT_EQ(tokens->arr.size(), 32016u);
  ASSERT_EQ(types->arr.size(), 32016u);
  ASSERT_EQ(scores->arr.size(), 32016u);
  EXPECT_EQ(tokens->arr[1].s, "<s>");
  EXPECT_EQ(tokens->arr[32010].s, "[PAD32010]");
  EXPECT_EQ(types->arr[32010].i, 5);
  EXPECT_EQ(gguf_chat_template(f), tmpl);

  fs::remove(src + "/tokenizer.json");
  fs::remove(src + "/tokenizer_config.json");
  const ProcessResult bare = run_plexus("quantize " + shell_quote(src) + " " + shell_quote(dir / "bare.gguf"));
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_NE(bare.err.find("llama.cpp needs"), std::string::npos) << bare.err;
  EXPECT_EQ(GgufFile(dir / "bare.gguf").find("tokenizer.ggml.model"), nullptr);
}

// Llama 3 rope scaling travels as llama.cpp's rope_freqs.weight: per frequency of a head, the
// divisor of its angle (1 for short wavelengths, the factor for long ones, a blend between).
TEST(Quantize, Llama3RopeScalingBecomesRopeFreqs) {
  REQUIRE_NUMPY();
  const TempDir dir("quantize-rope");
  const std::string src = make_source(dir, "llama");
  testing::patch_config(src, Json{{"rope_theta", 500000.0},
                                  {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                                                    {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}});
  const GgufFile f(quantize(src, dir / "rope.gguf", "q8_0"));
  const GgufTensor* t = f.find_tensor("rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->dims, (std::vector<std::int64_t>{32}));
  ASSERT_EQ(t->ggml_type, 0u);
  const auto* v = static_cast<const float*>(f.data(*t));
  const double pi = 3.14159265358979323846;
  for (int i = 0; i < 32; ++i) {
    const double wavelen = 2 * pi * std::pow(500000.0, 2.0 * i / 64);
    double want = 1;
    if (wavelen > 8192) want = 32;
    else if (wavelen >= 8192 / 4.0) {
      const double smooth = (8192 / wavelen - 1) / (4 - 1);
      want = 1 / ((1 - smooth) / 32 + smooth);
    }
    EXPECT_FLOAT_EQ(v[i], static_cast<float>(want)) << "frequency " << i;
  }
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[31], 32.0f);
  EXPECT_EQ(f.find("llama.rope.scaling.type"), nullptr);
  EXPECT_EQ(f.get_float("llama.rope.freq_base"), 500000.0);
}

// Rows no 256-block divides fall back as llama.cpp's table says (Q4_K → Q5_0 for the tiny preset's
// rows of 64), and rows 32 does not divide either (its ffn_down's 176) are F16; plexus runs the file.
TEST(Quantize, RowsNoBlockDividesFallBackAsLlamaCpp) {
  const TempDir dir("quantize-fallback");
  const std::string model = dir / "tiny";
  MakeModelOptions o;
  o.vocab_size = 300;
  write_random_model(model, o);
  const GgufFile f(quantize(model, dir / "tiny.gguf", "Q4_K_M"));
  const auto type_of = [&](const char* name) {
    const GgufTensor* t = f.find_tensor(name);
    return t ? static_cast<int>(t->ggml_type) : -1;
  };
  EXPECT_EQ(type_of("blk.1.attn_q.weight"), 6) << "Q4_K falls back to Q5_0";
  EXPECT_EQ(type_of("blk.0.attn_v.weight"), 6);
  EXPECT_EQ(type_of("blk.3.attn_v.weight"), 8) << "Q6_K (the last layer's more bits) falls back to Q8_0";
  EXPECT_EQ(type_of("blk.1.ffn_down.weight"), 1) << "176 columns: F16";
  EXPECT_EQ(type_of("blk.1.ffn_up.weight"), 6);
  EXPECT_EQ(type_of("output.weight"), 8);
  const ProcessResult r = run_plexus("perplexity " + shell_quote(dir / "tiny.gguf") + " --ids 1,2,3,4 --json --threads 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(Quantize, TiedEmbeddingsWriteNoOutputTensor) {
  REQUIRE_NUMPY();
  const TempDir dir("quantize-tied");
  const std::string src = make_source(dir, "llama");
  testing::patch_config(src, Json{{"tie_word_embeddings", true}});
  const GgufFile f(quantize(src, dir / "tied.gguf", "q4_0"));
  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
  EXPECT_NE(f.find_tensor("output_norm.weight"), nullptr);
  EXPECT_EQ(f.tensors().size(), 1u + 2 * 9 + 1);
}

TEST(Quantize, BadInputExitsTwoAndLeavesNothing) {
  const TempDir dir("quantize-bad");
  const std::string model = dir / "tiny";
  MakeModelOptions o;
  o.vocab_size = 300;
  write_random_model(model, o);
  const auto expect_exit2 = [&](const std::string& args, const std::string& mention) {
    const ProcessResult r = run_plexus("quantize " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(mention), std::string::npos) << args << ": " << r.err;
  };
  expect_exit2(shell_quote(dir / "missing") + " " + shell_quote(dir / "a.gguf"), "missing");
  expect_exit2(shell_quote(model) + " " + shell_quote(dir / "a.gguf") + " --type iq4_x", "did you mean 'IQ4_XS'");
  expect_exit2(shell_quote(model) + " " + shell_quote(dir / "a.gguf") + " --type q4_k_x", "Q4_K_M, Q4_K_S");
  expect_exit2(shell_quote(model) + " " + shell_quote(dir / "no/such/dir/a.gguf"), "does not exist");
  std::FILE* file = std::fopen((dir / "file").c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fclose(file);
  expect_exit2(shell_quote(model) + " " + shell_quote(dir / "file/a.gguf"), "file");
  expect_exit2(shell_quote(model) + " " + shell_quote(dir.path()), "is a directory");
  expect_exit2(shell_quote(model) + " " + shell_quote(dir / "file"), "--force");
  EXPECT_FALSE(fs::exists(dir / "a.gguf"));
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left " << e.path();
  }
}

// Issue 32 item 13: OUT that is one of the input's files (by any name: the path, a symbolic or
// a hard link) or no regular file (a device, a FIFO) is refused, --force or not; the input
// stays byte for byte and still loads. (--force used to turn model.safetensors into GGUF.)
TEST(Quantize, NeverOverwritesItsInputOrADevice) {
  REQUIRE_NUMPY();
  const TempDir dir("quantize-own");
  const std::string src = make_source(dir, "llama");
  const std::string weights = read_text(src + "/model.safetensors"), config = read_text(src + "/config.json");
  fs::create_symlink(src + "/model.safetensors", dir / "link.gguf");
  fs::create_hard_link(src + "/config.json", dir / "hard.gguf");
  for (const std::string& out : {src + "/model.safetensors", src + "/config.json", dir / "src/../src/config.json",
                                 dir / "link.gguf", dir / "hard.gguf"}) {
    const ProcessResult r = run_plexus("quantize " + shell_quote(src) + " " + shell_quote(out) + " --force");
    EXPECT_EQ(r.exit_code, 2) << out << "\n" << r.err;
    EXPECT_NE(r.err.find("is the input's own file"), std::string::npos) << out << ": " << r.err;
  }
  EXPECT_TRUE(read_text(src + "/model.safetensors") == weights);
  EXPECT_EQ(read_text(src + "/config.json"), config);
  EXPECT_TRUE(fs::is_symlink(dir / "link.gguf"));
  EXPECT_EQ(run_plexus("perplexity " + shell_quote(src) + " --ids 1,2,3").exit_code, 0);
  // A FIFO, and a character device where this user may make one (the audit lost /dev/null).
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  std::vector<std::string> specials = {dir / "fifo"};
  if (::mknod((dir / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) specials.push_back(dir / "null");
  for (const std::string& out : specials) {
    for (const char* force : {"", " --force"}) {
      const ProcessResult r = run_plexus("quantize " + shell_quote(src) + " " + shell_quote(out) + force);
      EXPECT_EQ(r.exit_code, 2) << out << force << "\n" << r.err;
      EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << out << ": " << r.err;
      EXPECT_FALSE(fs::is_regular_file(out)) << out << force << " was replaced";
    }
  }
  // IN_DIR itself must be a model directory, not a file of some other kind.
  const ProcessResult file_in = run_plexus("quantize " + shell_quote(src + "/model.safetensors") + " " + shell_quote(dir / "x.gguf"));
  EXPECT_EQ(file_in.exit_code, 2) << file_in.err;
  EXPECT_NE(file_in.err.find("give a model directory"), std::string::npos) << file_in.err;
  EXPECT_EQ(file_in.err.find("nested deeper"), std::string::npos) << file_in.err;
}

// Issue 32 item 14: a quantize killed mid-write (here by SIGXFSZ at a 2 MiB file-size limit,
// deterministically; SIGKILL leaves the same) leaves its hidden temporary file; the next run in
// that directory removes it (once it is a few seconds old), as it removes any dead writer's, and
// leaves a live writer's alone.
TEST(Quantize, AKilledRunsTemporaryIsRemovedByTheNext) {
  REQUIRE_NUMPY();
  const TempDir dir("quantize-killed");
  const std::string src = make_source(dir, "llama");
  const auto temporaries = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path()))
      if (e.path().filename().string().find(".tmp-") != std::string::npos) names.push_back(e.path().filename().string());
    return names;
  };
  const std::string quantize_args = "quantize " + shell_quote(src) + " " + shell_quote(dir / "q.gguf");
  const ProcessResult killed = run_command("ulimit -c 0; ulimit -f 2048; exec env CUDA_VISIBLE_DEVICES= " + shell_quote(PLEXUS_BINARY) + " " + quantize_args);
  ASSERT_EQ(killed.exit_code, 128 + SIGXFSZ) << killed.err;
  ASSERT_EQ(temporaries().size(), 1u) << "the killed run left no temporary file to clean";
  EXPECT_FALSE(fs::exists(dir / "q.gguf"));
  // Removed once it is a few seconds old (a fresh unlocked one may be a writer about to lock it):
  // aged here instead of waiting.
  const fs::path killed_temp = dir / temporaries().front();
  fs::last_write_time(killed_temp, fs::last_write_time(killed_temp) - std::chrono::minutes(1));
  // A temporary whose writer is alive (this test process, holding no lock) stays.
  const std::string live = dir / (".other.gguf.tmp-" + std::to_string(::getpid()) + "-0");
  write_text(live, "x");
  const ProcessResult next = run_plexus(quantize_args);
  ASSERT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(temporaries(), std::vector<std::string>{fs::path(live).filename().string()});
  EXPECT_TRUE(GgufFile::is_gguf(dir / "q.gguf"));
}

}  // namespace
}  // namespace plexus
