// The formats a plan can load weights in (float32, bfloat16, float16, int8, int4) and how many
// bits each parameter then takes. int8 and int4 are the block formats q8_0 and q4_k, applied by
// the quantisation policy (model/quant_policy.h): to the projections only.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/checked.h"
#include "core/dtype.h"

namespace plexus {

enum class WeightDType { kF32, kBF16, kF16, kInt8, kInt4 };

// "float32" | "bfloat16" | "float16" | "int8" | "int4".
std::string_view weight_dtype_name(WeightDType t);
// Accepts the names above and f32/fp32/bf16/f16/fp16/F32/BF16/F16. False for anything else.
bool parse_weight_dtype(std::string_view text, WeightDType* out);
// Throws InputError naming the value and the accepted spellings.
WeightDType parse_weight_dtype_or_throw(std::string_view text, std::string_view what);

// The block format int8 / int4 store projections in: q8_0 / q4_k; nullopt for the float formats.
std::optional<DType> weight_block_format(WeightDType t);
// Bits one element of a projection's weight takes in this format (int8: 8, int4: 4, before the
// block formats' scales; SizedTree sizes blocks exactly).
int weight_bits_linear(WeightDType t);
// Bits of every other tensor (embeddings, lm_head, norms, biases): int8/int4 keep them in
// 16-bit floats, as the quantisation policy says.
int weight_bits_other(WeightDType t);
// Bytes for `numel` elements of `bits` each, rounded up to a whole byte.
inline std::int64_t bytes_for(std::int64_t numel, int bits) { return (checked_mul(numel, bits, "a tensor's bit count") + 7) / 8; }

}  // namespace plexus
