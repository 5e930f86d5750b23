// Which tensors quantisation touches — one stated policy for quantise-on-load, `plexus quantize`
// and the planner's int8/int4 sizes: the linear projections' weights (q/k/v/o_proj,
// gate/up/down_proj) are quantised; embeddings, lm_head, norms and biases keep their dtype.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace plexus {

// Whether the Hugging Face parameter `name` is a projection weight the policy quantises.
bool quantised_by_policy(std::string_view name);

// Throws InputError when a projection of `cols` columns cannot be stored in block format `t`
// (cols not a multiple of t's block), naming the tensor, its columns and the block size.
void check_quantisable(DType t, const std::string& name, std::int64_t cols);

// "q8_0 | q4_0 | q4_k": the values --quantize takes, for messages.
inline constexpr std::string_view kQuantizeChoices = "q8_0, q4_0 or q4_k";

// The value of a --quantize flag (or backend.quantize): q8_0 | q4_0 | q4_k, any case; anything
// else is an InputError naming `flag`, the value and the choices.
DType quantize_flag(std::string_view flag, std::string_view value);

}  // namespace plexus
