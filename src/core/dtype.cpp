// Element type names and the IEEE half-precision conversions (portable, no F16C needed).
#include "core/dtype.h"

#include <cassert>

namespace plexus {

std::size_t dtype_size(DType t) {
  assert(!dtype_is_block(t) && "a block format has no element size: use dtype_row_bytes");
  return static_cast<std::size_t>(dtype_block_bytes(t));
}

bool dtype_is_block(DType t) { return dtype_block_elems(t) > 1; }

std::int64_t dtype_block_elems(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: return 1;
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL:
    case DType::kMXFP4: return 32;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS: return 256;
  }
  return 1;
}

std::int64_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kQ8_0: return 34;   // f16 scale + 32 int8
    case DType::kQ4_0: return 18;   // f16 scale + 32 nibbles
    case DType::kQ4_K: return 144;  // f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles
    case DType::kQ6_K: return 210;  // 128 low nibbles, 64 bytes of high 2 bits, 16 int8 scales, f16 d
    case DType::kQ4_1: return 20;   // f16 scale, f16 min + 32 nibbles
    case DType::kQ5_0: return 22;   // f16 scale, 32 high bits + 32 nibbles
    case DType::kQ5_1: return 24;   // f16 scale, f16 min, 32 high bits + 32 nibbles
    case DType::kIQ4_NL: return 18; // f16 scale + 32 nibbles indexing a 16-value table
    case DType::kQ2_K: return 84;   // 16 bytes of 4-bit scales/mins, 64 bytes of 2-bit values, f16 d, dmin
    case DType::kQ3_K: return 110;  // 32 bytes of high bits, 64 of 2-bit values, 12 of 6-bit scales, f16 d
    case DType::kQ5_K: return 176;  // f16 d, dmin, 12 bytes of 6-bit scales/mins, 32 of high bits, 128 of nibbles
    case DType::kIQ4_XS: return 136;  // f16 d, 2 + 4 bytes of 6-bit scales, 128 bytes of table nibbles
    case DType::kMXFP4: return 17;    // E8M0 scale byte + 32 nibbles of E2M1 floats
  }
  return 0;
}

std::int64_t dtype_row_bytes(DType t, std::int64_t elems) {
  const std::int64_t b = dtype_block_elems(t);
  assert(elems % b == 0 && "a row of a block format holds whole blocks");
  return elems / b * dtype_block_bytes(t);
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kBF16: return "BF16";
    case DType::kF16: return "F16";
    case DType::kQ8_0: return "Q8_0";
    case DType::kQ4_0: return "Q4_0";
    case DType::kQ4_K: return "Q4_K";
    case DType::kQ6_K: return "Q6_K";
    case DType::kQ4_1: return "Q4_1";
    case DType::kQ5_0: return "Q5_0";
    case DType::kQ5_1: return "Q5_1";
    case DType::kQ2_K: return "Q2_K";
    case DType::kQ3_K: return "Q3_K";
    case DType::kQ5_K: return "Q5_K";
    case DType::kIQ4_NL: return "IQ4_NL";
    case DType::kIQ4_XS: return "IQ4_XS";
    case DType::kMXFP4: return "MXFP4";
  }
  return "?";
}

std::string_view dtype_torch_name(DType t) {
  switch (t) {
    case DType::kF32: return "float32";
    case DType::kBF16: return "bfloat16";
    case DType::kF16: return "float16";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
    case DType::kQ4_K: return "q4_k";
    case DType::kQ6_K: return "q6_k";
    case DType::kQ4_1: return "q4_1";
    case DType::kQ5_0: return "q5_0";
    case DType::kQ5_1: return "q5_1";
    case DType::kQ2_K: return "q2_k";
    case DType::kQ3_K: return "q3_k";
    case DType::kQ5_K: return "q5_k";
    case DType::kIQ4_NL: return "iq4_nl";
    case DType::kIQ4_XS: return "iq4_xs";
    case DType::kMXFP4: return "mxfp4";
  }
  return "?";
}

bool parse_dtype(std::string_view s, DType* out) {
  if (s == "F32" || s == "float32" || s == "f32" || s == "fp32") *out = DType::kF32;
  else if (s == "BF16" || s == "bfloat16" || s == "bf16") *out = DType::kBF16;
  else if (s == "F16" || s == "float16" || s == "f16" || s == "fp16" || s == "half") *out = DType::kF16;
  else return false;
  return true;
}

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      u = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint16_t f32_to_f16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;              // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;             // overflow (>= 65520) -> inf
  if (abs < 0x38800000u) {                                   // below smallest normal half
    if (abs < 0x33000000u) return sign;                      // rounds to zero
    const std::uint32_t e = abs >> 23;
    const std::uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - e;                     // 14 + (112 - e) ... in [14, 24]
    std::uint32_t half = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1);
    const std::uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return sign | static_cast<std::uint16_t>(half);
  }
  std::uint32_t h = ((abs >> 13) - (112u << 10));
  const std::uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<std::uint16_t>(h);
}

}  // namespace plexus
