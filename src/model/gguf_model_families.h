// GGUF metadata of the architectures llama.cpp names gemma2, gemma3, phi3 and gpt2 (and the
// sliding-window layer pattern gpt-oss shares with Gemma) as config.json fields: what
// gguf_model_config (gguf_model.cpp) builds before parse_model_config checks it.
#pragma once
#include <cstdint>
#include <string>

#include "core/gguf_file.h"
#include "core/json.h"
#include "model/config.h"

namespace plexus {

// llama.cpp's fixed rope base of Gemma 3's sliding layers (rope_freq_base_train_swa).
constexpr double kGgufGemma3LocalRopeBase = 10000.0;

// The query_pre_attn_scalar llama.cpp derives for a Gemma file that has no <arch>.attention.scale:
// n_embd / n_head (integer division) for the 27B models, which it tells by their block count
// (gemma2: 46, gemma3: 62), else the head dim (key_length).
std::int64_t gguf_gemma_query_scalar(Arch a, std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t head_dim);

// The layers' kinds from <arch>.attention.sliding_window_pattern as llama.cpp reads it: a period
// P (layer l slides when l % P < P − 1; `default_period` when the key is absent: gpt-oss and
// gemma2 2, gemma3 6) or one bool per layer. config.json's layer_types (an array of
// "sliding_attention" | "full_attention"). InputError naming the key for a bad array or period.
Json gguf_sliding_layer_types(const GgufFile& f, const std::string& arch, std::int64_t layers, std::int64_t default_period);

// Gemma 2/3 and Phi-3 fields of `j` (built from the common <arch>.* keys) from their own keys and
// tensors; nothing for other architectures. Gemma: head_dim, num_key_value_heads and rope_theta
// with llama.cpp's defaults (Gemma's config.json defaults would otherwise fill them), the window,
// soft-caps, query_pre_attn_scalar, rope_local_base_freq, layer_types. Phi-3: partial rotary from
// rope.dimension_count, the window, LongRoPE from rope_factors_long/short.weight.
void gguf_family_fields(const GgufFile& f, const std::string& arch, Json& j);

// GPT-2's config.json (its own names: n_embd, n_layer, ...) from gpt2.* keys.
Json gguf_gpt2_config_json(const GgufFile& f);

}  // namespace plexus
