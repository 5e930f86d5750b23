// config.json parsing for the supported decoder-only architectures.
#include "model/config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "core/mmap_file.h"
#include "model/config_gemma.h"
#include "model/gguf_model.h"

namespace plexus {

std::string_view arch_name(Arch a) {
  switch (a) {
    case Arch::kLlama: return "LlamaForCausalLM";
    case Arch::kMistral: return "MistralForCausalLM";
    case Arch::kQwen2: return "Qwen2ForCausalLM";
    case Arch::kQwen3: return "Qwen3ForCausalLM";
    case Arch::kMixtral: return "MixtralForCausalLM";
    case Arch::kQwen3Moe: return "Qwen3MoeForCausalLM";
    case Arch::kGptOss: return "GptOssForCausalLM";
    case Arch::kPhi3: return "Phi3ForCausalLM";
    case Arch::kGemma2: return "Gemma2ForCausalLM";
    case Arch::kGemma3: return "Gemma3ForCausalLM";
    case Arch::kGpt2: return "GPT2LMHeadModel";
  }
  return "?";
}

namespace {

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Upper bounds on config.json's sizes, far above any real model (the largest have hidden_size
// ~2^14, ~2^7 layers, vocabularies ~2^18): inside them every parameter count, byte size and
// per-token size plexus derives fits a 64-bit integer, and nothing sized by them runs before
// they are checked.
constexpr std::int64_t kMaxHiddenSize = 1 << 20;
constexpr std::int64_t kMaxIntermediateSize = 1 << 22;
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxHeads = 4096;
constexpr std::int64_t kMaxHeadDim = 1 << 14;
constexpr std::int64_t kMaxVocab = 1 << 24;
constexpr std::int64_t kMaxPositions = std::int64_t{1} << 30;

std::int64_t positive(const Json& j, const std::string& key, const std::string& where, std::int64_t max) {
  const long long v = json_int(j, key, where);
  if (v <= 0) throw InputError(where + ": field '" + key + "' must be positive, got " + std::to_string(v));
  if (v > max) {
    throw InputError(where + ": field '" + key + "' is " + std::to_string(v) + ", above the " + std::to_string(max) +
                     " plexus supports (no real model comes near): is config.json corrupt?");
  }
  return v;
}

// A special token id of config.json: an integer inside the vocabulary.
std::int64_t special_token_id(const Json& v, const std::string& field, std::int64_t vocab_size, const std::string& where) {
  if (!v.is_number_integer()) throw InputError(where + ": field '" + field + "' must be an integer token id, got " + v.dump());
  const std::optional<std::int64_t> id = json_int64(v);
  if (!id || *id < 0 || *id >= vocab_size) {
    throw InputError(where + ": field '" + field + "' is " + v.dump() + ", outside the vocabulary (vocab_size " +
                     std::to_string(vocab_size) + ": ids 0.." + std::to_string(vocab_size - 1) + ")");
  }
  return *id;
}

// "1e-06", "nan", "-inf": the value as a message shows it.
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The float hyper-parameters' ranges (config.json keys; rope_scaling's fields by their own name).
struct FloatRange {
  std::string_view key;
  double lo;
  bool lo_inclusive;
  double hi;  // inclusive; infinity: no upper bound (the value must still be finite)
  const char* what;
};
constexpr double kNoBound = std::numeric_limits<double>::infinity();
constexpr FloatRange kFloatRanges[] = {
    {"rms_norm_eps", 0, true, 1, "RMSNorm's epsilon: a finite number from 0 to 1"},
    {"layer_norm_epsilon", 0, true, 1, "LayerNorm's epsilon: a finite number from 0 to 1"},
    {"rope_theta", 0, false, kNoBound, "RoPE's base: a finite number more than 0 (models use 1e4 to 1e7)"},
    {"factor", 0, false, kNoBound, "rope_scaling's factor: a finite number more than 0"},
    {"low_freq_factor", 0, false, kNoBound, "a finite number more than 0"},
    {"high_freq_factor", 0, false, kNoBound, "a finite number more than 0, and more than low_freq_factor"},
    {"partial_rotary_factor", 0, false, 1, "the rotated fraction of each head: more than 0 and at most 1"},
    {"beta_fast", 0, false, kNoBound, "a finite number more than 0"},
    {"beta_slow", 0, false, kNoBound, "a finite number more than 0"},
    {"attention_factor", 0, false, kNoBound, "a finite number more than 0"},
    {"mscale", 0, true, kNoBound, "a finite number from 0"},
    {"mscale_all_dim", 0, true, kNoBound, "a finite number from 0"},
    {"swiglu_alpha", 0, false, kNoBound, "a finite number more than 0"},
    {"swiglu_limit", 0, false, kNoBound, "a finite number more than 0"},
};

// Reads the optional number `key` of `obj` (or `fallback`) and checks its range; `shown` names it
// in errors ("rope_scaling.factor").
double float_field(const Json& obj, const std::string& key, double fallback, const std::string& where, const std::string& shown) {
  if (!obj.contains(key) || obj[key].is_null()) return check_float_hyper_parameter(key, fallback, where, shown);
  if (!obj[key].is_number()) throw InputError(where + ": " + shown + " must be a number, got " + obj[key].dump());
  return check_float_hyper_parameter(key, obj[key].get<double>(), where, shown);
}

// Expert counts and widths far above any real model (the largest have 256-512 experts).
constexpr std::int64_t kMaxExperts = 1 << 16;

// The mixture-of-experts fields, under each architecture's config.json names.
void parse_moe(const Json& j, const std::string& where, ModelConfig& c) {
  MoeConfig& m = c.moe;
  if (c.arch == Arch::kMixtral || c.arch == Arch::kGptOss) {
    m.num_experts = positive(j, "num_local_experts", where, kMaxExperts);
    m.expert_intermediate_size = c.intermediate_size;
    if (c.arch == Arch::kGptOss) {  // GptOssConfig's defaults
      m.top_k_then_softmax = m.biases = true;
      m.swiglu_alpha = float_field(j, "swiglu_alpha", 1.702, where, "swiglu_alpha");
      m.swiglu_limit = float_field(j, "swiglu_limit", 7.0, where, "swiglu_limit");
    }
  } else {
    m.num_experts = positive(j, "num_experts", where, kMaxExperts);
    m.expert_intermediate_size = positive(j, "moe_intermediate_size", where, kMaxIntermediateSize);
    m.normalize_top_k = json_bool_or(j, "norm_topk_prob", false, where);
    m.sparse_step = j.contains("decoder_sparse_step") && !j["decoder_sparse_step"].is_null()
                        ? positive(j, "decoder_sparse_step", where, kMaxLayers)
                        : 1;
    if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
      const Json& only = j["mlp_only_layers"];
      if (!only.is_array()) throw InputError(where + ": field 'mlp_only_layers' must be a list of layer indices, got " + only.dump());
      for (std::size_t i = 0; i < only.size(); ++i) {
        const std::optional<std::int64_t> l = only[i].is_number_integer() ? json_int64(only[i]) : std::nullopt;
        if (!l || *l < 0 || *l >= c.num_layers) {
          throw InputError(where + ": mlp_only_layers[" + std::to_string(i) + "] is " + only[i].dump() +
                           "; it must be a layer index from 0 to " + std::to_string(c.num_layers - 1) + " (num_hidden_layers " +
                           std::to_string(c.num_layers) + ")");
        }
        m.mlp_only_layers.push_back(*l);
      }
    }
  }
  m.experts_per_token = c.arch == Arch::kGptOss && (!j.contains("num_experts_per_tok") || j["num_experts_per_tok"].is_null())
                            ? 4  // GptOssConfig's default
                            : positive(j, "num_experts_per_tok", where, kMaxExperts);
  if (m.experts_per_token > m.num_experts) {
    throw InputError(where + ": num_experts_per_tok (" + std::to_string(m.experts_per_token) + ") is more than the " +
                     std::to_string(m.num_experts) + " experts a layer has");
  }
}

}  // namespace

void parse_layer_types(const Json& j, const std::string& where, std::int64_t full_every, ModelConfig& c) {
  c.sliding_layers.assign(static_cast<std::size_t>(c.num_layers), false);
  if (!j.contains("layer_types") || j["layer_types"].is_null()) {
    for (std::int64_t l = 0; l < c.num_layers; ++l) c.sliding_layers[static_cast<std::size_t>(l)] = (l + 1) % full_every != 0;
    return;
  }
  const Json& t = j["layer_types"];
  if (!t.is_array() || static_cast<std::int64_t>(t.size()) != c.num_layers) {
    throw InputError(where + ": field 'layer_types' must be a list of " + std::to_string(c.num_layers) +
                     " entries (num_hidden_layers), got " + t.dump());
  }
  for (std::size_t l = 0; l < t.size(); ++l) {
    const std::string v = t[l].is_string() ? t[l].get<std::string>() : t[l].dump();
    if (v != "sliding_attention" && v != "full_attention") {
      throw InputError(where + ": layer_types[" + std::to_string(l) + "] is '" + v +
                       "'; it must be 'sliding_attention' or 'full_attention'");
    }
    c.sliding_layers[l] = v == "sliding_attention";
  }
}

namespace {

// rope_scaling of type "yarn", as Hugging Face's _compute_yarn_parameters reads it: factor
// (absent: max_position_embeddings / original_max_position_embeddings), beta_fast 32, beta_slow 1,
// truncate true, and the attention factor cos/sin are scaled by.
void parse_yarn(const Json& rs, const std::string& where, ModelConfig& c) {
  const std::string w = where + ": rope_scaling";
  c.rope_scaling = RopeScaling::kYarn;
  c.rope_original_max_position = json_int_or(rs, "original_max_position_embeddings", c.max_position_embeddings, w);
  if (c.rope_original_max_position <= 0 || c.rope_original_max_position > kMaxPositions) {
    throw InputError(where + ": rope_scaling.original_max_position_embeddings is " + std::to_string(c.rope_original_max_position) +
                     "; it must be a positive number of positions");
  }
  c.rope_factor = float_field(rs, "factor",
                              static_cast<double>(c.max_position_embeddings) / static_cast<double>(c.rope_original_max_position),
                              where, "rope_scaling.factor");
  c.rope_beta_fast = float_field(rs, "beta_fast", 32.0, where, "rope_scaling.beta_fast");
  c.rope_beta_slow = float_field(rs, "beta_slow", 1.0, where, "rope_scaling.beta_slow");
  c.rope_truncate = json_bool_or(rs, "truncate", true, w);
  auto mscale = [&c](double m) { return c.rope_factor <= 1 ? 1.0 : 0.1 * m * std::log(c.rope_factor) + 1.0; };
  const double m = float_field(rs, "mscale", 0.0, where, "rope_scaling.mscale");
  const double m_all = float_field(rs, "mscale_all_dim", 0.0, where, "rope_scaling.mscale_all_dim");
  if (rs.contains("attention_factor") && !rs["attention_factor"].is_null()) {
    c.rope_attention_factor = float_field(rs, "attention_factor", 1.0, where, "rope_scaling.attention_factor");
  } else {
    c.rope_attention_factor = m != 0 && m_all != 0 ? mscale(m) / mscale(m_all) : mscale(1.0);
  }
}

// rope_scaling of type "longrope" (Phi-3's; "su" in its first configs) as Hugging Face's
// _compute_longrope_parameters reads a Phi3Config: short_factor and long_factor, rotary_dim/2
// positive numbers each; the original context is config.json's own
// original_max_position_embeddings (Phi3Config's default 4096), factor max_position_embeddings /
// it, and cos/sin scaled by attention_factor (absent: sqrt(1 + ln(factor) / ln(original)), 1 when
// factor <= 1).
void parse_longrope(const Json& j, const Json& rs, const std::string& where, ModelConfig& c) {
  c.rope_scaling = RopeScaling::kLongRope;
  c.rope_original_max_position = json_int_or(j, "original_max_position_embeddings", 4096, where);
  if (c.rope_original_max_position <= 0 || c.rope_original_max_position > kMaxPositions) {
    throw InputError(where + ": original_max_position_embeddings is " + std::to_string(c.rope_original_max_position) +
                     "; it must be a positive number of positions");
  }
  const std::int64_t want = c.rotary_dim() / 2;
  auto factors = [&](const char* key) {
    const std::string shown = std::string("rope_scaling.") + key;
    if (!rs.contains(key) || !rs[key].is_array()) {
      throw InputError(where + ": " + shown + " is " + (rs.contains(key) ? rs[key].dump() : std::string("missing")) +
                       "; longrope needs a list of " + std::to_string(want) + " numbers (rotary_dim / 2)");
    }
    const Json& a = rs[key];
    if (static_cast<std::int64_t>(a.size()) != want) {
      throw InputError(where + ": " + shown + " has " + std::to_string(a.size()) + " entries; it must have " +
                       std::to_string(want) + " (rotary_dim / 2: head_dim " + std::to_string(c.head_dim) +
                       " x partial_rotary_factor " + number_text(c.partial_rotary_factor) + " / 2)");
    }
    std::vector<double> out;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double v = a[i].is_number() ? a[i].get<double>() : std::nan("");
      if (!(v > 0) || !std::isfinite(v)) {
        throw InputError(where + ": " + shown + "[" + std::to_string(i) + "] is " + a[i].dump() +
                         "; it must be a finite number more than 0");
      }
      out.push_back(v);
    }
    return out;
  };
  c.rope_short_factor = factors("short_factor");
  c.rope_long_factor = factors("long_factor");
  c.rope_factor = static_cast<double>(c.max_position_embeddings) / static_cast<double>(c.rope_original_max_position);
  if (rs.contains("attention_factor") && !rs["attention_factor"].is_null()) {
    c.rope_attention_factor = float_field(rs, "attention_factor", 1.0, where, "rope_scaling.attention_factor");
  } else {
    c.rope_attention_factor = c.rope_factor <= 1 ? 1.0
                                                 : std::sqrt(1 + std::log(c.rope_factor) /
                                                                     std::log(static_cast<double>(c.rope_original_max_position)));
    if (!std::isfinite(c.rope_attention_factor)) {
      throw InputError(where + ": original_max_position_embeddings is " + std::to_string(c.rope_original_max_position) +
                       "; longrope's attention factor needs more than 1 (or rope_scaling.attention_factor given)");
    }
  }
}

}  // namespace

std::int64_t ModelConfig::rotary_dim() const {
  return static_cast<std::int64_t>(static_cast<double>(head_dim) * partial_rotary_factor);  // Hugging Face's int()
}

bool ModelConfig::moe_layer(std::int64_t l) const {
  if (!is_moe()) return false;
  for (const std::int64_t d : moe.mlp_only_layers)
    if (d == l) return false;
  return (l + 1) % moe.sparse_step == 0;
}

std::int64_t ModelConfig::max_mlp_width() const {
  std::int64_t w = 0;
  for (std::int64_t l = 0; l < num_layers; ++l) w = std::max(w, moe_layer(l) ? moe.expert_intermediate_size : intermediate_size);
  return w;
}

std::int64_t ModelConfig::layer_window(std::int64_t l) const {
  if (sliding_layers.empty()) return sliding_window;
  return sliding_layers[static_cast<std::size_t>(l)] ? sliding_window : 0;
}

LayerShape ModelConfig::layer_shape() const {
  return {hidden_size, num_heads, num_kv_heads, head_dim, max_mlp_width(), is_moe() ? moe.num_experts : 0,
          is_moe() ? moe.experts_per_token : 0, rope_local_theta > 0 ? 2 : 1};
}

double check_float_hyper_parameter(std::string_view key, double value, const std::string& where, const std::string& shown) {
  for (const FloatRange& r : kFloatRanges) {
    if (r.key != key) continue;
    const bool above = r.lo_inclusive ? value >= r.lo : value > r.lo;
    if (!(above && value <= r.hi && std::isfinite(value))) {
      throw InputError(where + ": " + shown + " is " + number_text(value) + "; it must be " + r.what);
    }
    // Every rotary frequency theta^(-2i/d) lies between 1 and 1/theta: it must be a float.
    if (key == "rope_theta" && !std::isfinite(static_cast<float>(1.0 / value))) {
      throw InputError(where + ": " + shown + " is " + number_text(value) +
                       "; so small that its rotary frequencies (up to 1/" + shown + ") overflow");
    }
    return value;
  }
  assert(false && "no range for this key");
  return value;
}

namespace {
ModelConfig parse_config_fields(const Json& j, const std::string& where);
}  // namespace
ModelConfig parse_gpt2_config(const Json& j, const std::string& where) {
  // GPT2Config's names and defaults (its attribute_map: hidden_size = n_embd, ...).
  ModelConfig c;
  c.arch = Arch::kGpt2;
  c.architecture = std::string(arch_name(Arch::kGpt2));
  c.model_type = "gpt2";
  auto int_or = [&](const char* key, std::int64_t fallback, std::int64_t max) {
    return j.contains(key) && !j[key].is_null() ? positive(j, key, where, max) : fallback;
  };
  c.hidden_size = int_or("n_embd", 768, kMaxHiddenSize);
  c.num_layers = int_or("n_layer", 12, kMaxLayers);
  c.num_heads = c.num_kv_heads = int_or("n_head", 12, kMaxHeads);
  c.vocab_size = int_or("vocab_size", 50257, kMaxVocab);
  c.max_position_embeddings = int_or("n_positions", 1024, kMaxPositions);
  c.intermediate_size = int_or("n_inner", 4 * c.hidden_size, kMaxIntermediateSize);  // null: 4·n_embd
  if (c.hidden_size % c.num_heads != 0) {
    throw InputError(where + ": n_embd (" + std::to_string(c.hidden_size) + ") is not divisible by n_head (" +
                     std::to_string(c.num_heads) + ")");
  }
  c.head_dim = c.hidden_size / c.num_heads;
  c.rms_norm_eps = float_field(j, "layer_norm_epsilon", 1e-5, where, "layer_norm_epsilon");
  const std::string act = json_string_or(j, "activation_function", "gelu_new", where);
  if (act != "gelu_new" && act != "gelu_pytorch_tanh") {
    throw InputError(where + ": activation_function '" + act +
                     "' is not supported for GPT2LMHeadModel (plexus implements the tanh GELU: gelu_new, gelu_pytorch_tanh)");
  }
  // Variants of GPT-2's attention plexus does not implement: refused, never run as plain GPT-2.
  if (!json_bool_or(j, "scale_attn_weights", true, where)) {
    throw InputError(where + ": scale_attn_weights is false; plexus implements GPT-2's attention scaled by 1/sqrt(head_dim) only");
  }
  for (const char* key : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"}) {
    if (json_bool_or(j, key, false, where)) {
      throw InputError(where + ": " + key + " is true; plexus does not implement it for GPT2LMHeadModel (false only)");
    }
  }
  c.tie_word_embeddings = json_bool_or(j, "tie_word_embeddings", true, where);
  if (!c.tie_word_embeddings) {
    throw InputError(where + ": tie_word_embeddings is false; plexus reads GPT-2's lm_head as the token embedding (true only)");
  }
  c.qkv_bias = c.o_bias = true;
  c.rope_theta = 10000.0;  // unused: GPT-2 has no rotary embedding (rope_inv_freq is all zeros)
  for (const char* key : {"bos_token_id", "eos_token_id"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    const std::int64_t id = special_token_id(j[key], key, c.vocab_size, where);
    if (key[0] == 'b') c.bos_token_id = id;
    else c.eos_token_ids.push_back(id);
  }
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    const std::string td = json_string_or(j, key, "", where);
    DType dt;
    if (!parse_dtype(td, &dt)) throw InputError(where + ": field '" + key + "' is '" + td + "'; known: float32, bfloat16, float16");
    if (!c.torch_dtype) c.torch_dtype = dt;
  }
  return c;
}

ModelConfig parse_model_config(const Json& j, const std::string& where) {
  if (const std::optional<Json> gemma = gemma_config_json(j, where)) return parse_config_fields(*gemma, where);
  return parse_config_fields(j, where);
}

namespace {
ModelConfig parse_config_fields(const Json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": expected a JSON object");
  ModelConfig c;
  std::string arch;
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string()) {
    arch = j["architectures"][0].get<std::string>();
  }
  c.model_type = json_string_or(j, "model_type", "", where);
  if (arch.empty()) {
    if (c.model_type == "llama") arch = "LlamaForCausalLM";
    else if (c.model_type == "mistral") arch = "MistralForCausalLM";
    else if (c.model_type == "qwen2") arch = "Qwen2ForCausalLM";
    else if (c.model_type == "qwen3") arch = "Qwen3ForCausalLM";
    else if (c.model_type == "mixtral") arch = "MixtralForCausalLM";
    else if (c.model_type == "qwen3_moe") arch = "Qwen3MoeForCausalLM";
    else if (c.model_type == "gpt_oss") arch = "GptOssForCausalLM";
    else if (c.model_type == "phi3") arch = "Phi3ForCausalLM";
    else if (c.model_type == "gpt2") arch = "GPT2LMHeadModel";
  }
  if (arch == "GPT2LMHeadModel") return parse_gpt2_config(j, where);
  if (arch == "LlamaForCausalLM") c.arch = Arch::kLlama;
  else if (arch == "MistralForCausalLM") c.arch = Arch::kMistral;
  else if (arch == "Qwen2ForCausalLM") c.arch = Arch::kQwen2;
  else if (arch == "Qwen3ForCausalLM") c.arch = Arch::kQwen3;
  else if (arch == "MixtralForCausalLM") c.arch = Arch::kMixtral;
  else if (arch == "Qwen3MoeForCausalLM") c.arch = Arch::kQwen3Moe;
  else if (arch == "GptOssForCausalLM") c.arch = Arch::kGptOss;
  else if (arch == "Phi3ForCausalLM") c.arch = Arch::kPhi3;
  else if (arch == "Gemma2ForCausalLM") c.arch = Arch::kGemma2;
  else if (arch == "Gemma3ForCausalLM") c.arch = Arch::kGemma3;
  else {
    throw InputError(where + ": unknown architecture '" + (arch.empty() ? c.model_type : arch) +
                     "' in field 'architectures'; supported: LlamaForCausalLM, MistralForCausalLM, "
                     "Qwen2ForCausalLM, Qwen3ForCausalLM, MixtralForCausalLM, Qwen3MoeForCausalLM, GptOssForCausalLM, "
                     "Phi3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3ForConditionalGeneration (its language model), GPT2LMHeadModel");
  }
  c.architecture = arch;
  c.hidden_size = positive(j, "hidden_size", where, kMaxHiddenSize);
  c.num_layers = positive(j, "num_hidden_layers", where, kMaxLayers);
  c.num_heads = positive(j, "num_attention_heads", where, kMaxHeads);
  c.num_kv_heads = j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null()
                       ? positive(j, "num_key_value_heads", where, kMaxHeads)
                       : c.num_heads;
  c.intermediate_size = positive(j, "intermediate_size", where, kMaxIntermediateSize);
  c.vocab_size = positive(j, "vocab_size", where, kMaxVocab);
  if (c.num_heads % c.num_kv_heads != 0) {
    throw InputError(where + ": num_attention_heads (" + std::to_string(c.num_heads) +
                     ") must be a multiple of num_key_value_heads (" + std::to_string(c.num_kv_heads) + ")");
  }
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    c.head_dim = positive(j, "head_dim", where, kMaxHeadDim);
  } else {
    if (c.hidden_size % c.num_heads != 0) {
      throw InputError(where + ": hidden_size (" + std::to_string(c.hidden_size) +
                       ") is not divisible by num_attention_heads and no head_dim is given");
    }
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.head_dim % 2 != 0) throw InputError(where + ": head_dim must be even for rotary embeddings");
  if (c.head_dim > kMaxHeadDim || c.num_heads * c.head_dim > kMaxHiddenSize) {
    throw InputError(where + ": num_attention_heads x head_dim is " + std::to_string(c.num_heads * c.head_dim) + ", above the " +
                     std::to_string(kMaxHiddenSize) + " plexus supports: is config.json corrupt?");
  }
  c.max_position_embeddings = j.contains("max_position_embeddings") && !j["max_position_embeddings"].is_null()
                                  ? positive(j, "max_position_embeddings", where, kMaxPositions)
                                  : (c.arch == Arch::kGptOss ? 131072 : c.arch == Arch::kPhi3 ? 4096 : 2048);
  // GptOssConfig's defaults differ: eps 1e-5, theta 150000, 131072 positions (Phi3Config: eps 1e-5, 4096).
  c.rms_norm_eps = float_field(j, "rms_norm_eps", c.arch == Arch::kGptOss || c.arch == Arch::kPhi3 ? 1e-5 : 1e-6, where,
                               "rms_norm_eps");
  c.rope_theta = float_field(j, "rope_theta", c.arch == Arch::kGptOss ? 150000.0 : 10000.0, where, "rope_theta");
  // Hugging Face rotates only this fraction of each head: Phi-3 (Phi-4-mini) takes any; the other
  // families rotate whole heads.
  c.partial_rotary_factor = float_field(j, "partial_rotary_factor", 1.0, where, "partial_rotary_factor");
  if (c.partial_rotary_factor != 1.0 && c.arch != Arch::kPhi3) {
    throw InputError(where + ": partial_rotary_factor " + number_text(c.partial_rotary_factor) + " is not supported for " + arch +
                     " (plexus rotates its whole heads: 1)");
  }
  if (c.rotary_dim() < 2 || c.rotary_dim() % 2 != 0) {
    throw InputError(where + ": partial_rotary_factor " + number_text(c.partial_rotary_factor) + " rotates " +
                     std::to_string(c.rotary_dim()) + " of head_dim " + std::to_string(c.head_dim) +
                     " dims; RoPE needs an even number of them, at least 2");
  }
  c.tie_word_embeddings = json_bool_or(j, "tie_word_embeddings", false, where);
  const std::string act = is_gemma_arch(c.arch) ? "silu" : json_string_or(j, "hidden_act", "silu", where);  // Gemma: hidden_activation
  if (act != "silu") throw InputError(where + ": hidden_act '" + act + "' is not supported (only silu)");
  if (json_bool_or(j, "mlp_bias", false, where)) throw InputError(where + ": mlp_bias=true is not supported");

  switch (c.arch) {
    case Arch::kLlama:
    case Arch::kMistral:
    case Arch::kMixtral:
      c.qkv_bias = c.o_bias = json_bool_or(j, "attention_bias", false, where);
      break;
    case Arch::kQwen2:
      c.qkv_bias = true;  // Qwen2 attention always carries q/k/v biases
      break;
    case Arch::kQwen3:
    case Arch::kQwen3Moe:
      c.qk_norm = true;
      c.qkv_bias = c.o_bias = json_bool_or(j, "attention_bias", false, where);
      break;
    case Arch::kGptOss:
      c.qkv_bias = c.o_bias = json_bool_or(j, "attention_bias", true, where);
      c.attention_sinks = true;
      break;
    case Arch::kPhi3:  // Phi3Attention's qkv_proj and o_proj never have biases
      break;
    case Arch::kGemma2:
    case Arch::kGemma3: break;  // parse_gemma_fields, after rope_scaling
    case Arch::kGpt2: break;  // parse_gpt2_config
  }
  if (c.arch == Arch::kGptOss) parse_layer_types(j, where, 2, c);  // GptOssConfig: even layers sliding
  if (c.arch == Arch::kMistral || c.arch == Arch::kMixtral || c.arch == Arch::kGptOss || c.arch == Arch::kPhi3) {
    c.sliding_window = json_int_or(j, "sliding_window", c.arch == Arch::kGptOss ? 128 : 0, where);
    if (c.sliding_window < 0) {
      throw InputError(where + ": sliding_window is " + std::to_string(c.sliding_window) +
                       "; it must be a positive number of positions, or null for full attention");
    }
  } else if (json_bool_or(j, "use_sliding_window", false, where)) {
    throw InputError(where + ": use_sliding_window=true is not supported for " + arch);
  }

  if (c.arch == Arch::kMixtral || c.arch == Arch::kQwen3Moe || c.arch == Arch::kGptOss) parse_moe(j, where, c);
  if (c.arch == Arch::kGptOss && !(j.contains("rope_scaling") && j["rope_scaling"].is_object())) {
    // GptOssConfig's default rope: YaRN, factor 32 from 4096 positions, unrounded range.
    c.rope_scaling = RopeScaling::kYarn;
    c.rope_factor = 32.0, c.rope_original_max_position = 4096, c.rope_truncate = false;
    c.rope_attention_factor = 0.1 * std::log(c.rope_factor) + 1.0;
  }

  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null() && !j["rope_scaling"].is_object()) {
    throw InputError(where + ": rope_scaling must be an object or null, got " + j["rope_scaling"].dump());
  }
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
    const Json& rs = j["rope_scaling"];
    const std::string w = where + ": rope_scaling";
    std::string type = json_string_or(rs, "rope_type", "", w);
    if (type.empty()) type = json_string_or(rs, "type", "", w);
    if (type == "llama3") {
      c.rope_scaling = RopeScaling::kLlama3;
      c.rope_factor = float_field(rs, "factor", 8.0, where, "rope_scaling.factor");
      c.rope_low_freq_factor = float_field(rs, "low_freq_factor", 1.0, where, "rope_scaling.low_freq_factor");
      c.rope_high_freq_factor = float_field(rs, "high_freq_factor", 4.0, where, "rope_scaling.high_freq_factor");
      if (!(c.rope_high_freq_factor > c.rope_low_freq_factor)) {
        throw InputError(where + ": rope_scaling.high_freq_factor (" + number_text(c.rope_high_freq_factor) +
                         ") must be more than low_freq_factor (" + number_text(c.rope_low_freq_factor) +
                         "): llama3 scaling blends between them");
      }
      c.rope_original_max_position = json_int_or(rs, "original_max_position_embeddings", 8192, w);
      if (c.rope_original_max_position <= 0 || c.rope_original_max_position > kMaxPositions) {
        throw InputError(where + ": rope_scaling.original_max_position_embeddings is " + std::to_string(c.rope_original_max_position) +
                         "; it must be a positive number of positions");
      }
    } else if (type == "linear") {
      c.rope_scaling = RopeScaling::kLinear;
      c.rope_factor = float_field(rs, "factor", 1.0, where, "rope_scaling.factor");
    } else if (type == "yarn") {
      parse_yarn(rs, where, c);
    } else if ((type == "longrope" || type == "su") && c.arch == Arch::kPhi3) {
      parse_longrope(j, rs, where, c);
    } else if (type == "default" || type.empty()) {
      c.rope_scaling = RopeScaling::kNone;
    } else {
      throw InputError(w + ": type '" + type + "' is not supported (supported: llama3, linear, yarn" +
                       (c.arch == Arch::kPhi3 ? ", longrope (su)" : "; longrope for Phi3ForCausalLM") + ")");
    }
  }

  if (is_gemma_arch(c.arch)) parse_gemma_fields(j, where, c);
  else reject_gemma_only_fields(j, where, c);

  if (j.contains("bos_token_id") && !j["bos_token_id"].is_null()) {
    c.bos_token_id = special_token_id(j["bos_token_id"], "bos_token_id", c.vocab_size, where);
  }
  if (j.contains("eos_token_id") && !j["eos_token_id"].is_null()) {
    const Json& e = j["eos_token_id"];
    if (e.is_array()) {
      for (std::size_t i = 0; i < e.size(); ++i) {
        c.eos_token_ids.push_back(special_token_id(e[i], "eos_token_id[" + std::to_string(i) + "]", c.vocab_size, where));
      }
    } else {
      c.eos_token_ids.push_back(special_token_id(e, "eos_token_id", c.vocab_size, where));
    }
  }
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    const std::string td = json_string_or(j, key, "", where);
    DType dt;
    if (!parse_dtype(td, &dt)) {
      throw InputError(where + ": field '" + key + "' is '" + td + "'; known: float32, bfloat16, float16");
    }
    if (!c.torch_dtype) c.torch_dtype = dt;
  }
  return c;
}
}  // namespace

ModelConfig load_model_config(const std::string& path) {
  require_model_path(path);
  if (is_gguf_model_path(path)) return gguf_model_config(GgufFile(path));
  const std::string file = is_dir(path) ? path + "/config.json" : path;
  if (is_dir(path)) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
      throw InputError("'" + path + "' is not a model directory: it has no config.json");
    }
  }
  const std::string text = read_text_file(file);
  if (file == path) {  // a file named on the command line: say what it is not
    require_json_object_text(text, file, "a config.json",
                             "pass a model directory (config.json and *.safetensors), its config.json, or a .gguf file");
  }
  return parse_model_config(parse_json(text, file), file);
}

}  // namespace plexus
