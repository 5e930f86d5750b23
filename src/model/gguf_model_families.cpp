// GGUF metadata of llama.cpp's gemma2, gemma3, phi3 and gpt2 as config.json fields (see
// gguf_model_families.h). llama.cpp's semantics, as its loader reads these files:
//   gemma2/gemma3: attention.sliding_window (gemma2: 4096 when absent; gemma3: 0 or absent = no
//     window), the layer pattern attention.sliding_window_pattern as a period (gemma2: 2,
//     gemma3: 6 when absent; plexus also reads one bool per layer, llama.cpp does not),
//     gemma2's attn_logit_softcapping / final_logit_softcapping, the attention scaled by
//     1/sqrt(query_pre_attn_scalar) derived from the model's size (gguf_gemma_query_scalar;
//     plexus also reads attention.scale, llama.cpp does not), gemma3's sliding layers rotating
//     with rope.freq_base_swa (10000 when absent), unscaled; gemma2's with rope.freq_base.
//     Norm weights are stored as (1 + w).
//   phi3: rope.dimension_count is the rotated dims (partial rotary), LongRoPE's factors as the F32
//     tensors rope_factors_long/short.weight with rope.scaling.original_context_length and
//     rope.scaling.attn_factor.
//   gpt2: attention.layer_norm_epsilon, context_length = the learned positions.
#include "model/gguf_model_families.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace plexus {

std::int64_t gguf_gemma_query_scalar(Arch a, std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t head_dim) {
  const bool is_27b = (a == Arch::kGemma2 && layers == 46) || (a == Arch::kGemma3 && layers == 62);
  return is_27b ? hidden / heads : head_dim;
}

Json gguf_sliding_layer_types(const GgufFile& f, const std::string& arch, std::int64_t layers, std::int64_t default_period) {
  const std::string& path = f.path();
  const std::string key = arch + ".attention.sliding_window_pattern";
  Json types = Json::array();
  const GgufValue* pattern = f.find(key);
  if (pattern && pattern->type == GgufValue::Type::kArray) {
    if (static_cast<std::int64_t>(pattern->arr.size()) != layers || pattern->elem_type != 7 /* bool */) {
      throw InputError(path + ": " + key + " is an array of " + std::to_string(pattern->arr.size()) +
                       " elements; it must be a period or one bool per layer (" + arch + ".block_count " + std::to_string(layers) + ")");
    }
    for (const GgufValue& v : pattern->arr) types.push_back(v.b ? "sliding_attention" : "full_attention");
    return types;
  }
  const std::int64_t period = f.get_int(key).value_or(default_period);
  if (period < 0) throw InputError(path + ": " + key + " is " + std::to_string(period) + "; a period must be 0 or more");
  for (std::int64_t l = 0; l < layers; ++l) types.push_back(period == 0 || l % period < period - 1 ? "sliding_attention" : "full_attention");
  return types;
}

namespace {

// An F32 vector tensor of `want` elements as a JSON array; InputError naming it otherwise.
Json gguf_f32_vector_json(const GgufFile& f, const GgufTensor& t, std::int64_t want, const std::string& why) {
  if (t.ggml_type != 0 || t.dims.size() != 1 || t.dims[0] != want) {
    throw InputError(f.path() + ": tensor '" + t.name + "' must be F32 of " + std::to_string(want) + " elements (" + why + ")");
  }
  Json out = Json::array();
  const auto* v = static_cast<const std::uint8_t*>(f.data(t));
  for (std::int64_t i = 0; i < want; ++i) {
    float x;
    std::memcpy(&x, v + i * 4, sizeof x);
    out.push_back(static_cast<double>(x));
  }
  return out;
}

void gguf_gemma_fields(const GgufFile& f, const std::string& arch, Json& j) {
  const std::string p = arch + ".";
  const Arch a = arch == "gemma2" ? Arch::kGemma2 : Arch::kGemma3;
  const std::int64_t layers = f.require_int(p + "block_count");
  const std::int64_t hidden = f.require_int(p + "embedding_length");
  const std::int64_t heads = f.require_int(p + "attention.head_count");
  if (heads <= 0 || layers <= 0 || layers > (std::int64_t{1} << 20)) return;  // parse_model_config names what is wrong
  // llama.cpp's defaults where a key is absent (Gemma's config.json defaults would fill others).
  if (!j.contains("num_key_value_heads")) j["num_key_value_heads"] = heads;
  if (!j.contains("head_dim")) j["head_dim"] = hidden / heads;
  if (!j.contains("rope_theta")) j["rope_theta"] = 10000.0;
  const std::int64_t head_dim = j["head_dim"].get<std::int64_t>();
  const std::int64_t window = f.get_int(p + "attention.sliding_window").value_or(a == Arch::kGemma2 ? 4096 : 0);
  j["sliding_window"] = window > 0 ? Json(window) : Json(nullptr);
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    if (auto v = f.get_float(p + key); v && *v != 0) j[key] = *v;
    else j[key] = nullptr;
  }
  if (auto scale = f.get_float(p + "attention.scale")) {
    if (!(*scale > 0) || !std::isfinite(*scale))
      throw InputError(f.path() + ": " + p + "attention.scale is " + std::to_string(*scale) + "; it must be more than 0");
    j["query_pre_attn_scalar"] = 1.0 / (*scale * *scale);
  } else {
    j["query_pre_attn_scalar"] = gguf_gemma_query_scalar(a, layers, hidden, heads, head_dim);
  }
  const std::optional<double> swa_base = f.get_float(p + "rope.freq_base_swa");
  if (a == Arch::kGemma3) j["rope_local_base_freq"] = swa_base.value_or(kGgufGemma3LocalRopeBase);
  if (a == Arch::kGemma2 && swa_base && *swa_base != j["rope_theta"].get<double>()) {
    throw InputError(f.path() + ": gemma2.rope.freq_base_swa is " + std::to_string(*swa_base) + " but gemma2.rope.freq_base is " +
                     std::to_string(j["rope_theta"].get<double>()) + "; plexus rotates every Gemma 2 layer with one base");
  }
  j["layer_types"] = gguf_sliding_layer_types(f, arch, layers, a == Arch::kGemma2 ? 2 : 6);
}

void gguf_phi3_fields(const GgufFile& f, Json& j) {
  const std::string p = "phi3.";
  const std::int64_t hidden = f.require_int(p + "embedding_length");
  const std::int64_t heads = f.require_int(p + "attention.head_count");
  if (heads <= 0) return;  // parse_model_config names it
  if (!j.contains("num_key_value_heads")) j["num_key_value_heads"] = heads;
  const std::int64_t head_dim = j.contains("head_dim") ? j["head_dim"].get<std::int64_t>() : hidden / heads;
  const std::int64_t rotary = f.get_int(p + "rope.dimension_count").value_or(head_dim);
  if (rotary != head_dim) j["partial_rotary_factor"] = static_cast<double>(rotary) / static_cast<double>(head_dim);
  if (auto window = f.get_int(p + "attention.sliding_window"); window && *window > 0) j["sliding_window"] = *window;
  const GgufTensor* lf = f.find_tensor("rope_factors_long.weight");
  const GgufTensor* sf = f.find_tensor("rope_factors_short.weight");
  if (!lf && !sf) return;
  if (!lf || !sf) {
    throw InputError(f.path() + ": tensor '" + std::string(lf ? "rope_factors_short.weight" : "rope_factors_long.weight") +
                     "' is missing; LongRoPE needs both rope_factors_long.weight and rope_factors_short.weight");
  }
  const std::string orig_key = p + "rope.scaling.original_context_length";
  const std::int64_t orig = f.require_int(orig_key);
  j["original_max_position_embeddings"] = orig;
  const std::string why = "rope.dimension_count / 2";
  Json rs = {{"type", "longrope"},
             {"short_factor", gguf_f32_vector_json(f, *sf, rotary / 2, why)},
             {"long_factor", gguf_f32_vector_json(f, *lf, rotary / 2, why)}};
  // The converter writes Hugging Face's own factor, sqrt(1 + ln(s) / ln(original)) (s = context /
  // original; 1 when s <= 1), as F32: that factor itself (in double, as config.json gives it)
  // when the key holds it, the key's value otherwise.
  if (auto m = f.get_float(p + "rope.scaling.attn_factor")) {
    const double s = j.contains("max_position_embeddings") && orig > 0
                         ? static_cast<double>(j["max_position_embeddings"].get<std::int64_t>()) / static_cast<double>(orig)
                         : 1.0;
    const double derived = s <= 1 ? 1.0 : std::sqrt(1 + std::log(s) / std::log(static_cast<double>(orig)));
    if (static_cast<float>(derived) != static_cast<float>(*m)) rs["attention_factor"] = *m;
  }
  j["rope_scaling"] = rs;
}

}  // namespace

void gguf_family_fields(const GgufFile& f, const std::string& arch, Json& j) {
  if (arch == "gemma2" || arch == "gemma3") gguf_gemma_fields(f, arch, j);
  if (arch == "phi3") gguf_phi3_fields(f, j);
}

Json gguf_gpt2_config_json(const GgufFile& f) {
  const std::string p = "gpt2.";
  Json j = {{"architectures", Json::array({"GPT2LMHeadModel"})},
            {"model_type", "gpt2"},
            {"n_embd", f.require_int(p + "embedding_length")},
            {"n_layer", f.require_int(p + "block_count")},
            {"n_head", f.require_int(p + "attention.head_count")},
            {"n_positions", f.require_int(p + "context_length")},
            {"n_inner", f.require_int(p + "feed_forward_length")}};
  const std::string eps_key = p + "attention.layer_norm_epsilon";
  const std::optional<double> eps = f.get_float(eps_key);
  if (!eps) throw InputError(f.path() + ": metadata key '" + eps_key + "' is missing (the file needs it to run the model)");
  j["layer_norm_epsilon"] = check_float_hyper_parameter("rms_norm_eps", *eps, f.path(), eps_key);
  if (auto kv = f.get_int(p + "attention.head_count_kv"); kv && *kv != j["n_head"].get<std::int64_t>()) {
    throw InputError(f.path() + ": " + p + "attention.head_count_kv is " + std::to_string(*kv) + " but GPT-2 attends with all " +
                     std::to_string(j["n_head"].get<std::int64_t>()) + " heads (" + p + "attention.head_count)");
  }
  return j;
}

}  // namespace plexus
