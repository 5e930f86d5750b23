// Element types of weights and activations (f32, bf16, f16) and the GGUF block formats of quantised
// weights (kernels/block_formats.h), and scalar conversions between them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace plexus {

// The block formats: blocks of 32 (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4) and super-blocks of
// 256 (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS).
enum class DType { kF32, kBF16, kF16, kQ8_0, kQ4_0, kQ4_K, kQ6_K, kQ4_1, kQ5_0, kQ5_1, kQ2_K, kQ3_K, kQ5_K, kIQ4_NL, kIQ4_XS, kMXFP4 };

// Every block format, in the order users see them listed.
inline constexpr DType kBlockFormats[] = {DType::kQ8_0,   DType::kQ5_0,  DType::kQ5_1, DType::kQ4_0, DType::kQ4_1,
                                          DType::kIQ4_NL, DType::kMXFP4, DType::kQ6_K, DType::kQ5_K, DType::kQ4_K,
                                          DType::kIQ4_XS, DType::kQ3_K,  DType::kQ2_K};

// Bytes of one element of an element type (f32, bf16, f16). Block formats have no element
// size: asserting; use dtype_row_bytes.
std::size_t dtype_size(DType t);
bool dtype_is_block(DType t);                  // one of kBlockFormats
std::int64_t dtype_block_elems(DType t);       // elements per block: 32 or 256; 1 otherwise
std::int64_t dtype_block_bytes(DType t);       // bytes per block (block_formats.h); the element size otherwise
// Bytes of `elems` elements (a row, a whole tensor); elems must be a multiple of the block (asserted).
std::int64_t dtype_row_bytes(DType t, std::int64_t elems);
// "F32" | "BF16" | "F16" (safetensors spelling) | "Q8_0" | "Q4_K" | "IQ4_XS" | "MXFP4" | ... (GGUF spelling)
std::string_view dtype_name(DType t);
std::string_view dtype_torch_name(DType t);    // "float32" | "bfloat16" | "float16" | the GGUF name in lower case
// Accepts safetensors names (F32, BF16, F16), torch names (float32, bfloat16, float16) and
// short names (f32, bf16, f16). Returns false for anything else (block formats included).
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

// f32_to_bf16 with f32 subnormals to ±0, as AVX512_BF16's vcvtne2ps2bf16 converts (bitwise, NaN
// aside): the rounding of bf16 mixed-precision training.
inline std::uint16_t f32_to_bf16_ftz(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0) return static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  return f32_to_bf16(f);
}

// f rounded as f32_to_bf16_ftz, back as an f32.
inline float round_to_bf16(float f) { return bf16_to_f32(f32_to_bf16_ftz(f)); }

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);  // round to nearest even

}  // namespace plexus
