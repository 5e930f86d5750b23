// Element types of weights and activations, and scalar conversions between them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace plexus {

enum class DType { kF32, kBF16, kF16 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);          // "F32" | "BF16" | "F16" (safetensors spelling)
std::string_view dtype_torch_name(DType t);    // "float32" | "bfloat16" | "float16"
// Accepts safetensors names (F32, BF16, F16), torch names (float32, bfloat16, float16) and
// short names (f32, bf16, f16). Returns false for anything else.
bool parse_dtype(std::string_view text, DType* out);

inline float bf16_to_f32(std::uint16_t h) {
  std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, NaN stays NaN.
inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);  // round to nearest even

}  // namespace plexus
