// Oracle kernels: direct loops, double accumulation, no tricks.
#include "kernels/ref/ref_kernels.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "kernels/cpu/quant_x.h"
#include "kernels/ref/dequantize.h"

namespace plexus::ref {

float weight_at(const WeightMatrix& w, std::int64_t r, std::int64_t c) {
  const std::int64_t i = w.in_out() ? c * w.in_out_ld + r : r * w.cols + c;  // stored (in, out): column r of row c
  switch (w.dtype) {
    case DType::kF32: return static_cast<const float*>(w.data)[i];
    case DType::kBF16: return bf16_to_f32(static_cast<const std::uint16_t*>(w.data)[i]);
    case DType::kF16: return f16_to_f32(static_cast<const std::uint16_t*>(w.data)[i]);
    default: {  // a block format
      const std::int64_t be = dtype_block_elems(w.dtype);
      std::vector<float> block(static_cast<std::size_t>(be));
      dequantize_row(w.dtype, static_cast<const std::uint8_t*>(w.row(r)) + c / be * dtype_block_bytes(w.dtype), block.data(), be);
      return block[static_cast<std::size_t>(c % be)];
    }
  }
  return 0;
}

namespace {
// Row r of w as f32.
std::vector<float> row_f32(const WeightMatrix& w, std::int64_t r) {
  std::vector<float> out(static_cast<std::size_t>(w.cols));
  if (dtype_is_block(w.dtype)) {
    dequantize_row(w.dtype, w.row(r), out.data(), w.cols);
  } else {
    for (std::int64_t c = 0; c < w.cols; ++c) out[static_cast<std::size_t>(c)] = weight_at(w, r, c);
  }
  return out;
}

void matmul_f32(const WeightMatrix& w, const float* x, std::int64_t n, float* y) {
  for (std::int64_t r = 0; r < w.rows; ++r) {
    const std::vector<float> wr = row_f32(w, r);
    for (std::int64_t t = 0; t < n; ++t) {
      double s = 0;
      for (std::int64_t c = 0; c < w.cols; ++c) s += static_cast<double>(wr[static_cast<std::size_t>(c)]) * x[t * w.cols + c];
      y[t * w.rows + r] = static_cast<float>(s);
    }
  }
}
}  // namespace

void matmul(const WeightMatrix& w, const float* x, std::int64_t n, float* y) { matmul_f32(w, x, n, y); }

void matmul_quantized_x(const WeightMatrix& w, const float* x, std::int64_t n, float* y) {
  const std::int64_t ld = qx_row_bytes(w.dtype, w.cols), blk = qx_block_elems(w.dtype);
  std::vector<std::uint8_t> q(static_cast<std::size_t>(n * ld));
  quantize_x(w.dtype, x, w.cols, n, w.cols, q.data());
  std::vector<float> xd(static_cast<std::size_t>(n * w.cols));
  for (std::int64_t t = 0; t < n; ++t) {
    const std::uint8_t* qt = q.data() + t * ld;
    for (std::int64_t b = 0; b < w.cols / blk; ++b) {
      float d;
      const std::int8_t* qs;
      if (blk == 32) {
        const XBlock32* xb = reinterpret_cast<const XBlock32*>(qt) + b;
        d = xb->d;
        qs = xb->q;
      } else {
        const XBlock256* xb = reinterpret_cast<const XBlock256*>(qt) + b;
        d = xb->d;
        qs = xb->q;
      }
      for (std::int64_t i = 0; i < blk; ++i) xd[static_cast<std::size_t>(t * w.cols + b * blk + i)] = d * static_cast<float>(qs[i]);
    }
  }
  matmul_f32(w, xd.data(), n, y);
}

void rmsnorm(const float* x, const void* weight, DType wt, std::int64_t n, std::int64_t d, double eps, float* y) {
  const WeightMatrix w{weight, wt, 1, d};
  for (std::int64_t t = 0; t < n; ++t) {
    double ss = 0;
    for (std::int64_t i = 0; i < d; ++i) ss += static_cast<double>(x[t * d + i]) * x[t * d + i];
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
    for (std::int64_t i = 0; i < d; ++i) y[t * d + i] = static_cast<float>(x[t * d + i] * scale * weight_at(w, 0, i));
  }
}

void silu_mul(const float* gate, const float* up, std::int64_t n, float* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

void gelu_tanh_mul(const float* gate, const float* up, std::int64_t n, float* out) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  for (std::int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(0.5 * g * (1.0 + std::tanh(k * (g + 0.044715 * g * g * g))) * up[i]);
  }
}

void softcap(float* x, double cap, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::tanh(x[i] / cap) * cap);
}

void rope(float* x, std::int64_t n_heads, std::int64_t head_dim, std::int64_t position, const double* inv_freq, bool interleaved,
          std::int64_t rotary_dim, double scale) {
  const std::int64_t half = (rotary_dim > 0 ? rotary_dim : head_dim) / 2;
  for (std::int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (std::int64_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(position) * inv_freq[i];
      const double c = std::cos(a) * scale, s = std::sin(a) * scale;
      const std::int64_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
      const double x0 = v[i0], x1 = v[i1];
      v[i0] = static_cast<float>(x0 * c - x1 * s);
      v[i1] = static_cast<float>(x1 * c + x0 * s);
    }
  }
}

void attention(const float* q, const float* keys, const float* values, std::int64_t n_keys, std::int64_t stride,
               std::int64_t head_dim, float* out) {
  std::vector<double> s(static_cast<std::size_t>(n_keys));
  double mx = -INFINITY;
  for (std::int64_t j = 0; j < n_keys; ++j) {
    double d = 0;
    for (std::int64_t i = 0; i < head_dim; ++i) d += static_cast<double>(q[i]) * keys[j * stride + i];
    s[static_cast<std::size_t>(j)] = d / std::sqrt(static_cast<double>(head_dim));
    mx = std::max(mx, s[static_cast<std::size_t>(j)]);
  }
  double total = 0;
  for (auto& v : s) total += (v = std::exp(v - mx));
  for (std::int64_t i = 0; i < head_dim; ++i) {
    double acc = 0;
    for (std::int64_t j = 0; j < n_keys; ++j) acc += s[static_cast<std::size_t>(j)] * values[j * stride + i];
    out[i] = static_cast<float>(acc / total);
  }
}

void embed(const WeightMatrix& table, const std::int32_t* ids, std::int64_t n, float* x) {
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t c = 0; c < table.cols; ++c) x[t * table.cols + c] = weight_at(table, ids[t], c);
}

void attention_gqa(const float* q, const float* keys, const float* values, std::int64_t kv_stride,
                   std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t head_dim, std::int64_t pos,
                   std::int64_t window, double scale, float* out) {
  const std::int64_t group = n_heads / n_kv_heads;
  const std::int64_t first = window > 0 ? std::max<std::int64_t>(0, pos - window + 1) : 0;
  const std::int64_t n_keys = pos + 1 - first;
  std::vector<double> s(static_cast<std::size_t>(n_keys));
  for (std::int64_t h = 0; h < n_heads; ++h) {
    const float* qh = q + h * head_dim;
    const float* k = keys + (h / group) * kv_stride + first * head_dim;    // (n_keys, head_dim)
    const float* v = values + (h / group) * kv_stride + first * head_dim;  // (n_keys, head_dim)
    double mx = -INFINITY;
    for (std::int64_t j = 0; j < n_keys; ++j) {
      double d = 0;
      for (std::int64_t i = 0; i < head_dim; ++i) d += static_cast<double>(qh[i]) * k[j * head_dim + i];
      s[static_cast<std::size_t>(j)] = d * scale;
      mx = std::max(mx, s[static_cast<std::size_t>(j)]);
    }
    double total = 0;
    for (auto& e : s) total += (e = std::exp(e - mx));
    for (std::int64_t i = 0; i < head_dim; ++i) {
      double acc = 0;
      for (std::int64_t j = 0; j < n_keys; ++j) acc += s[static_cast<std::size_t>(j)] * v[j * head_dim + i];
      out[h * head_dim + i] = static_cast<float>(acc / total);
    }
  }
}

double logsumexp(const float* x, std::int64_t n) {
  double mx = -INFINITY;
  for (std::int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(x[i]) - mx);
  return mx + std::log(s);
}

}  // namespace plexus::ref
