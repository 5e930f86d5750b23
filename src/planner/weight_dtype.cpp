// Names and sizes of the weight formats a plan can use.
#include "planner/weight_dtype.h"

#include <string>

#include "core/error.h"
#include "core/nearest_name.h"

namespace plexus {

std::string_view weight_dtype_name(WeightDType t) {
  switch (t) {
    case WeightDType::kF32: return "float32";
    case WeightDType::kBF16: return "bfloat16";
    case WeightDType::kF16: return "float16";
    case WeightDType::kInt8: return "int8";
    case WeightDType::kInt4: return "int4";
  }
  return "?";
}

bool parse_weight_dtype(std::string_view s, WeightDType* out) {
  if (s == "float32" || s == "f32" || s == "fp32" || s == "F32") *out = WeightDType::kF32;
  else if (s == "bfloat16" || s == "bf16" || s == "BF16") *out = WeightDType::kBF16;
  else if (s == "float16" || s == "f16" || s == "fp16" || s == "F16" || s == "half") *out = WeightDType::kF16;
  else if (s == "int8" || s == "i8" || s == "q8") *out = WeightDType::kInt8;
  else if (s == "int4" || s == "i4" || s == "q4") *out = WeightDType::kInt4;
  else return false;
  return true;
}

WeightDType parse_weight_dtype_or_throw(std::string_view text, std::string_view what) {
  WeightDType t;
  if (!parse_weight_dtype(text, &t)) {
    throw InputError(std::string(what) + ": unknown dtype '" + std::string(text) +
                     "'; use one of float32, bfloat16, float16, int8, int4 (or f32, bf16, f16)" +
                     did_you_mean(std::string(text), {"float32", "bfloat16", "float16", "int8", "int4", "f32", "bf16", "f16"}));
  }
  return t;
}

std::optional<DType> weight_block_format(WeightDType t) {
  switch (t) {
    case WeightDType::kF32:
    case WeightDType::kBF16:
    case WeightDType::kF16: return std::nullopt;
    case WeightDType::kInt8: return DType::kQ8_0;
    case WeightDType::kInt4: return DType::kQ4_K;
  }
  return std::nullopt;
}

int weight_bits_linear(WeightDType t) {
  switch (t) {
    case WeightDType::kF32: return 32;
    case WeightDType::kBF16: return 16;
    case WeightDType::kF16: return 16;
    case WeightDType::kInt8: return 8;
    case WeightDType::kInt4: return 4;
  }
  return 32;
}

int weight_bits_other(WeightDType t) {
  switch (t) {
    case WeightDType::kF32: return 32;
    case WeightDType::kBF16: return 16;
    case WeightDType::kF16: return 16;
    case WeightDType::kInt8: return 16;
    case WeightDType::kInt4: return 16;
  }
  return 32;
}

}  // namespace plexus
