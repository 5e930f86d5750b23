// The CPU compute operations: thin loops over the ISA kernels, threaded where it pays.
#include "compute/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compute/workspace.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"

namespace plexus {

void CpuOps::begin_batch(const TokenBatch& batch, std::span<const double> inv_freq, bool layers, Workspace& ws) {
  if (!layers) return;
  // cos/sin in double, then rounded: the tables every layer's rope reads.
  const std::size_t half = inv_freq.size();
  for (std::size_t t = 0; t < batch.pos.size(); ++t) {
    for (std::size_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(batch.pos[t]) * inv_freq[i];
      ws.rope_cos[t * half + i] = static_cast<float>(std::cos(a));
      ws.rope_sin[t * half + i] = static_cast<float>(std::sin(a));
    }
  }
}

void CpuOps::embed(const WeightMatrix& table, std::span<const std::int32_t> ids, float* x) {
  const std::int64_t H = table.cols;
  for (std::size_t t = 0; t < ids.size(); ++t) {
    float* row = x + static_cast<std::int64_t>(t) * H;
    k_.to_f32(table.dtype, table.row(ids[t]), row, H);  // block formats: dequantised
  }
}

void CpuOps::rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y) {
  plexus::rmsnorm(k_, x, w, rows, d, eps, y);
}

void CpuOps::matmul(std::span<const MatmulPart> parts, const float* x, std::int64_t n, std::int64_t ldx) {
  plexus::matmul(k_, pool_, parts, x, n, ldx);
}

void CpuOps::add_bias(float* y, const float* bias, std::int64_t n, std::int64_t d) {
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t i = 0; i < d; ++i) y[t * d + i] += bias[i];
}

void CpuOps::rope_store_kv(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) {
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  const std::int64_t hd = s.head_dim, half = hd / 2, Q = s.n_heads * hd, KV = s.n_kv_heads * hd;
  const std::int64_t row = s.rope_tables * half, table = s.rope_table * half;  // begin_batch's (n, tables · half)
  std::vector<float> scaled(s.rope_scale != 1 ? static_cast<std::size_t>(2 * half) : 0);  // cos, sin · rope_scale
  for (std::int64_t t = 0; t < n; ++t) {
    const float* cs = ws.rope_cos.data() + t * row + table;  // (half)
    const float* sn = ws.rope_sin.data() + t * row + table;  // (half)
    if (!scaled.empty()) {
      for (std::int64_t i = 0; i < half; ++i) scaled[i] = cs[i] * s.rope_scale, scaled[half + i] = sn[i] * s.rope_scale;
      cs = scaled.data(), sn = scaled.data() + half;
    }
    rope(ws.q.data() + t * Q, s.n_heads, hd, cs, sn, s.rope_interleaved, s.rotary_dim);
    rope(ws.k.data() + t * KV, s.n_kv_heads, hd, cs, sn, s.rope_interleaved, s.rotary_dim);
    // This token's keys and values at its position in its sequence's cache.
    KvCache& cache = *batch.cache[static_cast<std::size_t>(t)];
    const std::int64_t p = batch.pos[static_cast<std::size_t>(t)];
    for (std::int64_t g = 0; g < s.n_kv_heads; ++g) {
      std::copy_n(ws.k.data() + t * KV + g * hd, hd, cache.keys(layer, g) + p * hd);
      std::copy_n(ws.v.data() + t * KV + g * hd, hd, cache.values(layer, g) + p * hd);
    }
  }
}

void CpuOps::attention(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) {
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  const std::int64_t hd = s.head_dim, Q = s.n_heads * hd, nkv = s.n_kv_heads;
  const std::int64_t group = s.n_heads / s.n_kv_heads;
  // One chunk per (token, kv head): the `group` query heads that share a kv head read its keys
  // and values together. Causal rows of different lengths balance by chunk claiming.
  auto task = [&](std::int64_t item, int thread) {
    const std::int64_t t = item / nkv, g = item % nkv;
    KvCache& cache = *batch.cache[static_cast<std::size_t>(t)];
    const std::int64_t p = batch.pos[static_cast<std::size_t>(t)];
    const std::int64_t first = s.window > 0 ? std::max<std::int64_t>(0, p - s.window + 1) : 0;
    const std::int64_t n_keys = p + 1 - first;
    float* scores = ws.scores.data() + thread * group * ws.max_context();  // (group, n_keys)
    const float* q = ws.q.data() + t * Q + g * group * hd;                  // (group, hd)
    const float* keys = cache.keys(layer, g) + first * hd;                  // (n_keys, hd)
    const float* values = cache.values(layer, g) + first * hd;              // (n_keys, hd)
    k_.dot_tile(DType::kF32, keys, hd, q, hd, scores, n_keys, group, n_keys, hd);
    for (std::int64_t i = 0; i < group; ++i) {
      float* sc = scores + i * n_keys;
      k_.scale(s.scale, sc, n_keys);
      if (s.softcap > 0) {  // inside a pool task: this thread's loop
        for (std::int64_t j = 0; j < n_keys; ++j) sc[j] = std::tanh(sc[j] / s.softcap) * s.softcap;
      }
      if (s.sinks) softmax_with_sink(k_, sc, n_keys, s.sinks[g * group + i]);
      else softmax(k_, sc, n_keys);
      k_.weighted_rows(sc, n_keys, values, hd, ws.att.data() + t * Q + (g * group + i) * hd, hd);
    }
  };
  pool_.run_chunks(n * nkv, ChunkFn(task));
}

void CpuOps::silu_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  plexus::silu_mul(k_, pool_, gate, up, out, n);
}

void CpuOps::matmul_silu_mul(const MatmulPart& gate, const MatmulPart& up, const float* x, std::int64_t n,
                             std::int64_t ldx) {
  plexus::matmul_silu_mul(k_, pool_, gate, up, x, n, ldx);
}

void CpuOps::gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  plexus::gelu_tanh_mul(pool_, gate, up, out, n);
}

void CpuOps::scale(float* x, float s, std::int64_t n) { k_.scale(s, x, n); }

void CpuOps::softcap(float* x, float cap, std::int64_t n) { plexus::softcap(pool_, x, cap, n); }

void CpuOps::add(float* x, const float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void CpuOps::add_rmsnorm(float* x, const float* y, const float* w, std::int64_t rows, std::int64_t d, float eps,
                         float* out) {
  add(x, y, rows * d);
  rmsnorm(x, w, rows, d, eps, out);
}

void CpuOps::gather_rows(const float* src, std::span<const std::int64_t> rows, std::int64_t d, float* dst) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(dst + static_cast<std::int64_t>(i) * d, src + rows[i] * d, static_cast<std::size_t>(d) * sizeof(float));
  }
}

}  // namespace plexus
