// Gemma configs for make-model (model/make_model_gemma.h).
#include "model/make_model_gemma.h"

#include "core/error.h"

namespace plexus {

bool is_gemma_preset(const std::string& preset) { return preset == "gemma-2-2b" || preset == "gemma-3-1b"; }

namespace {
// Gemma 2: even layers slide; Gemma 3: every `pattern`-th layer global.
void set_gemma_layer_pattern(ModelConfig& c, std::int64_t pattern) {
  c.sliding_layers.assign(static_cast<std::size_t>(c.num_layers), false);
  for (std::int64_t l = 0; l < c.num_layers; ++l) c.sliding_layers[static_cast<std::size_t>(l)] = (l + 1) % pattern != 0;
}
}  // namespace

ModelConfig gemma_preset_config(const std::string& preset, std::int64_t vocab_size) {
  ModelConfig c;
  c.gemma = true;
  c.tie_word_embeddings = true;
  c.rms_norm_eps = 1e-6;
  c.num_layers = 26;
  c.head_dim = 256;
  c.query_pre_attn_scalar = 256;
  c.bos_token_id = 2;
  if (preset == "gemma-2-2b") {
    c.arch = Arch::kGemma2, c.model_type = "gemma2";
    c.hidden_size = 2304, c.num_heads = 8, c.num_kv_heads = 4, c.intermediate_size = 9216, c.vocab_size = 256000;
    c.max_position_embeddings = 8192, c.rope_theta = 10000.0, c.sliding_window = 4096;
    c.attn_logit_softcap = 50.0, c.final_logit_softcap = 30.0;
    c.eos_token_ids = {1};
    set_gemma_layer_pattern(c, 2);
  } else if (preset == "gemma-3-1b") {
    c.arch = Arch::kGemma3, c.model_type = "gemma3_text", c.qk_norm = true;
    c.hidden_size = 1152, c.num_heads = 4, c.num_kv_heads = 1, c.intermediate_size = 6912, c.vocab_size = 262144;
    c.max_position_embeddings = 32768, c.rope_theta = 1000000.0, c.rope_local_theta = 10000.0, c.sliding_window = 512;
    c.eos_token_ids = {1, 106};
    set_gemma_layer_pattern(c, 6);
  } else {
    throw InputError("unknown Gemma preset '" + preset + "'");
  }
  c.architecture = std::string(arch_name(c.arch));
  if (vocab_size > 0) c.vocab_size = vocab_size;
  return c;
}

void set_gemma_small_preset(ModelConfig& c) {
  c.gemma = true;
  c.tie_word_embeddings = true;
  c.sliding_window = 8;
  c.query_pre_attn_scalar = 1.5 * static_cast<double>(c.head_dim);
  if (c.arch == Arch::kGemma2) {
    c.model_type = "gemma2";
    c.rope_theta = 10000.0;
    c.attn_logit_softcap = 50.0, c.final_logit_softcap = 30.0;
    set_gemma_layer_pattern(c, 2);
  } else {
    c.model_type = "gemma3_text";
    c.qk_norm = true;
    c.rope_theta = 1000000.0, c.rope_local_theta = 10000.0;
    c.rope_scaling = RopeScaling::kLinear, c.rope_factor = 8.0;
    set_gemma_layer_pattern(c, 3);
  }
}

void add_gemma_config_json(const ModelConfig& c, Json& j) {
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["hidden_act"] = "gelu_pytorch_tanh";
  j["query_pre_attn_scalar"] = c.query_pre_attn_scalar;
  j["sliding_window"] = c.sliding_window;
  j["attn_logit_softcapping"] = c.attn_logit_softcap > 0 ? Json(c.attn_logit_softcap) : Json(nullptr);
  j["final_logit_softcapping"] = c.final_logit_softcap > 0 ? Json(c.final_logit_softcap) : Json(nullptr);
  if (c.arch == Arch::kGemma3) {
    j["rope_local_base_freq"] = c.rope_local_theta;
    Json types = Json::array();
    for (const bool sliding : c.sliding_layers) types.push_back(sliding ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    if (c.rope_scaling == RopeScaling::kNone) j["rope_scaling"] = nullptr;
  }
}

}  // namespace plexus
