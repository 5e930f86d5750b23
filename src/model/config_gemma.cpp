// Gemma 2 / Gemma 3 config.json: defaults as Hugging Face's Gemma2Config and Gemma3TextConfig
// hold them, and the Gemma-only fields.
#include "model/config_gemma.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace plexus {

namespace {

// The fields Hugging Face fills in when a Gemma config.json leaves them out.
Json gemma2_defaults() {
  return {{"vocab_size", 256000}, {"hidden_size", 2304}, {"intermediate_size", 9216}, {"num_hidden_layers", 26},
          {"num_attention_heads", 8}, {"num_key_value_heads", 4}, {"head_dim", 256},
          {"max_position_embeddings", 8192}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0},
          {"query_pre_attn_scalar", 256}, {"sliding_window", 4096}, {"final_logit_softcapping", 30.0},
          {"attn_logit_softcapping", 50.0}, {"tie_word_embeddings", true}, {"bos_token_id", 2}, {"eos_token_id", 1}};
}

Json gemma3_text_defaults() {
  return {{"vocab_size", 262208}, {"hidden_size", 2304}, {"intermediate_size", 9216}, {"num_hidden_layers", 26},
          {"num_attention_heads", 8}, {"num_key_value_heads", 4}, {"head_dim", 256},
          {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0},
          {"rope_local_base_freq", 10000.0}, {"query_pre_attn_scalar", 256}, {"sliding_window", 4096},
          {"sliding_window_pattern", 6}, {"tie_word_embeddings", true}, {"bos_token_id", 2}, {"eos_token_id", 1}};
}

std::string gemma_arch_of(const Json& j) {
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string()) {
    return j["architectures"][0].get<std::string>();
  }
  const std::string type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  if (type == "gemma2") return "Gemma2ForCausalLM";
  if (type == "gemma3_text") return "Gemma3ForCausalLM";
  if (type == "gemma3") return "Gemma3ForConditionalGeneration";
  return "";
}

// A soft-cap field: absent → `fallback` (HF's default), null → 0 (none), else a number > 0.
double gemma_softcap(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return 0;
  if (!j[key].is_number() || !(j[key].get<double>() > 0) || !std::isfinite(j[key].get<double>())) {
    throw InputError(where + ": " + key + " is " + j[key].dump() + "; it must be a number more than 0, or null for none");
  }
  return j[key].get<double>();
}

double gemma_positive_number(const Json& j, const char* key, const std::string& where) {
  if (!j[key].is_number() || !(j[key].get<double>() > 0) || !std::isfinite(j[key].get<double>())) {
    throw InputError(where + ": " + key + " is " + j[key].dump() + "; it must be a number more than 0");
  }
  return j[key].get<double>();
}

// Gemma 2: even layers slide (layer_types' default: (l + 1) % 2 != 0); Gemma 3: layer_types, or
// every `sliding_window_pattern`-th layer global ((l + 1) % pattern == 0), the others sliding.
void gemma_layer_types(const Json& j, const std::string& where, ModelConfig& c) {
  long long pattern = 2;
  if (c.arch == Arch::kGemma3) {
    pattern = json_int_or(j, "sliding_window_pattern", 6, where);
    if (pattern < 1) {
      throw InputError(where + ": sliding_window_pattern is " + std::to_string(pattern) +
                       "; it must be at least 1 (every pattern-th layer attends globally)");
    }
  }
  parse_layer_types(j, where, pattern, c);
}

}  // namespace

bool is_gemma_arch(Arch a) { return a == Arch::kGemma2 || a == Arch::kGemma3; }

std::optional<Json> gemma_config_json(const Json& j, const std::string& where) {
  if (!j.is_object()) return std::nullopt;
  const std::string arch = gemma_arch_of(j);
  Json out;
  Json defaults;
  if (arch == "Gemma2ForCausalLM" || arch == "Gemma3ForCausalLM") {
    out = j;
    out["architectures"] = Json::array({arch});  // also when only model_type named it
    defaults = arch == "Gemma2ForCausalLM" ? gemma2_defaults() : gemma3_text_defaults();
  } else if (arch == "Gemma3ForConditionalGeneration") {
    if (!j.contains("text_config") || !j["text_config"].is_object()) {
      throw InputError(where + ": a Gemma3ForConditionalGeneration config needs a 'text_config' object (its language model)");
    }
    out = j["text_config"];
    for (const char* key : {"bos_token_id", "eos_token_id", "torch_dtype", "dtype"}) {
      if (!out.contains(key) && j.contains(key)) out[key] = j[key];
    }
    out["architectures"] = Json::array({"Gemma3ForCausalLM"});
    out["model_type"] = "gemma3_text";
    defaults = gemma3_text_defaults();
  } else {
    return std::nullopt;
  }
  for (auto it = defaults.begin(); it != defaults.end(); ++it) {
    if (!out.contains(it.key())) out[it.key()] = it.value();
  }
  return out;
}

void parse_gemma_fields(const Json& j, const std::string& where, ModelConfig& c) {
  c.gemma = true;
  // HF's Gemma MLP reads hidden_activation (hidden_act is an older name it ignores).
  const std::string act = json_string_or(j, "hidden_activation", "gelu_pytorch_tanh", where);
  if (act != "gelu_pytorch_tanh") {
    throw InputError(where + ": hidden_activation '" + act + "' is not supported for " + c.architecture +
                     " (only gelu_pytorch_tanh)");
  }
  c.qkv_bias = c.o_bias = json_bool_or(j, "attention_bias", false, where);
  c.qk_norm = c.arch == Arch::kGemma3;
  c.query_pre_attn_scalar = gemma_positive_number(j, "query_pre_attn_scalar", where);
  c.attn_logit_softcap = gemma_softcap(j, "attn_logit_softcapping", where);
  c.final_logit_softcap = gemma_softcap(j, "final_logit_softcapping", where);
  c.sliding_window = j["sliding_window"].is_null() ? 0 : json_int_or(j, "sliding_window", 0, where);
  if (c.sliding_window < 0) {
    throw InputError(where + ": sliding_window is " + std::to_string(c.sliding_window) +
                     "; it must be a positive number of positions, or null for full attention");
  }
  gemma_layer_types(j, where, c);
  if (c.arch == Arch::kGemma3) {
    c.rope_local_theta = check_float_hyper_parameter("rope_theta", gemma_positive_number(j, "rope_local_base_freq", where),
                                                     where, "rope_local_base_freq");
  }
  if (c.arch == Arch::kGemma3 && c.rope_scaling != RopeScaling::kNone && c.rope_scaling != RopeScaling::kLinear) {
    throw InputError(where + ": rope_scaling of Gemma 3 must be linear (or none); plexus applies it to the global layers only");
  }
}

void reject_gemma_only_fields(const Json& j, const std::string& where, const ModelConfig& c) {
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    if (j.contains(key) && !j[key].is_null()) {
      throw InputError(where + ": " + key + " is " + j[key].dump() + ", which " + c.architecture +
                       " never has: plexus implements soft-capping for Gemma 2 and Gemma 3 only");
    }
  }
}

}  // namespace plexus
