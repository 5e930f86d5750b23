// Portable dot products of block-format weights with 8-bit activations: the order
// quant_kernels.h defines, written out plainly. The SIMD tables follow it bit for bit.
#include <cmath>

#include "kernels/block_formats.h"
#include "kernels/cpu/quant_kernels.h"
#include "kernels/cpu/quant_x.h"

namespace plexus {
namespace {

inline float reduce8(const float* a) {
  const float s0 = a[0] + a[4], s1 = a[1] + a[5], s2 = a[2] + a[6], s3 = a[3] + a[7];
  return (s0 + s2) + (s1 + s3);
}

// acc[l] += p[l] · d for the 32 products w[i]·q[i] of one block.
inline void block32(const int* w, const std::int8_t* q, float d, float* acc) {
  for (int l = 0; l < 8; ++l) {
    int p = 0;
    for (int i = 4 * l; i < 4 * l + 4; ++i) p += w[i] * q[i];
    acc[l] = std::fma(static_cast<float>(p), d, acc[l]);
  }
}

float dot_q8_0(const BlockQ8_0* w, const XBlock32* x, std::int64_t nb) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int v[32];
  for (std::int64_t b = 0; b < nb; ++b) {
    for (int i = 0; i < 32; ++i) v[i] = w[b].qs[i];
    block32(v, x[b].q, f16_to_f32(w[b].d) * x[b].d, acc);
  }
  return reduce8(acc);
}

float dot_q4_0(const BlockQ4_0* w, const XBlock32* x, std::int64_t nb) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int v[32];
  for (std::int64_t b = 0; b < nb; ++b) {
    for (int i = 0; i < 16; ++i) {
      v[i] = (w[b].qs[i] & 15) - 8;
      v[i + 16] = (w[b].qs[i] >> 4) - 8;
    }
    block32(v, x[b].q, f16_to_f32(w[b].d) * x[b].d, acc);
  }
  return reduce8(acc);
}

// S[l] += scale(c, l) · (sum of v·q over chunk c's elements 4l..4l+3), chunks of 32.
template <class Scale>
void chunks(const int* v, const std::int8_t* q, Scale scale, int* s) {
  for (int c = 0; c < 8; ++c) {
    for (int l = 0; l < 8; ++l) {
      int p = 0;
      for (int i = 32 * c + 4 * l; i < 32 * c + 4 * l + 4; ++i) p += v[i] * q[i];
      s[l] += scale(c, l) * p;
    }
  }
}

float dot_q4_k(const BlockQ4_K* w, const XBlock256* x, std::int64_t nb) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int v[256];
  for (std::int64_t b = 0; b < nb; ++b) {
    int sc[8], m[8];
    q4_k_scales_mins(w[b].scales, sc, m);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        v[64 * c + l] = w[b].qs[32 * c + l] & 15;
        v[64 * c + 32 + l] = w[b].qs[32 * c + l] >> 4;
      }
    }
    int s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    chunks(v, x[b].q, [&](int c, int) { return sc[c]; }, s);
    const float d = f16_to_f32(w[b].d) * x[b].d, dm = f16_to_f32(w[b].dmin) * x[b].d;
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(static_cast<float>(s[l]), d, acc[l]);
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(static_cast<float>(m[l] * x[b].sums[l]), -dm, acc[l]);
  }
  return reduce8(acc);
}

float dot_q6_k(const BlockQ6_K* w, const XBlock256* x, std::int64_t nb) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int v[256];
  for (std::int64_t b = 0; b < nb; ++b) {
    for (int h = 0; h < 2; ++h) {
      const std::uint8_t* ql = w[b].ql + 64 * h;
      const std::uint8_t* qh = w[b].qh + 32 * h;
      int* o = v + 128 * h;
      for (int l = 0; l < 32; ++l) {
        o[l] = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
        o[l + 32] = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
        o[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        o[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      }
    }
    int s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const std::int8_t* sc = w[b].scales;
    chunks(v, x[b].q, [&](int c, int l) { return static_cast<int>(sc[2 * c + l / 4]); }, s);
    const float d = f16_to_f32(w[b].d) * x[b].d;
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(static_cast<float>(s[l]), d, acc[l]);
  }
  return reduce8(acc);
}

}  // namespace

void dot_tile_q_generic(DType wt, const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y,
                        std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) {
  const std::int64_t nb = k / dtype_block_elems(wt);
  for (std::int64_t t = 0; t < nt; ++t) {
    const void* xt = static_cast<const std::uint8_t*>(xq) + t * ldxq;
    for (std::int64_t r = 0; r < nr; ++r) {
      const void* wr = static_cast<const std::uint8_t*>(w) + r * ldw;
      float& out = y[t * ldy + r];
      switch (wt) {
        case DType::kQ8_0: out = dot_q8_0(static_cast<const BlockQ8_0*>(wr), static_cast<const XBlock32*>(xt), nb); break;
        case DType::kQ4_0: out = dot_q4_0(static_cast<const BlockQ4_0*>(wr), static_cast<const XBlock32*>(xt), nb); break;
        case DType::kQ4_K: out = dot_q4_k(static_cast<const BlockQ4_K*>(wr), static_cast<const XBlock256*>(xt), nb); break;
        case DType::kQ6_K: out = dot_q6_k(static_cast<const BlockQ6_K*>(wr), static_cast<const XBlock256*>(xt), nb); break;
        case DType::kF32:
        case DType::kBF16:
        case DType::kF16: break;
      }
    }
  }
}

}  // namespace plexus
