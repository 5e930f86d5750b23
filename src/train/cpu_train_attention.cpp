// CpuTrainOps' causal GQA attention and its backward, built on the ISA table's tiled dot
// products (dot_tile), exp_shift_sum and weighted_rows. Forward: threads take (sequence, head,
// block of 16 queries). Backward, per (sequence, kv head): pass 1 by query blocks recomputes the
// probabilities from lse, forms dS = P·(dP − Σ dout·out)·scale, writes dq and keeps P and dS;
// pass 2 by key blocks sums dv = Pᵀ·dout and dk = dSᵀ·q over the group's heads and queries in
// order. No sum is split across threads.
#include <algorithm>
#include <cmath>
#include <vector>

#include "train/cpu_train_ops.h"

namespace plexus {

namespace {

constexpr std::int64_t kQueryBlock = 16;
constexpr std::int64_t kKeyBlock = 16;

std::int64_t first_key(std::int64_t t, std::int64_t window) {
  return window > 0 ? std::max<std::int64_t>(0, t - window + 1) : 0;
}

// One past the last query that reads key j.
std::int64_t last_query_end(std::int64_t j, std::int64_t T, std::int64_t window) {
  return window > 0 ? std::min(T, j + window) : T;
}

}  // namespace

void CpuTrainOps::attention(const float* q, const float* k, const float* v, std::int64_t b, std::int64_t T,
                            const AttentionShape& s, float* out, float* lse) {
  const std::int64_t hd = s.head_dim, qw = s.n_heads * hd, kw = s.n_kv_heads * hd;
  const std::int64_t group = s.n_heads / s.n_kv_heads;
  const std::int64_t blocks = (T + kQueryBlock - 1) / kQueryBlock;
  std::vector<std::vector<float>> scores(static_cast<std::size_t>(pool_.size()));
  auto unit = [&](std::int64_t u, int thread) {
    const std::int64_t qb = u % blocks, h = (u / blocks) % s.n_heads, sq = u / (blocks * s.n_heads);
    const std::int64_t kh = h / group;
    const std::int64_t t0 = qb * kQueryBlock, t1 = std::min(T, t0 + kQueryBlock);
    const std::int64_t lo = first_key(t0, s.window), nk = t1 - lo;
    std::vector<float>& sc = scores[static_cast<std::size_t>(thread)];
    if (static_cast<std::int64_t>(sc.size()) < kQueryBlock * nk) sc.resize(static_cast<std::size_t>(kQueryBlock * T));
    const float* kbase = k + (sq * T) * kw + kh * hd;
    const float* vbase = v + (sq * T) * kw + kh * hd;
    k_.dot_tile(DType::kF32, kbase + lo * kw, kw, q + (sq * T + t0) * qw + h * hd, qw, sc.data(), nk, t1 - t0, nk,
                hd);
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t lt = first_key(t, s.window), len = t - lt + 1;
      float* row = sc.data() + (t - t0) * nk + (lt - lo);
      k_.scale(s.scale, row, len);
      const float mx = *std::max_element(row, row + len);
      const float sum = k_.exp_shift_sum(row, mx, len);
      lse[(sq * s.n_heads + h) * T + t] = mx + std::log(sum);
      float* o = out + (sq * T + t) * qw + h * hd;
      k_.weighted_rows(row, len, vbase + lt * kw, kw, o, hd);
      k_.scale(1.0f / sum, o, hd);
    }
  };
  pool_.run_chunks(b * s.n_heads * blocks, unit);
}

void CpuTrainOps::attention_backward(const float* dout, const float* q, const float* k, const float* v,
                                     const float* out, const float* lse, std::int64_t b, std::int64_t T,
                                     const AttentionShape& s, float* dq, float* dk, float* dv) {
  const std::int64_t hd = s.head_dim, qw = s.n_heads * hd, kw = s.n_kv_heads * hd;
  const std::int64_t group = s.n_heads / s.n_kv_heads;
  const std::int64_t q_blocks = (T + kQueryBlock - 1) / kQueryBlock;
  const std::int64_t k_blocks = (T + kKeyBlock - 1) / kKeyBlock;
  const std::int64_t square = T * T;
  if (static_cast<std::int64_t>(att_scratch_.size()) < 2 * group * square)
    att_scratch_.resize(static_cast<std::size_t>(2 * group * square));
  float* P = att_scratch_.data();               // (group, T, T): row t, key j
  float* dS = att_scratch_.data() + group * square;  // (group, T, T)
  std::vector<std::vector<float>> tmp(static_cast<std::size_t>(pool_.size()));
  for (std::int64_t sq = 0; sq < b; ++sq)
    for (std::int64_t kh = 0; kh < s.n_kv_heads; ++kh) {
      const float* kbase = k + (sq * T) * kw + kh * hd;
      const float* vbase = v + (sq * T) * kw + kh * hd;
      auto pass1 = [&](std::int64_t u, int thread) {
        const std::int64_t qb = u % q_blocks, g = u / q_blocks, h = kh * group + g;
        const std::int64_t t0 = qb * kQueryBlock, t1 = std::min(T, t0 + kQueryBlock);
        const std::int64_t lo = first_key(t0, s.window), nk = t1 - lo;
        std::vector<float>& dp = tmp[static_cast<std::size_t>(thread)];
        if (static_cast<std::int64_t>(dp.size()) < kQueryBlock * nk) dp.resize(static_cast<std::size_t>(kQueryBlock * T));
        float* Pg = P + g * square;
        float* dSg = dS + g * square;
        // Scores into P's rows (from column lo), dP into dp.
        const float* qrows = q + (sq * T + t0) * qw + h * hd;
        const float* drows = dout + (sq * T + t0) * qw + h * hd;
        k_.dot_tile(DType::kF32, kbase + lo * kw, kw, qrows, qw, Pg + t0 * T + lo, T, t1 - t0, nk, hd);
        k_.dot_tile(DType::kF32, vbase + lo * kw, kw, drows, qw, dp.data(), nk, t1 - t0, nk, hd);
        for (std::int64_t t = t0; t < t1; ++t) {
          const std::int64_t lt = first_key(t, s.window), len = t - lt + 1;
          float* p = Pg + t * T + lt;
          k_.scale(s.scale, p, len);
          k_.exp_shift_sum(p, lse[(sq * s.n_heads + h) * T + t], len);
          const float* dpr = dp.data() + (t - t0) * nk + (lt - lo);
          const std::int64_t row = (sq * T + t) * qw + h * hd;
          const float D = k_.dot(dout + row, out + row, hd);
          float* ds = dSg + t * T + lt;
          for (std::int64_t j = 0; j < len; ++j) ds[j] = p[j] * (dpr[j] - D) * s.scale;
          k_.weighted_rows(ds, len, kbase + lt * kw, kw, dq + row, hd);
        }
      };
      pool_.run_chunks(group * q_blocks, pass1);
      auto pass2 = [&](std::int64_t kb, int thread) {
        const std::int64_t j0 = kb * kKeyBlock, j1 = std::min(T, j0 + kKeyBlock);
        const std::int64_t t_end = last_query_end(j1 - 1, T, s.window), span = t_end - j0;
        std::vector<float>& w = tmp[static_cast<std::size_t>(thread)];
        // Columns of P and dS for the block's keys: (2, kKeyBlock, span), then one output row.
        const std::size_t need = static_cast<std::size_t>(2 * kKeyBlock * span + hd);
        if (w.size() < need) w.resize(need);
        float* wp = w.data();
        float* wd = w.data() + kKeyBlock * span;
        float* acc = w.data() + 2 * kKeyBlock * span;
        for (std::int64_t g = 0; g < group; ++g) {
          const std::int64_t h = kh * group + g;
          const float* Pg = P + g * square;
          const float* dSg = dS + g * square;
          for (std::int64_t t = j0; t < t_end; ++t)
            for (std::int64_t j = j0; j < j1; ++j) {
              wp[(j - j0) * span + (t - j0)] = Pg[t * T + j];
              wd[(j - j0) * span + (t - j0)] = dSg[t * T + j];
            }
          for (std::int64_t j = j0; j < j1; ++j) {
            const std::int64_t tb = j, te = last_query_end(j, T, s.window), n = te - tb;
            float* dvr = dv + (sq * T + j) * kw + kh * hd;
            float* dkr = dk + (sq * T + j) * kw + kh * hd;
            const float* pcol = wp + (j - j0) * span + (tb - j0);
            const float* dcol = wd + (j - j0) * span + (tb - j0);
            k_.weighted_rows(pcol, n, dout + (sq * T + tb) * qw + h * hd, qw, g == 0 ? dvr : acc, hd);
            if (g > 0)
              for (std::int64_t c = 0; c < hd; ++c) dvr[c] += acc[c];
            k_.weighted_rows(dcol, n, q + (sq * T + tb) * qw + h * hd, qw, g == 0 ? dkr : acc, hd);
            if (g > 0)
              for (std::int64_t c = 0; c < hd; ++c) dkr[c] += acc[c];
          }
        }
      };
      pool_.run_chunks(k_blocks, pass2);
    }
}

}  // namespace plexus
