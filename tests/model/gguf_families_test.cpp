// GGUF in and out for llama.cpp's gemma2, gemma3, phi3 and gpt2: make-model's tiny checkpoints
// written by export_gguf (plexus quantize) with llama.cpp's keys and tensor names, read back
// scoring as the safetensors run does; Gemma's norms stored as (1 + w), GPT-2's matrices
// [out, in] with q/k/v fused, Phi-3's fused tensors and LongRoPE factors; Q8_0; the tokenizer;
// files missing a key or tensor refused naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "core/gguf_file.h"
#include "core/gguf_writer.h"
#include "core/json.h"
#include "model/config_gemma.h"
#include "model/gguf_export.h"
#include "model/make_model.h"
#include "model/safetensors.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::ProcessResult;
using testing::TempDir;
using testing::run_plexus;
using testing::shell_quote;
namespace fs = std::filesystem;

constexpr std::int64_t kFamiliesVocab = 3000;

// What llama.cpp's converter writes for each architecture (gguf-py's constants and
// convert_hf_to_gguf.py's Gemma2Model, Gemma3Model, Phi3MiniModel, GPT2Model), written once: the
// <arch>.* keys it must find, and the parts of every block (blk.N.PART.weight, and .bias where
// listed) besides the whole-model tensors.
struct FamilyFacts {
  Arch arch;
  const char* gguf_arch;
  std::vector<std::string> keys;         // after "<arch>."
  std::vector<std::string> block_parts;  // blk.N.<part>.weight
  std::vector<std::string> block_biases;  // blk.N.<part>.bias
  std::vector<std::string> top;          // whole-model tensors
  Json patch;                            // config.json fields changed from make-model's tiny model
};

std::vector<FamilyFacts> family_facts() {
  const std::vector<std::string> gemma_common = {"context_length", "embedding_length", "block_count", "feed_forward_length",
                                                 "attention.head_count", "attention.head_count_kv", "attention.key_length",
                                                 "attention.value_length", "attention.layer_norm_rms_epsilon", "attention.sliding_window"};
  const std::vector<std::string> gemma_parts = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "post_attention_norm",
                                                "ffn_norm", "ffn_gate", "ffn_up", "ffn_down", "post_ffw_norm"};
  FamilyFacts gemma2{Arch::kGemma2, "gemma2", gemma_common, gemma_parts, {}, {"token_embd.weight", "output_norm.weight"},
                     // soft-caps small enough to act on the tiny model; query_pre_attn_scalar = head_dim, as llama.cpp derives it
                     Json{{"attn_logit_softcapping", 1.0}, {"final_logit_softcapping", 1.5}, {"query_pre_attn_scalar", 16}}};
  gemma2.keys.insert(gemma2.keys.end(), {"attn_logit_softcapping", "final_logit_softcapping"});
  FamilyFacts gemma3{Arch::kGemma3, "gemma3", gemma_common, gemma_parts, {}, {"token_embd.weight", "output_norm.weight"}, nullptr};
  gemma3.keys.insert(gemma3.keys.end(), {"rope.freq_base", "rope.scaling.type", "rope.scaling.factor", "attention.sliding_window_pattern"});
  gemma3.block_parts.insert(gemma3.block_parts.end(), {"attn_q_norm", "attn_k_norm"});
  FamilyFacts phi3{Arch::kPhi3,
                   "phi3",
                   {"context_length", "rope.scaling.original_context_length", "embedding_length", "feed_forward_length", "block_count",
                    "attention.head_count", "attention.head_count_kv", "attention.layer_norm_rms_epsilon", "rope.dimension_count",
                    "rope.freq_base", "attention.sliding_window", "rope.scaling.attn_factor"},
                   {"attn_norm", "attn_qkv", "attn_output", "ffn_norm", "ffn_up", "ffn_down"},
                   {},
                   {"token_embd.weight", "output_norm.weight", "output.weight", "rope_factors_long.weight", "rope_factors_short.weight"},
                   nullptr};
  FamilyFacts gpt2{Arch::kGpt2,
                   "gpt2",
                   {"context_length", "embedding_length", "block_count", "feed_forward_length", "attention.head_count",
                    "attention.layer_norm_epsilon"},
                   {"attn_norm", "attn_qkv", "attn_output", "ffn_norm", "ffn_up", "ffn_down"},
                   {"attn_norm", "attn_qkv", "attn_output", "ffn_norm", "ffn_up", "ffn_down"},
                   {"token_embd.weight", "position_embd.weight", "output_norm.weight", "output_norm.bias", "output.weight"},
                   nullptr};
  return {gemma2, gemma3, phi3, gpt2};
}

std::string make_family_model(const TempDir& dir, const FamilyFacts& f) {
  const std::string m = dir / f.gguf_arch;
  MakeModelOptions o;
  o.arch = f.arch;
  o.dtype = DType::kF32;
  o.seed = 17;
  o.std = 0.1;
  o.vocab_size = kFamiliesVocab;
  write_random_model(m, o);
  if (!f.patch.is_null()) testing::patch_config(m, f.patch);
  return m;
}

std::string export_family(const std::string& src, const std::string& out, QuantMix mix, std::optional<DType> float_type) {
  GgufExportOptions o;
  o.mix = mix;
  o.float_type = float_type;
  o.threads = 1;
  export_gguf(src, out, o);
  return out;
}

// `plexus perplexity` of MODEL on IDS with EXTRA options, per-token NLL.
std::vector<double> families_cli_nll(const std::string& model, const std::vector<std::int32_t>& ids, const std::string& extra) {
  std::string csv;
  for (std::int32_t id : ids) csv += (csv.empty() ? "" : ",") + std::to_string(id);
  const ProcessResult r = run_plexus("perplexity " + shell_quote(model) + " --ids " + csv + " --json --threads 1 " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return {};
  return Json::parse(r.out)["nll"].get<std::vector<double>>();
}

std::vector<double> families_nll(const std::string& model, const std::vector<std::int32_t>& ids) {
  EngineOptions eo;
  eo.max_batch_tokens = 64;
  eo.threads = 1;
  Engine engine(model, eo);
  return perplexity(engine, ids).nll;
}

float gguf_f32_at(const GgufFile& f, const std::string& tensor, std::int64_t i) {
  const GgufTensor* t = f.find_tensor(tensor);
  EXPECT_NE(t, nullptr) << tensor;
  if (!t) return NAN;
  EXPECT_EQ(t->ggml_type, 0u) << tensor;
  float x;
  std::memcpy(&x, static_cast<const char*>(f.data(*t)) + i * 4, 4);
  return x;
}

float safetensors_f32_at(const std::string& dir, const std::string& name, std::int64_t i) {
  const SafetensorsFile s(dir + "/model.safetensors");
  const TensorInfo* t = s.find(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return NAN;
  float x;
  std::memcpy(&x, static_cast<const char*>(s.data(*t)) + i * 4, 4);
  return x;
}

class GgufFamilies : public ::testing::TestWithParam<FamilyFacts> {};

std::string family_name(const ::testing::TestParamInfo<FamilyFacts>& p) { return p.param.gguf_arch; }

// The F32 file has llama.cpp's keys and names, and scores 24 tokens (past the tiny models'
// sliding window of 8 and Phi-3's original 16 positions) as the safetensors checkpoint does.
TEST_P(GgufFamilies, F32FileHasLlamaCppLayoutAndScoresAsSafetensors) {
  const FamilyFacts& facts = GetParam();
  const TempDir dir(std::string("gguf-fam-") + facts.gguf_arch);
  const std::string src = make_family_model(dir, facts);
  const std::string file = export_family(src, dir / "f32.gguf", QuantMix::kQ8_0, DType::kF32);
  const ModelConfig c = load_model_config(src);
  {
    const GgufFile f(file);
    EXPECT_EQ(f.require_string("general.architecture"), facts.gguf_arch);
    for (const std::string& k : facts.keys) EXPECT_NE(f.find(std::string(facts.gguf_arch) + "." + k), nullptr) << k;
    std::set<std::string> want(facts.top.begin(), facts.top.end()), got;
    for (std::int64_t l = 0; l < c.num_layers; ++l) {
      for (const std::string& p : facts.block_parts) want.insert("blk." + std::to_string(l) + "." + p + ".weight");
      for (const std::string& p : facts.block_biases) want.insert("blk." + std::to_string(l) + "." + p + ".bias");
    }
    for (const GgufTensor& t : f.tensors()) got.insert(t.name);
    EXPECT_EQ(got, want);
    // Fused matrices as llama.cpp has them (ne: innermost first).
    const std::int64_t H = c.hidden_size;
    if (facts.arch == Arch::kPhi3) {
      EXPECT_EQ(f.find_tensor("blk.0.attn_qkv.weight")->dims, (std::vector<std::int64_t>{H, c.q_dim() + 2 * c.kv_dim()}));
      EXPECT_EQ(f.find_tensor("blk.0.ffn_up.weight")->dims, (std::vector<std::int64_t>{H, 2 * c.intermediate_size}));
      EXPECT_EQ(f.require_int("phi3.rope.dimension_count"), c.rotary_dim());
      EXPECT_EQ(c.rotary_dim(), 12);  // partial rotary: 0.75 of 16
      EXPECT_EQ(f.find_tensor("rope_factors_long.weight")->dims, (std::vector<std::int64_t>{c.rotary_dim() / 2}));
      const Json cfg = read_json_file(src + "/config.json");
      for (std::int64_t i = 0; i < c.rotary_dim() / 2; ++i) {
        EXPECT_EQ(gguf_f32_at(f, "rope_factors_long.weight", i), static_cast<float>(cfg["rope_scaling"]["long_factor"][i].get<double>()));
        EXPECT_EQ(gguf_f32_at(f, "rope_factors_short.weight", i), static_cast<float>(cfg["rope_scaling"]["short_factor"][i].get<double>()));
      }
    }
    if (facts.arch == Arch::kGpt2) {
      EXPECT_EQ(f.find_tensor("blk.0.attn_qkv.weight")->dims, (std::vector<std::int64_t>{H, 3 * H}));
      EXPECT_EQ(f.find_tensor("position_embd.weight")->dims, (std::vector<std::int64_t>{H, c.max_position_embeddings}));
      // [out, in]: element (out r, in k) of attn_qkv is Hugging Face's Conv1D c_attn[k][r].
      for (const auto& [r, k] : {std::pair<std::int64_t, std::int64_t>{0, 1}, {H + 5, 7}, {2 * H + 9, H - 1}})
        EXPECT_EQ(gguf_f32_at(f, "blk.1.attn_qkv.weight", r * H + k), safetensors_f32_at(src, "transformer.h.1.attn.c_attn.weight", k * 3 * H + r));
      EXPECT_EQ(gguf_f32_at(f, "blk.1.attn_qkv.bias", H + 3), safetensors_f32_at(src, "transformer.h.1.attn.c_attn.bias", H + 3));
    }
    if (is_gemma_arch(facts.arch)) {
      // llama.cpp's converter stores Gemma's RMSNorm weights as (1 + w).
      std::vector<std::pair<std::string, std::string>> norms = {{"output_norm.weight", "model.norm.weight"},
                                                                {"blk.2.attn_norm.weight", "model.layers.2.input_layernorm.weight"},
                                                                {"blk.2.post_ffw_norm.weight", "model.layers.2.post_feedforward_layernorm.weight"},
                                                                {"blk.2.ffn_norm.weight", "model.layers.2.pre_feedforward_layernorm.weight"}};
      if (facts.arch == Arch::kGemma3) norms.push_back({"blk.1.attn_k_norm.weight", "model.layers.1.self_attn.k_norm.weight"});
      for (const auto& [g, hf] : norms) {
        for (std::int64_t i : {0, 5}) {
          const float w = safetensors_f32_at(src, hf, i);
          EXPECT_NE(w, 0.0f) << hf;
          EXPECT_EQ(gguf_f32_at(f, g, i), 1.0f + w) << g;
        }
      }
      // The tiny gemma3's layers slide with a period of 3, not llama.cpp's default 6: the key says
      // so; gemma2's even layers are llama.cpp's default.
      if (facts.arch == Arch::kGemma3) EXPECT_EQ(f.require_int("gemma3.attention.sliding_window_pattern"), 3);
      else EXPECT_EQ(f.find("gemma2.attention.sliding_window_pattern"), nullptr);
      // query_pre_attn_scalar 24 is not llama.cpp's derivation (head_dim 16): plexus's own key.
      EXPECT_EQ(f.find(std::string(facts.gguf_arch) + ".attention.scale") != nullptr, c.query_pre_attn_scalar != 16) << facts.gguf_arch;
    }
  }
  const std::vector<std::int32_t> ids = testing::some_ids(24, kFamiliesVocab, 41);
  const std::vector<double> want = families_nll(src, ids), got = families_nll(file, ids);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << facts.gguf_arch << " token " << i;

  // Q8_0 scores as the checkpoint quantised to Q8_0 on load does (the same blocks), near the f32 run.
  const std::string q8 = export_family(src, dir / "q8.gguf", QuantMix::kQ8_0, std::nullopt);
  EXPECT_EQ(GgufFile(q8).find_tensor("blk.0.attn_output.weight")->ggml_type, 8u);  // Q8_0
  const std::vector<double> q = families_cli_nll(q8, ids, ""), on_load = families_cli_nll(src, ids, "--quantize q8_0");
  ASSERT_EQ(q.size(), want.size());
  ASSERT_EQ(on_load.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(q[i], on_load[i], 1e-5) << facts.gguf_arch << " Q8_0 token " << i;
    EXPECT_NEAR(q[i], want[i], 0.2) << facts.gguf_arch << " Q8_0 token " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, GgufFamilies, ::testing::ValuesIn(family_facts()), family_name);

// A copy of FROM without metadata key DROP_KEY and tensor DROP_TENSOR (either may be empty).
void copy_gguf_dropping(const std::string& from, const std::string& to, const std::string& drop_key, const std::string& drop_tensor) {
  const GgufFile f(from);
  GgufWriter w;
  for (const auto& [k, v] : f.metadata())
    if (k != drop_key) w.add(k, v);
  for (const GgufTensor& t : f.tensors()) {
    if (t.name == drop_tensor) continue;
    const void* data = f.data(t);
    const std::uint64_t bytes = t.bytes;
    w.add_tensor(t.name, t.dims, t.ggml_type, bytes, [data, bytes](void* dst) { std::memcpy(dst, data, bytes); });
  }
  w.write(to);
}

// A file missing a key llama.cpp requires, or one of the model's tensors: exit 2 naming it.
TEST(GgufFamiliesBadInput, MissingKeyOrTensorExitsTwoNamingIt) {
  const TempDir dir("gguf-fam-bad");
  struct Bad {
    const char* arch;
    const char* key;
    const char* tensor;
    const char* named;  // in the message
  };
  const Bad cases[] = {
      {"gemma2", "gemma2.attention.layer_norm_rms_epsilon", "", "gemma2.attention.layer_norm_rms_epsilon"},
      {"gemma3", "gemma3.attention.layer_norm_rms_epsilon", "", "gemma3.attention.layer_norm_rms_epsilon"},
      {"gemma3", "", "blk.1.post_ffw_norm.weight", "post_feedforward_layernorm"},
      {"phi3", "phi3.rope.scaling.original_context_length", "", "phi3.rope.scaling.original_context_length"},
      {"phi3", "", "rope_factors_short.weight", "rope_factors_short.weight"},
      {"gpt2", "gpt2.attention.layer_norm_epsilon", "", "gpt2.attention.layer_norm_epsilon"},
      {"gpt2", "", "position_embd.weight", "positions"},
  };
  std::map<std::string, std::string> files;
  for (const FamilyFacts& f : family_facts()) files[f.gguf_arch] = export_family(make_family_model(dir, f), dir / (std::string(f.gguf_arch) + ".gguf"), QuantMix::kQ8_0, DType::kF32);
  for (const Bad& b : cases) {
    const std::string bad = dir / (std::string(b.arch) + "-bad.gguf");
    copy_gguf_dropping(files[b.arch], bad, b.key, b.tensor);
    const ProcessResult r = run_plexus("perplexity " + shell_quote(bad) + " --ids 1,2,3,4 --threads 1");
    EXPECT_EQ(r.exit_code, 2) << b.arch << " " << b.key << b.tensor << ": " << r.err;
    EXPECT_NE(r.err.find(b.named), std::string::npos) << r.err;
  }
}

// The tokenizer goes in as llama.cpp reads it: GPT-2's byte-level BPE as "gpt2" (pre "gpt-2",
// merges), a SentencePiece-style one (Phi-3 with a Llama-2 vocabulary) as "llama" with scores;
// the GGUF vocabulary encodes text to the tokenizer.json's ids.
TEST(GgufFamiliesTokenizer, RoundTripsThroughTheFile) {
  const TempDir dir("gguf-fam-tok");
  const std::string golden = std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/";
  const std::string text = "Hello world!  The quick brown fox, 123 ünïcode\n\tend";
  for (const FamilyFacts& f : family_facts()) {
    if (f.arch != Arch::kGpt2 && f.arch != Arch::kPhi3) continue;
    const std::string src = make_family_model(dir, f);
    const std::string tok = golden + (f.arch == Arch::kGpt2 ? "gpt2/" : "mistral/");
    fs::copy_file(tok + "tokenizer.json", src + "/tokenizer.json");
    fs::copy_file(tok + "tokenizer_config.json", src + "/tokenizer_config.json");
    const std::string file = export_family(src, dir / (std::string(f.gguf_arch) + "-tok.gguf"), QuantMix::kQ8_0, DType::kF32);
    const GgufFile g(file);
    if (f.arch == Arch::kGpt2) {
      EXPECT_EQ(g.require_string("tokenizer.ggml.model"), "gpt2");
      EXPECT_EQ(g.require_string("tokenizer.ggml.pre"), "gpt-2");
      EXPECT_EQ(g.array_length("tokenizer.ggml.merges").value_or(0), 50000u);
    } else {
      EXPECT_EQ(g.require_string("tokenizer.ggml.model"), "llama");
      EXPECT_EQ(g.array_length("tokenizer.ggml.scores").value_or(0), 32000u);
    }
    const ProcessResult a = run_plexus("tokenize " + shell_quote(src) + " --text " + shell_quote(text));
    const ProcessResult b = run_plexus("tokenize " + shell_quote(file) + " --text " + shell_quote(text));
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const Json ja = Json::parse(a.out), jb = Json::parse(b.out);
    EXPECT_GT(ja["ids"].size(), 10u);
    EXPECT_EQ(ja["ids_with_special"], jb["ids_with_special"]) << f.gguf_arch;
  }
}

}  // namespace
}  // namespace plexus
