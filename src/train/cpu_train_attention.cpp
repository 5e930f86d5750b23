// CpuTrainOps' causal GQA attention and its backward as blocked products on train_gemm's
// register tile (train_gemm_serial inside each thread's block), the row-wise softmax on the ISA
// table. Forward: threads take (sequence, head, block of 48 queries): S = q·kᵀ over the block's
// keys, softmax rows (lse kept), out = P·v. Backward, per (sequence, kv head): pass 1 by (head
// of the group, query block) recomputes P from lse, forms dS = P·(dP − Σ dout·out)·scale with
// dP = dout·vᵀ, writes dq = dS·k and keeps P and dS; pass 2 by key blocks sums dv = Pᵀ·dout
// and dk = dSᵀ·q over the group's heads in order. Entries outside a query's window are zeroed
// where a product reads them. Gemma 2's soft-capped scores (AttentionShape::softcap): c·tanh(s / c)
// before the softmax, dS times 1 − tanh². No sum is split across threads. Under kBf16 the products round
// their inputs (GemmArgs::bf16) and the forward normalises P before P·v (the P that is rounded).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/train_gemm.h"
#include "train/cpu_train_ops.h"

namespace plexus {

namespace {

constexpr std::int64_t kQueryBlock = 48;
constexpr std::int64_t kKeyBlock = 48;

std::int64_t first_key(std::int64_t t, std::int64_t window) {
  return window > 0 ? std::max<std::int64_t>(0, t - window + 1) : 0;
}

// One past the last query that reads key j.
std::int64_t last_query_end(std::int64_t j, std::int64_t T, std::int64_t window) {
  return window > 0 ? std::min(T, j + window) : T;
}

// C (m, n) = or += A · B on this thread; A (i, p) = a[i·a_rs + p·a_cs], B (p, j) = b[p·b_rs + j·b_cs].
void product(Isa isa, bool bf16, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t a_rs,
             std::int64_t a_cs, const float* b, std::int64_t b_rs, std::int64_t b_cs, float* c, std::int64_t ldc,
             bool accumulate) {
  GemmArgs g;
  g.m = m, g.n = n, g.k = k;
  g.a = a, g.a_rs = a_rs, g.a_cs = a_cs;
  g.b = b, g.b_rs = b_rs, g.b_cs = b_cs;
  g.c = c, g.ldc = ldc;
  g.accumulate = accumulate;
  g.bf16 = bf16;
  train_gemm_serial(isa, g);
}

void clear(float* begin, float* end) {
  if (end > begin) std::fill(begin, end, 0.0f);
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
    const std::int64_t ld = nk + 16;  // a line past nk: rows not 4 KiB apart
    std::vector<float>& sc = scores[static_cast<std::size_t>(thread)];
    if (static_cast<std::int64_t>(sc.size()) < kQueryBlock * ld)
      sc.resize(static_cast<std::size_t>(kQueryBlock * (T + 16)));
    const float* kb = k + (sq * T + lo) * kw + kh * hd;
    const float* vb = v + (sq * T + lo) * kw + kh * hd;
    const std::int64_t row0 = (sq * T + t0) * qw + h * hd;
    // S (t1 − t0, nk) = q rows · k rowsᵀ
    product(gemm_isa(), bf16_, t1 - t0, nk, hd, q + row0, qw, 1, kb, 1, kw, sc.data(), ld, false);
    float inv_sum[kQueryBlock];
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t lt = first_key(t, s.window), len = t - lt + 1;
      float* srow = sc.data() + (t - t0) * ld;
      float* row = srow + (lt - lo);
      k_.scale(s.scale, row, len);
      if (s.softcap > 0) {  // Gemma 2: c·tanh(score / c)
        for (std::int64_t j = 0; j < len; ++j) row[j] = s.softcap * std::tanh(row[j] / s.softcap);
      }
      const float mx = *std::max_element(row, row + len);
      const float sum = k_.exp_shift_sum(row, mx, len);
      lse[(sq * s.n_heads + h) * T + t] = mx + std::log(sum);
      inv_sum[t - t0] = 1.0f / sum;
      if (bf16_) k_.scale(inv_sum[t - t0], row, len);
      clear(srow, row);
      clear(row + len, srow + nk);
    }
    // out rows = P (unnormalised) · v rows, then / sum; under bf16, P normalised · v rows.
    product(gemm_isa(), bf16_, t1 - t0, hd, nk, sc.data(), ld, 1, vb, kw, 1, out + row0, qw, false);
    if (!bf16_)
      for (std::int64_t t = t0; t < t1; ++t) k_.scale(inv_sum[t - t0], out + row0 + (t - t0) * qw, hd);
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
  // P and dS rows are ldp apart: T plus a line, so the columns pass 2 reads down a block do
  // not all fall in the same cache sets (a stride of a multiple of 4 KiB would).
  const std::int64_t ldp = T + 16, square = T * ldp;
  if (static_cast<std::int64_t>(att_scratch_.size()) < 2 * group * square)
    att_scratch_.resize(static_cast<std::size_t>(2 * group * square));
  float* P = att_scratch_.data();                    // (group, T, ldp): row t, key j
  float* dS = att_scratch_.data() + group * square;  // (group, T, ldp)
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
        if (static_cast<std::int64_t>(dp.size()) < kQueryBlock * nk)
          dp.resize(static_cast<std::size_t>(kQueryBlock * T));
        float* Pg = P + g * square;
        float* dSg = dS + g * square;
        const std::int64_t row0 = (sq * T + t0) * qw + h * hd;
        // S into P's rows t0..t1 (columns lo..t1), dP = dout rows · v rowsᵀ.
        product(gemm_isa(), bf16_, t1 - t0, nk, hd, q + row0, qw, 1, kbase + lo * kw, 1, kw, Pg + t0 * ldp + lo, ldp, false);
        product(gemm_isa(), bf16_, t1 - t0, nk, hd, dout + row0, qw, 1, vbase + lo * kw, 1, kw, dp.data(), nk, false);
        for (std::int64_t t = t0; t < t1; ++t) {
          const std::int64_t lt = first_key(t, s.window), len = t - lt + 1;
          float* p = Pg + t * ldp + lt;
          k_.scale(s.scale, p, len);
          float* ds = dSg + t * ldp + lt;
          if (s.softcap > 0) {  // Gemma 2: p = c·tanh(score / c); ds holds its derivative 1 − tanh² meanwhile
            for (std::int64_t j = 0; j < len; ++j) {
              const float th = std::tanh(p[j] / s.softcap);
              p[j] = s.softcap * th;
              ds[j] = 1.0f - th * th;
            }
          }
          k_.exp_shift_sum(p, lse[(sq * s.n_heads + h) * T + t], len);
          const float* dpr = dp.data() + (t - t0) * nk + (lt - lo);
          const std::int64_t row = (sq * T + t) * qw + h * hd;
          const float D = k_.dot(dout + row, out + row, hd);
          if (s.softcap > 0) {
            for (std::int64_t j = 0; j < len; ++j) ds[j] = p[j] * (dpr[j] - D) * s.scale * ds[j];
          } else {
            for (std::int64_t j = 0; j < len; ++j) ds[j] = p[j] * (dpr[j] - D) * s.scale;
          }
          // Zeros where dq's product (keys lo..t1) and pass 2 (whole key blocks) read.
          const std::int64_t zlo = std::min(lo, lt / kKeyBlock * kKeyBlock);
          const std::int64_t zhi = std::min(T, std::max(t1, (t / kKeyBlock + 1) * kKeyBlock));
          for (float* m : {Pg, dSg}) {
            clear(m + t * ldp + zlo, m + t * ldp + lt);
            clear(m + t * ldp + t + 1, m + t * ldp + zhi);
          }
        }
        // dq rows = dS rows · k rows
        product(gemm_isa(), bf16_, t1 - t0, hd, nk, dSg + t0 * ldp + lo, ldp, 1, kbase + lo * kw, kw, 1, dq + row0, qw, false);
      };
      pool_.run_chunks(group * q_blocks, pass1);
      auto pass2 = [&](std::int64_t kb, int) {
        const std::int64_t j0 = kb * kKeyBlock, j1 = std::min(T, j0 + kKeyBlock);
        const std::int64_t nq = last_query_end(j1 - 1, T, s.window) - j0;  // queries j0.. that read the block
        float* dvb = dv + (sq * T + j0) * kw + kh * hd;
        float* dkb = dk + (sq * T + j0) * kw + kh * hd;
        for (std::int64_t g = 0; g < group; ++g) {
          const std::int64_t h = kh * group + g;
          const std::int64_t row0 = (sq * T + j0) * qw + h * hd;
          // dv rows (j1 − j0, hd) += P[j0.., j0..j1]ᵀ · dout rows; dk likewise from dS and q.
          product(gemm_isa(), bf16_, j1 - j0, hd, nq, P + g * square + j0 * ldp + j0, 1, ldp, dout + row0, qw, 1, dvb, kw, g > 0);
          product(gemm_isa(), bf16_, j1 - j0, hd, nq, dS + g * square + j0 * ldp + j0, 1, ldp, q + row0, qw, 1, dkb, kw, g > 0);
        }
      };
      pool_.run_chunks(k_blocks, pass2);
    }
}

}  // namespace plexus
