// GGUF metadata -> ModelConfig (through the same checks as config.json) and GGUF tensor names ->
// Hugging Face names.
#include "model/gguf_model.h"

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "core/json.h"

namespace plexus {

bool is_gguf_model_path(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && GgufFile::is_gguf(path);
}

namespace {

struct ArchKeys {
  const char* gguf;
  const char* hf;
  const char* model_type;
};
constexpr ArchKeys kArchs[] = {
    {"llama", "LlamaForCausalLM", "llama"},
    {"qwen2", "Qwen2ForCausalLM", "qwen2"},
    {"qwen3", "Qwen3ForCausalLM", "qwen3"},
};

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f) {
  const std::string& path = f.path();
  const std::string arch = f.require_string("general.architecture");
  const ArchKeys* keys = nullptr;
  for (const ArchKeys& a : kArchs)
    if (arch == a.gguf) keys = &a;
  if (!keys)
    throw InputError(path + ": general.architecture is '" + arch + "'; plexus runs GGUF models of architecture llama, qwen2, qwen3");
  const std::string p = arch + ".";

  // The same checks as config.json: build the equivalent and parse it.
  Json j = Json::object();
  j["architectures"] = Json::array({keys->hf});
  j["model_type"] = keys->model_type;
  j["hidden_size"] = f.require_int(p + "embedding_length");
  j["num_hidden_layers"] = f.require_int(p + "block_count");
  j["num_attention_heads"] = f.require_int(p + "attention.head_count");
  if (auto kv = f.get_int(p + "attention.head_count_kv")) j["num_key_value_heads"] = *kv;
  if (auto hd = f.get_int(p + "attention.key_length")) {
    j["head_dim"] = *hd;
    if (auto vd = f.get_int(p + "attention.value_length"); vd && *vd != *hd)
      throw InputError(path + ": " + p + "attention.value_length (" + std::to_string(*vd) + ") differs from key_length (" +
                       std::to_string(*hd) + "); plexus needs them equal");
  }
  j["intermediate_size"] = f.require_int(p + "feed_forward_length");
  // The vocabulary is the embedding's rows; the token list (or <arch>.vocab_size) when the
  // embedding tensor is missing (the checkpoint reports that).
  std::int64_t vocab = 0;
  if (const GgufTensor* e = f.find_tensor("token_embd.weight"); e && e->dims.size() == 2) vocab = e->dims[1];
  else if (auto n = f.array_length("tokenizer.ggml.tokens")) vocab = static_cast<std::int64_t>(*n);
  else if (auto v = f.get_int(p + "vocab_size")) vocab = *v;
  else throw InputError(path + ": no vocabulary size: no token_embd.weight, tokenizer.ggml.tokens or " + p + "vocab_size");
  j["vocab_size"] = vocab;
  if (auto ctx = f.get_int(p + "context_length")) j["max_position_embeddings"] = *ctx;
  // Float values are checked here, under their GGUF keys, by config.json's rules (a NaN epsilon
  // ran with NaN perplexity; a rope base of 0 or NaN ran a different model).
  const auto checked_float = [&](const char* config_key, const std::string& gguf_key) -> std::optional<double> {
    const std::optional<double> v = f.get_float(gguf_key);
    if (v) check_float_hyper_parameter(config_key, *v, path, gguf_key);
    return v;
  };
  if (auto eps = checked_float("rms_norm_eps", p + "attention.layer_norm_rms_epsilon")) j["rms_norm_eps"] = *eps;
  if (auto theta = checked_float("rope_theta", p + "rope.freq_base")) j["rope_theta"] = *theta;
  j["tie_word_embeddings"] = f.find_tensor("output.weight") == nullptr;
  // Rope scaling as llama.cpp reads it: the type defaults to linear; the factor is
  // rope.scaling.factor, or the older rope.scale_linear; a factor of 0 (or type none) is none.
  const std::string type = f.get_string(p + "rope.scaling.type").value_or("linear");
  if (type != "none" && type != "linear")
    throw InputError(path + ": " + p + "rope.scaling.type is '" + type + "'; plexus supports none and linear for GGUF files");
  const std::string factor_key = f.find(p + "rope.scaling.factor") || !f.find(p + "rope.scale_linear") ? p + "rope.scaling.factor"
                                                                                                         : p + "rope.scale_linear";
  const std::optional<double> factor = f.get_float(factor_key);
  if (type == "linear" && factor && *factor != 0) {
    j["rope_scaling"] = {{"type", "linear"}, {"factor", check_float_hyper_parameter("factor", *factor, path, factor_key)}};
  }
  if (auto bos = f.get_int("tokenizer.ggml.bos_token_id")) j["bos_token_id"] = *bos;
  if (auto eos = f.get_int("tokenizer.ggml.eos_token_id")) j["eos_token_id"] = *eos;

  ModelConfig c = parse_model_config(j, path + " (GGUF metadata)");
  if (auto rd = f.get_int(p + "rope.dimension_count"); rd && *rd != c.head_dim)
    throw InputError(path + ": " + p + "rope.dimension_count is " + std::to_string(*rd) + " but head_dim is " +
                     std::to_string(c.head_dim) + "; partial rotary embeddings are not supported");
  c.rope_interleaved = c.arch == Arch::kLlama;
  // llama3-style scaling: the converter stores the per-frequency divisors as a tensor.
  if (const GgufTensor* rf = f.find_tensor("rope_freqs.weight")) {
    if (rf->ggml_type != 0 || rf->dims.size() != 1 || rf->dims[0] != c.head_dim / 2)
      throw InputError(path + ": tensor 'rope_freqs.weight' must be F32 of " + std::to_string(c.head_dim / 2) + " elements (head_dim / 2)");
    const auto* v = static_cast<const float*>(f.data(*rf));
    for (std::int64_t i = 0; i < rf->dims[0]; ++i) {
      float x;
      std::memcpy(&x, v + i, sizeof x);
      if (!(x > 0.0f) || !std::isfinite(x))
        throw InputError(path + ": tensor 'rope_freqs.weight' element " + std::to_string(i) + " is " + std::to_string(x) + "; must be positive");
      c.rope_freq_factors.push_back(x);
    }
  }
  return c;
}

std::span<const GgufNamePair> gguf_top_level_names() {
  static const GgufNamePair kNames[] = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output.weight", "lm_head.weight"},
      {"output_norm.weight", "model.norm.weight"},
  };
  return kNames;
}

std::span<const GgufNamePair> gguf_layer_part_names() {
  static const GgufNamePair kParts[] = {
      {"attn_norm", "input_layernorm"},    {"ffn_norm", "post_attention_layernorm"},
      {"attn_q", "self_attn.q_proj"},      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},      {"attn_output", "self_attn.o_proj"},
      {"attn_q_norm", "self_attn.q_norm"}, {"attn_k_norm", "self_attn.k_norm"},
      {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
  };
  return kParts;
}

std::optional<std::string> hf_name_of_gguf_tensor(const std::string& name) {
  for (const GgufNamePair& n : gguf_top_level_names())
    if (name == n.gguf) return std::string(n.hf);
  if (name.rfind("blk.", 0) != 0) return std::nullopt;
  const std::size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return std::nullopt;
  const std::string layer = name.substr(4, dot - 4);
  if (layer.size() > 6 || layer.find_first_not_of("0123456789") != std::string::npos || (layer.size() > 1 && layer[0] == '0'))
    return std::nullopt;
  const std::size_t last = name.rfind('.');
  if (last <= dot) return std::nullopt;
  const std::string part = name.substr(dot + 1, last - dot - 1);
  const std::string suffix = name.substr(last + 1);  // weight | bias
  if (suffix != "weight" && suffix != "bias") return std::nullopt;
  for (const GgufNamePair& p : gguf_layer_part_names())
    if (part == p.gguf) return "model.layers." + layer + "." + p.hf + "." + suffix;
  return std::nullopt;
}

}  // namespace plexus
