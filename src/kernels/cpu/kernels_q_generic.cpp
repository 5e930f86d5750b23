// Portable dot products of block-format weights with 8-bit activations: the order
// quant_kernels.h defines, written out plainly. The SIMD tables follow it bit for bit.
#include <cmath>
#include <cstring>

#include "kernels/block_formats.h"
#include "kernels/cpu/quant_kernels.h"
#include "kernels/cpu/quant_x.h"

namespace plexus {
namespace {

inline float reduce8(const float* a) {
  const float s0 = a[0] + a[4], s1 = a[1] + a[5], s2 = a[2] + a[6], s3 = a[3] + a[7];
  return (s0 + s2) + (s1 + s3);
}

// acc[l] = fma(float(p[l]), d, acc[l]) for p[l] = the sum of v·q over the block's elements
// 4l..4l+3 (blocks of 32).
inline void block32(const int* v, const std::int8_t* q, float d, float* acc) {
  for (int l = 0; l < 8; ++l) {
    int p = 0;
    for (int i = 4 * l; i < 4 * l + 4; ++i) p += v[i] * q[i];
    acc[l] = std::fma(static_cast<float>(p), d, acc[l]);
  }
}

// The same with v = 1: the offset term of Q4_1 and Q5_1.
inline void block32_sums(const std::int8_t* q, float m, float* acc) {
  for (int l = 0; l < 8; ++l) {
    const int s = q[4 * l] + q[4 * l + 1] + q[4 * l + 2] + q[4 * l + 3];
    acc[l] = std::fma(static_cast<float>(s), m, acc[l]);
  }
}

// Nibble i of a block of 32 (Q4_0's packing: qs[i] low for i < 16, qs[i - 16] high).
inline int nibble(const std::uint8_t* qs, int i) { return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4; }

inline int fifth_bit(const std::uint8_t* qh, int i) {
  std::uint32_t h;
  std::memcpy(&h, qh, 4);
  return static_cast<int>((h >> i) & 1u) << 4;
}

// One block of 32: its integer values v and its f32 scale d (and offset m for Q4_1 / Q5_1).
void unpack32(DType wt, const std::uint8_t* b, int* v, float* d, float* m) {
  *d = *m = 0;
  switch (wt) {
    case DType::kQ8_0: {
      const auto* w = reinterpret_cast<const BlockQ8_0*>(b);
      for (int i = 0; i < 32; ++i) v[i] = w->qs[i];
      *d = f16_to_f32(w->d);
      return;
    }
    case DType::kQ4_0: {
      const auto* w = reinterpret_cast<const BlockQ4_0*>(b);
      for (int i = 0; i < 32; ++i) v[i] = nibble(w->qs, i) - 8;
      *d = f16_to_f32(w->d);
      return;
    }
    case DType::kQ4_1: {
      const auto* w = reinterpret_cast<const BlockQ4_1*>(b);
      for (int i = 0; i < 32; ++i) v[i] = nibble(w->qs, i);
      *d = f16_to_f32(w->d);
      *m = f16_to_f32(w->m);
      return;
    }
    case DType::kQ5_0: {
      const auto* w = reinterpret_cast<const BlockQ5_0*>(b);
      for (int i = 0; i < 32; ++i) v[i] = (nibble(w->qs, i) | fifth_bit(w->qh, i)) - 16;
      *d = f16_to_f32(w->d);
      return;
    }
    case DType::kQ5_1: {
      const auto* w = reinterpret_cast<const BlockQ5_1*>(b);
      for (int i = 0; i < 32; ++i) v[i] = nibble(w->qs, i) | fifth_bit(w->qh, i);
      *d = f16_to_f32(w->d);
      *m = f16_to_f32(w->m);
      return;
    }
    case DType::kIQ4_NL: {
      const auto* w = reinterpret_cast<const BlockIQ4_NL*>(b);
      for (int i = 0; i < 32; ++i) v[i] = kIq4Values[nibble(w->qs, i)];
      *d = f16_to_f32(w->d);
      return;
    }
    case DType::kMXFP4: {
      const auto* w = reinterpret_cast<const BlockMXFP4*>(b);
      for (int i = 0; i < 32; ++i) v[i] = kMxfp4Values[nibble(w->qs, i)];
      *d = mxfp4_half_scale(w->e);
      return;
    }
    default: return;
  }
}

float dot32(DType wt, const std::uint8_t* w, const XBlock32* x, std::int64_t nb) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const std::int64_t bytes = dtype_block_bytes(wt);
  const bool offset = wt == DType::kQ4_1 || wt == DType::kQ5_1;
  int v[32];
  for (std::int64_t b = 0; b < nb; ++b) {
    float d, m;
    unpack32(wt, w + b * bytes, v, &d, &m);
    block32(v, x[b].q, d * x[b].d, acc);
    if (offset) block32_sums(x[b].q, m * x[b].d, acc);
  }
  return reduce8(acc);
}

// One super-block of 256, as quant_kernels.h sees it: the integer values v, the integer scale of
// each 16-element sub-block sc16 (sub-blocks of 32 give both halves the same scale), the integer
// mins of the lanes' min terms (mins32 for Q4_K / Q5_K against sums, mins16 for Q2_K against
// sums16; zero otherwise), and the f32 d and dmin.
struct Super {
  int v[256];
  int sc16[16];
  int mins32[8];
  int mins16[16];
  float d = 0, dmin = 0;
  bool has_mins32 = false, has_mins16 = false;
};

void unpack256(DType wt, const std::uint8_t* b, Super& s) {
  s.has_mins32 = s.has_mins16 = false;
  switch (wt) {
    case DType::kQ4_K:
    case DType::kQ5_K: {
      const bool five = wt == DType::kQ5_K;
      const std::uint8_t* scales = five ? reinterpret_cast<const BlockQ5_K*>(b)->scales : reinterpret_cast<const BlockQ4_K*>(b)->scales;
      const std::uint8_t* qs = five ? reinterpret_cast<const BlockQ5_K*>(b)->qs : reinterpret_cast<const BlockQ4_K*>(b)->qs;
      int sc[8];
      q4_k_scales_mins(scales, sc, s.mins32);
      for (int j = 0; j < 8; ++j) {
        s.sc16[2 * j] = s.sc16[2 * j + 1] = sc[j];
        for (int l = 0; l < 32; ++l) {
          int q = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
          if (five) q |= ((reinterpret_cast<const BlockQ5_K*>(b)->qh[l] >> j) & 1) << 4;
          s.v[32 * j + l] = q;
        }
      }
      std::uint16_t d, dmin;
      std::memcpy(&d, b, 2);
      std::memcpy(&dmin, b + 2, 2);
      s.d = f16_to_f32(d);
      s.dmin = f16_to_f32(dmin);
      s.has_mins32 = true;
      return;
    }
    case DType::kQ6_K: {
      const auto* w = reinterpret_cast<const BlockQ6_K*>(b);
      for (int h = 0; h < 2; ++h) {
        const std::uint8_t* ql = w->ql + 64 * h;
        const std::uint8_t* qh = w->qh + 32 * h;
        int* o = s.v + 128 * h;
        for (int l = 0; l < 32; ++l) {
          o[l] = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
          o[l + 32] = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
          o[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          o[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        }
      }
      for (int j = 0; j < 16; ++j) s.sc16[j] = w->scales[j];
      s.d = f16_to_f32(w->d);
      return;
    }
    case DType::kQ3_K: {
      const auto* w = reinterpret_cast<const BlockQ3_K*>(b);
      for (int e = 0; e < 256; ++e) {
        const int h = e / 128, j = (e % 128) / 32, l = e % 32;
        s.v[e] = ((w->qs[32 * h + l] >> (2 * j)) & 3) - (((w->hmask[l] >> (4 * h + j)) & 1) ? 0 : 4);
      }
      for (int j = 0; j < 16; ++j) s.sc16[j] = q3_k_scale(w->scales, j) - 32;
      s.d = f16_to_f32(w->d);
      return;
    }
    case DType::kQ2_K: {
      const auto* w = reinterpret_cast<const BlockQ2_K*>(b);
      for (int e = 0; e < 256; ++e) s.v[e] = (w->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      for (int j = 0; j < 16; ++j) {
        s.sc16[j] = w->scales[j] & 15;
        s.mins16[j] = w->scales[j] >> 4;
      }
      s.d = f16_to_f32(w->d);
      s.dmin = f16_to_f32(w->dmin);
      s.has_mins16 = true;
      return;
    }
    case DType::kIQ4_XS: {
      const auto* w = reinterpret_cast<const BlockIQ4_XS*>(b);
      for (int j = 0; j < 8; ++j) {
        s.sc16[2 * j] = s.sc16[2 * j + 1] = iq4_xs_scale(w, j) - 32;
        for (int l = 0; l < 32; ++l) s.v[32 * j + l] = kIq4Values[nibble(w->qs + 16 * j, l)];
      }
      s.d = f16_to_f32(w->d);
      return;
    }
    default: return;
  }
}

float dot256(DType wt, const std::uint8_t* w, const XBlock256* x, std::int64_t nb) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const std::int64_t bytes = dtype_block_bytes(wt);
  Super s;
  for (std::int64_t b = 0; b < nb; ++b) {
    unpack256(wt, w + b * bytes, s);
    // S[l] = sum over chunks c of 32 of sc16[2c + l / 4] · (sum of v·q over the chunk's 4l..4l+3).
    int S[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int c = 0; c < 8; ++c) {
      for (int l = 0; l < 8; ++l) {
        int p = 0;
        for (int i = 32 * c + 4 * l; i < 32 * c + 4 * l + 4; ++i) p += s.v[i] * x[b].q[i];
        S[l] += s.sc16[2 * c + l / 4] * p;
      }
    }
    const float d = s.d * x[b].d;
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(static_cast<float>(S[l]), d, acc[l]);
    if (s.has_mins32 || s.has_mins16) {
      const float dm = s.dmin * x[b].d;
      for (int l = 0; l < 8; ++l) {
        const int M = s.has_mins32 ? s.mins32[l] * x[b].sums[l]
                                   : s.mins16[2 * l] * x[b].sums16[2 * l] + s.mins16[2 * l + 1] * x[b].sums16[2 * l + 1];
        acc[l] = std::fma(static_cast<float>(M), -dm, acc[l]);
      }
    }
  }
  return reduce8(acc);
}

}  // namespace

void dot_tile_q_generic(DType wt, const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y,
                        std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  const std::int64_t nb = k / dtype_block_elems(wt);
  const bool b32 = dtype_block_elems(wt) == 32;
  for (std::int64_t t = 0; t < nt; ++t) {
    const void* xt = static_cast<const std::uint8_t*>(xq) + t * ldxq;
    for (std::int64_t r = 0; r < nr; ++r) {
      const std::uint8_t* wr = static_cast<const std::uint8_t*>(w) + r * ldw;
      y[t * ldy + r] = b32 ? dot32(wt, wr, static_cast<const XBlock32*>(xt), nb) : dot256(wt, wr, static_cast<const XBlock256*>(xt), nb);
    }
  }
}

}  // namespace plexus
