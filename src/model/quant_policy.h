// Quantisation on load: the values --quantize (and backend.quantize) take — llama.cpp's named
// mixes (model/quant_mix.h), the same names as `plexus quantize --type` — and the projections
// policy the planner's int8/int4 sizes use (the linear projections' weights only).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "model/quant_mix.h"

namespace plexus {

// Whether the Hugging Face parameter `name` is a projection weight (q/k/v/o_proj, gate/up/down_proj):
// what `plan --dtype int8|int4` sizes as quantised.
bool quantised_by_policy(std::string_view name);

// The value of a --quantize flag (or backend.quantize): a mix name, any case (q8_0, q4_0 and q4_k
// = Q4_K_M included); anything else is an InputError naming `flag`, the value, the nearest name
// and the mixes.
QuantMix quantize_flag(std::string_view flag, std::string_view value);

// The facts the mix rules use, from a model's config.
struct ModelConfig;
QuantModelFacts quant_model_facts(const ModelConfig& config);

}  // namespace plexus
