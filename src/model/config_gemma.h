// config.json of Google's Gemma 2 and Gemma 3 text models: their defaults and their fields
// (model/config.h ModelConfig::gemma and after).
#pragma once
#include <optional>
#include <string>

#include "core/json.h"
#include "model/config.h"

namespace plexus {

bool is_gemma_arch(Arch a);

// A Gemma config.json made whole: Gemma2Config's or Gemma3TextConfig's defaults written in for
// the fields it leaves out, and for Gemma3ForConditionalGeneration its text_config (the language
// model; bos/eos/dtype from the outer config where the text one has none) as a Gemma3ForCausalLM.
// nullopt for every other architecture.
std::optional<Json> gemma_config_json(const Json& j, const std::string& where);

// The Gemma fields of `j` (made whole by gemma_config_json) into `c`, whose arch is Gemma 2 or 3:
// hidden_activation, query_pre_attn_scalar, the soft-caps, sliding_window and the layer pattern,
// rope_local_base_freq, q/k norms (Gemma 3). InputError naming the field and value for what
// plexus does not implement.
void parse_gemma_fields(const Json& j, const std::string& where, ModelConfig& c);

// Every other architecture: Gemma's soft-capping fields must be absent or null (a model that
// uses them would silently run as another).
void reject_gemma_only_fields(const Json& j, const std::string& where, const ModelConfig& c);

}  // namespace plexus
