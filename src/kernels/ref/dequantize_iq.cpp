// The codebook types back to f32 (dequantize_iq.h). Per super-block of 256, byte layouts as GGUF
// defines them; every value is the f32 expression gguf-py evaluates, in its order (this file is
// built with -ffp-contract=off).
#include "kernels/ref/dequantize_iq.h"

#include <cstring>

#include "core/dtype.h"
#include "kernels/iq_grids.h"

namespace plexus {
namespace {

constexpr int kQK = 256;

float f16_at(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}
std::uint16_t u16_at(const std::uint8_t* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
std::uint32_t u32_at(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 8 weights: db · grid[j] with the sign of bit j of `signs`.
void put8(float db, const std::uint8_t* grid, unsigned signs, float* y) {
  for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid[j]) * ((signs >> j) & 1 ? -1.0f : 1.0f);
}

// IQ2_XXS (66 bytes): f16 d; per 32 weights two 32-bit words: a = 4 grid indices (bytes),
// b = 4 seven-bit sign indices (bits 7l..7l+6) and a 4-bit scale (bits 28..31);
// db = d · (0.5 + scale) · 0.25.
void iq2_xxs(const std::uint8_t* b, float* y) {
  const float d = f16_at(b);
  const IqGrids& g = iq_grids();
  for (int ib = 0; ib < 8; ++ib) {
    const std::uint32_t a = u32_at(b + 2 + 8 * ib), s = u32_at(b + 2 + 8 * ib + 4);
    const float db = d * (0.5f + static_cast<float>(s >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l) put8(db, g.iq2xxs[(a >> (8 * l)) & 255], iq_ksign((s >> (7 * l)) & 127), y + 32 * ib + 8 * l);
  }
}

// IQ2_XS (74 bytes): f16 d; 32 16-bit words (9-bit grid index, 7-bit sign index); 8 scale bytes,
// a nibble per 16 weights (low first); db = d · (0.5 + scale) · 0.25.
void iq2_xs(const std::uint8_t* b, float* y) {
  const float d = f16_at(b);
  const IqGrids& g = iq_grids();
  for (int k = 0; k < 32; ++k) {
    const std::uint16_t q = u16_at(b + 2 + 2 * k);
    const int scale = (b[66 + k / 4] >> (4 * ((k / 2) % 2))) & 15;
    const float db = d * (0.5f + static_cast<float>(scale)) * 0.25f;
    put8(db, g.iq2xs[q & 511], iq_ksign(q >> 9), y + 8 * k);
  }
}

// IQ2_S (82 bytes): f16 d; 32 low index bytes; 32 sign bytes; 8 bytes of high index bits (2 per
// index, low first); 8 scale bytes as IQ2_XS's.
void iq2_s(const std::uint8_t* b, float* y) {
  const float d = f16_at(b);
  const IqGrids& g = iq_grids();
  const std::uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *scales = b + 74;
  for (int k = 0; k < 32; ++k) {
    const int index = qs[k] | (((qh[k / 4] >> (2 * (k % 4))) & 3) << 8);
    const int scale = (scales[k / 4] >> (4 * ((k / 2) % 2))) & 15;
    const float db = d * (0.5f + static_cast<float>(scale)) * 0.25f;
    put8(db, g.iq2s[index], signs[k], y + 8 * k);
  }
}

// IQ3_XXS (98 bytes): f16 d; 64 grid index bytes (4 weights each); per 32 weights a 32-bit word
// of 4 seven-bit sign indices and a 4-bit scale (bits 28..31); db = d · (0.5 + scale) · 0.5.
void iq3_xxs(const std::uint8_t* b, float* y) {
  const float d = f16_at(b);
  const IqGrids& g = iq_grids();
  const std::uint8_t* qs = b + 2;
  for (int ib = 0; ib < 8; ++ib) {
    const std::uint32_t s = u32_at(b + 66 + 4 * ib);
    const float db = d * (0.5f + static_cast<float>(s >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {
      std::uint8_t grid[8];
      std::memcpy(grid, g.iq3xxs[qs[8 * ib + 2 * l]], 4);
      std::memcpy(grid + 4, g.iq3xxs[qs[8 * ib + 2 * l + 1]], 4);
      put8(db, grid, iq_ksign((s >> (7 * l)) & 127), y + 32 * ib + 8 * l);
    }
  }
}

// IQ3_S (110 bytes): f16 d; 64 low index bytes; 8 bytes of high index bits (1 per index); 32 sign
// bytes; 4 scale bytes, a nibble per 32 weights (low first); db = d · (1 + 2 · scale).
void iq3_s(const std::uint8_t* b, float* y) {
  const float d = f16_at(b);
  const IqGrids& g = iq_grids();
  const std::uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *scales = b + 106;
  for (int k = 0; k < 32; ++k) {  // 8 weights each: indices 2k, 2k + 1
    const int ib = k / 4;
    const float db = d * static_cast<float>(1 + 2 * ((scales[ib / 2] >> (4 * (ib % 2))) & 15));
    std::uint8_t grid[8];
    for (int h = 0; h < 2; ++h) {
      const int i = 2 * k + h;
      std::memcpy(grid + 4 * h, g.iq3s[qs[i] | (((qh[i / 8] >> (i % 8)) & 1) << 8)], 4);
    }
    put8(db, grid, signs[k], y + 8 * k);
  }
}

// 8 weights dl · (grid[j] + delta).
void put8_delta(float dl, const std::int8_t* grid, float delta, float* y) {
  for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(grid[j]) + delta);
}

// IQ1_S (50 bytes): f16 d; 32 low index bytes; per 32 weights a 16-bit word: 3 high bits of each
// of its 4 indices (bits 3l..3l+2), a 3-bit scale (12..14), the sign of delta (15);
// dl = d · (2 · scale + 1), delta = ±0.125.
void iq1_s(const std::uint8_t* b, float* y) {
  const float d = f16_at(b);
  const IqGrids& g = iq_grids();
  for (int ib = 0; ib < 8; ++ib) {
    const std::uint16_t h = u16_at(b + 34 + 2 * ib);
    const float dl = d * static_cast<float>(2 * ((h >> 12) & 7) + 1);
    const float delta = (h & 0x8000) ? -0.125f : 0.125f;
    for (int l = 0; l < 4; ++l) put8_delta(dl, g.iq1s[b[2 + 4 * ib + l] | (((h >> (3 * l)) & 7) << 8)], delta, y + 32 * ib + 8 * l);
  }
}

// IQ1_M (56 bytes): 32 low index bytes; 16 bytes of nibbles (low first), one per index: 3 high
// index bits and the sign of delta (bit 3); 4 16-bit words: 3-bit scales per 16 weights (bits
// 3j..3j+2 of word i: scale 4i + j) and, in their top nibbles, the f16 d (word i's bits 12..15 are
// d's bits 4i..4i+3); dl = d · (2 · scale + 1), delta = ±0.125.
void iq1_m(const std::uint8_t* b, float* y) {
  const IqGrids& g = iq_grids();
  const std::uint8_t *qs = b, *qh = b + 32;
  std::uint16_t sc[4];
  for (int i = 0; i < 4; ++i) sc[i] = u16_at(b + 48 + 2 * i);
  const std::uint16_t dbits = static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
  const float d = f16_to_f32(dbits);
  for (int k = 0; k < 32; ++k) {  // 8 weights each
    const int nib = (qh[k / 2] >> (4 * (k % 2))) & 15;
    const int s = k / 2;  // the scale of weights 16s..16s+15
    const float dl = d * static_cast<float>(2 * ((sc[s / 4] >> (3 * (s % 4))) & 7) + 1);
    const float delta = (nib & 8) ? -0.125f : 0.125f;
    put8_delta(dl, g.iq1s[qs[k] | ((nib & 7) << 8)], delta, y + 8 * k);
  }
}

}  // namespace

bool iq_type_of_code(std::uint32_t code, IqType* t) {
  switch (code) {
    case 16: case 17: case 18: case 19: case 21: case 22: case 29:
      *t = static_cast<IqType>(code);
      return true;
    default: return false;
  }
}

std::int64_t iq_block_bytes(IqType t) {
  switch (t) {
    case IqType::kIQ2_XXS: return 66;
    case IqType::kIQ2_XS: return 74;
    case IqType::kIQ2_S: return 82;
    case IqType::kIQ3_XXS: return 98;
    case IqType::kIQ3_S: return 110;
    case IqType::kIQ1_S: return 50;
    case IqType::kIQ1_M: return 56;
  }
  return 0;
}

void dequantize_iq_row(IqType t, const void* src, float* dst, std::int64_t n) {
  const auto* b = static_cast<const std::uint8_t*>(src);
  void (*block)(const std::uint8_t*, float*) = nullptr;
  switch (t) {
    case IqType::kIQ2_XXS: block = iq2_xxs; break;
    case IqType::kIQ2_XS: block = iq2_xs; break;
    case IqType::kIQ2_S: block = iq2_s; break;
    case IqType::kIQ3_XXS: block = iq3_xxs; break;
    case IqType::kIQ3_S: block = iq3_s; break;
    case IqType::kIQ1_S: block = iq1_s; break;
    case IqType::kIQ1_M: block = iq1_m; break;
  }
  const std::int64_t bytes = iq_block_bytes(t);
  for (std::int64_t i = 0; i < n / kQK; ++i) block(b + i * bytes, dst + i * kQK);
}

}  // namespace plexus
