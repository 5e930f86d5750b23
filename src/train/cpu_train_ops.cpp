// CpuTrainOps: the linears through train_gemm, the row-wise ops split by rows, the parameter
// reductions (rmsnorm weight, bias, embedding table) split by columns with the rows summed in
// order. Attention is in cpu_train_attention.cpp. Under kBf16 every linear form runs on
// train_gemm with GemmArgs::bf16 (the inference matmul is f32's alone).
#include "train/cpu_train_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/train_gemm.h"

namespace plexus {

namespace {

// From this many tokens the forward product runs on train_gemm rather than matmul.
constexpr std::int64_t kGemmForwardTokens = 512;

Isa training_isa(Isa isa) { return isa == Isa::kAvx512Bf16 ? Isa::kAvx512 : isa; }

// Rows per chunk so that a chunk holds about `work` elements.
std::int64_t rows_per_chunk(std::int64_t d, std::int64_t work = 16384) {
  return std::max<std::int64_t>(1, work / std::max<std::int64_t>(1, d));
}

// fn(r) for every row r in [0, rows), chunks of rows spread over the pool.
template <typename F>
void for_rows(ThreadPool& pool, std::int64_t rows, std::int64_t d, F&& fn) {
  pool.parallel_for(rows, rows_per_chunk(d), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) fn(r);
  });
}

}  // namespace

CpuTrainOps::CpuTrainOps(ThreadPool& pool, TrainPrecision precision) : CpuTrainOps(pool, best_isa(), precision) {}

CpuTrainOps::CpuTrainOps(ThreadPool& pool, Isa isa, TrainPrecision precision)
    : TrainOps(precision),
      pool_(pool),
      isa_(training_isa(isa)),
      bf16_isa_(isa_ == Isa::kAvx512 && isa_supported(Isa::kAvx512Bf16) ? Isa::kAvx512Bf16 : isa_),
      k_(isa_kernels(training_isa(isa))),
      bf16_(precision == TrainPrecision::kBf16) {}

void CpuTrainOps::embed(const float* table, std::span<const std::int32_t> ids, std::int64_t d, float* x) {
  for_rows(pool_, static_cast<std::int64_t>(ids.size()), d, [&](std::int64_t i) {
    std::memcpy(x + i * d, table + static_cast<std::int64_t>(ids[static_cast<std::size_t>(i)]) * d,
                sizeof(float) * static_cast<std::size_t>(d));
  });
}

void CpuTrainOps::rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
                          float* rstd) {
  for_rows(pool_, rows, d, [&](std::int64_t r) {
    const float* xr = x + r * d;
    const float rs = 1.0f / std::sqrt(k_.sum_squares(xr, d) / static_cast<float>(d) + eps);
    rstd[r] = rs;
    float* yr = y + r * d;
    for (std::int64_t j = 0; j < d; ++j) yr[j] = xr[j] * rs * w[j];
  });
}

void CpuTrainOps::linear(const float* x, const float* w, const float* bias, std::int64_t n, std::int64_t in,
                         std::int64_t out, float* y) {
  if (n < kGemmForwardTokens && !bf16_) {
    // The inference matmul (dot products of x and w rows, both read in place) is the faster one
    // below a few hundred tokens, where train_gemm's transposed packing of w is amortised over
    // too few rows (benchmarks/train).
    const MatmulPart part{WeightMatrix{w, DType::kF32, out, in}, y, out};
    matmul(k_, pool_, {&part, 1}, x, n, in);
    if (bias)
      for_rows(pool_, n, out, [&](std::int64_t t) {
        for (std::int64_t o = 0; o < out; ++o) y[t * out + o] += bias[o];
      });
    return;
  }
  if (bias)
    for_rows(pool_, n, out,
             [&](std::int64_t t) { std::memcpy(y + t * out, bias, sizeof(float) * static_cast<std::size_t>(out)); });
  GemmArgs g;
  g.m = n, g.n = out, g.k = in;
  g.a = x, g.a_rs = in, g.a_cs = 1;
  g.b = w, g.b_rs = 1, g.b_cs = in;  // B (in, out) = wᵀ
  g.c = y, g.ldc = out;
  g.accumulate = bias != nullptr;
  g.bf16 = bf16_;
  train_gemm(gemm_isa(), pool_, g);
}

void CpuTrainOps::rope(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim,
                       const float* cos, const float* sin, bool inverse) {
  rope_partial(x, b, T, heads, head_dim, head_dim, cos, sin, inverse);  // every dim of each head rotated
}

void CpuTrainOps::silu_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  pool_.parallel_for(n, 4096, [&](std::int64_t b, std::int64_t e) { k_.silu_mul(gate + b, up + b, out + b, e - b); });
}

double CpuTrainOps::cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                                  float grad_scale) {
  const auto rows = static_cast<std::int64_t>(targets.size());
  std::vector<double> row_loss(static_cast<std::size_t>(rows));
  for_rows(pool_, rows, vocab, [&](std::int64_t r) {
    float* l = logits + r * vocab;
    const std::int32_t target = targets[static_cast<std::size_t>(r)];
    const float mx = *std::max_element(l, l + vocab);
    const float picked = l[target];
    const float sum = k_.exp_shift_sum(l, mx, vocab);
    row_loss[static_cast<std::size_t>(r)] = std::log(static_cast<double>(sum)) + mx - picked;
    k_.scale(grad_scale / sum, l, vocab);
    l[target] -= grad_scale;
  });
  double loss = 0;
  for (double v : row_loss) loss += v;
  return loss;
}

void CpuTrainOps::linear_backward_input(const float* dy, const float* w, std::int64_t n, std::int64_t in,
                                        std::int64_t out, float* dx, bool accumulate) {
  GemmArgs g;
  g.m = n, g.n = in, g.k = out;
  g.a = dy, g.a_rs = out, g.a_cs = 1;
  g.b = w, g.b_rs = in, g.b_cs = 1;
  g.c = dx, g.ldc = in;
  g.accumulate = accumulate;
  g.bf16 = bf16_;
  train_gemm(gemm_isa(), pool_, g);
}

void CpuTrainOps::linear_backward_weight(const float* dy, const float* x, std::int64_t n, std::int64_t in,
                                         std::int64_t out, float* dw, float* dbias) {
  GemmArgs g;
  g.m = out, g.n = in, g.k = n;
  g.a = dy, g.a_rs = 1, g.a_cs = out;  // A (out, n) = dyᵀ
  g.b = x, g.b_rs = in, g.b_cs = 1;
  g.c = dw, g.ldc = in;
  g.accumulate = true;
  g.bf16 = bf16_;
  train_gemm(gemm_isa(), pool_, g);
  if (!dbias) return;
  pool_.parallel_for(out, 64, [&](std::int64_t b, std::int64_t e) {
    std::vector<float> acc(static_cast<std::size_t>(e - b), 0.0f);
    for (std::int64_t t = 0; t < n; ++t)
      for (std::int64_t o = b; o < e; ++o) acc[static_cast<std::size_t>(o - b)] += dy[t * out + o];
    for (std::int64_t o = b; o < e; ++o) dbias[o] += acc[static_cast<std::size_t>(o - b)];
  });
}

void CpuTrainOps::rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                                   std::int64_t rows, std::int64_t d, float* dx, float* dw) {
  // dx = rstd · (g − x · rstd² · Σ g·x / d), g = dy · w (as RefTrainOps derives it).
  for_rows(pool_, rows, d, [&](std::int64_t r) {
    const float* xr = x + r * d;
    const float* gr = dy + r * d;
    double dot = 0;
    for (std::int64_t j = 0; j < d; ++j) dot += static_cast<double>(gr[j] * w[j]) * xr[j];
    const float rs = rstd[r];
    const float c = static_cast<float>(static_cast<double>(rs) * rs * dot / static_cast<double>(d));
    float* dr = dx + r * d;
    for (std::int64_t j = 0; j < d; ++j) dr[j] += rs * (gr[j] * w[j] - xr[j] * c);
  });
  pool_.parallel_for(d, 64, [&](std::int64_t b, std::int64_t e) {
    std::vector<float> acc(static_cast<std::size_t>(e - b), 0.0f);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float rs = rstd[r];
      for (std::int64_t j = b; j < e; ++j) acc[static_cast<std::size_t>(j - b)] += dy[r * d + j] * (x[r * d + j] * rs);
    }
    for (std::int64_t j = b; j < e; ++j) dw[j] += acc[static_cast<std::size_t>(j - b)];
  });
}

void CpuTrainOps::silu_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                                    std::int64_t n) {
  constexpr std::int64_t kBlock = 1024;
  pool_.parallel_for(n, kBlock, [&](std::int64_t b, std::int64_t e) {
    float e_neg[kBlock];  // exp(−gate)
    for (std::int64_t i0 = b; i0 < e; i0 += kBlock) {
      const std::int64_t m = std::min(kBlock, e - i0);
      for (std::int64_t i = 0; i < m; ++i) e_neg[i] = -gate[i0 + i];
      k_.exp_shift_sum(e_neg, 0.0f, m);
      for (std::int64_t i = 0; i < m; ++i) {
        const float g = gate[i0 + i], u = up[i0 + i], d = dout[i0 + i];
        const float sg = 1.0f / (1.0f + e_neg[i]);
        dgate[i0 + i] = d * u * sg * (1.0f + g * (1.0f - sg));
        dup[i0 + i] = d * g * sg;
      }
    }
  });
}

void CpuTrainOps::embed_backward(const float* dx, std::span<const std::int32_t> ids, std::int64_t d, float* dtable) {
  pool_.parallel_for(d, 16, [&](std::int64_t b, std::int64_t e) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      float* row = dtable + static_cast<std::int64_t>(ids[i]) * d;
      const float* src = dx + static_cast<std::int64_t>(i) * d;
      for (std::int64_t j = b; j < e; ++j) row[j] += src[j];
    }
  });
}

void CpuTrainOps::add(float* x, const float* y, std::int64_t n) {
  pool_.parallel_for(n, 4096, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) x[i] += y[i];
  });
}

void CpuTrainOps::zero(float* x, std::int64_t n) {
  pool_.parallel_for(n, 4096, [&](std::int64_t b, std::int64_t e) { std::fill(x + b, x + e, 0.0f); });
}

}  // namespace plexus
