// make-model's Gemma 2 / Gemma 3 configs: the real shapes gemma-2-2b and gemma-3-1b, the tiny
// and small presets' Gemma variants, and the config.json fields Hugging Face writes for them.
#pragma once
#include <cstdint>
#include <string>

#include "core/json.h"
#include "model/config.h"

namespace plexus {

// Whether `preset` is a Gemma real-shape preset (gemma-2-2b, gemma-3-1b).
bool is_gemma_preset(const std::string& preset);
// The real-shape preset as Google's config.json describes it; vocab_size > 0 replaces its vocabulary.
ModelConfig gemma_preset_config(const std::string& preset, std::int64_t vocab_size);
// The Gemma parts of a tiny/small preset of c.arch (Gemma 2 or 3): window 8 (so a test's prompt
// passes it) on Gemma 2's even layers, Gemma 3's layers 0, 1 and 3 (every third global);
// query_pre_attn_scalar 1.5 · head_dim; Gemma 2's soft-caps 50 and 30; Gemma 3's local base 1e4
// and linear rope scaling 8 on its global layers, q/k norms; tied embeddings.
void set_gemma_small_preset(ModelConfig& c);
// j (config_to_json's) completed with the Gemma fields of c.
void add_gemma_config_json(const ModelConfig& c, Json& j);

}  // namespace plexus
