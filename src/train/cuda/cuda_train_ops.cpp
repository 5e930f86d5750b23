// CudaTrainOps: TrainOps' shapes mapped onto cuBLAS column-major GEMMs and the training kernels.
#include "train/cuda/cuda_train_ops.h"

#include <cublas_v2.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/train_attention.h"
#include "kernels/cuda/train_loss.h"
#include "kernels/cuda/train_rows.h"

namespace plexus::cuda {

namespace {

// Scratch slots.
enum : int { kIds, kIdOrder, kIdGroupStart, kIdGroupId, kPartials, kRowDot, kRowLoss, kSlots };

TrainAttentionDims dims_of(std::int64_t b, std::int64_t T, const AttentionShape& s) {
  if (s.rope_interleaved) throw InputError("CUDA training: interleaved rope is not supported");
  return TrainAttentionDims{b, T, s.n_heads, s.n_kv_heads, s.head_dim, s.window, s.scale};
}

}  // namespace

CudaTrainOps::CudaTrainOps() : scratch_(kSlots) {
  PLEXUS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "CudaTrainOps stream");
  cublasHandle_t h = nullptr;
  PLEXUS_CUDA_CHECK(cublasCreate(&h), "CudaTrainOps cuBLAS handle");
  cublas_ = h;
  PLEXUS_CUDA_CHECK(cublasSetStream(h, stream_), "CudaTrainOps cuBLAS stream");
  // f32 GEMMs in f32: no TF32 tensor cores (CUBLAS_DEFAULT_MATH with CUBLAS_COMPUTE_32F).
  PLEXUS_CUDA_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "CudaTrainOps cuBLAS math mode");
}

CudaTrainOps::~CudaTrainOps() {
  if (stream_) cudaStreamSynchronize(stream_);
  for (Scratch& s : scratch_)
    if (s.p) cudaFree(s.p);
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaTrainOps::synchronize() { PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_), "CudaTrainOps"); }

void* CudaTrainOps::scratch(int slot, std::size_t bytes) {
  Scratch& s = scratch_[static_cast<std::size_t>(slot)];
  if (s.bytes < bytes) {
    // The old buffer may still be read by enqueued work: wait for it before freeing.
    PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_), "CudaTrainOps growing scratch");
    if (s.p) PLEXUS_CUDA_CHECK(cudaFree(s.p), "CudaTrainOps growing scratch");
    s.p = nullptr;
    s.bytes = 0;
    const std::size_t grown = std::max(bytes, std::size_t{4096});
    PLEXUS_CUDA_CHECK(cudaMalloc(&s.p, grown), "CudaTrainOps scratch of " + std::to_string(grown) + " bytes");
    s.bytes = grown;
  }
  return s.p;
}

const std::int32_t* CudaTrainOps::upload_ids(int slot, std::span<const std::int32_t> host) {
  auto* d = static_cast<std::int32_t*>(scratch(slot, host.size_bytes()));
  // From pageable memory: the call returns once the host data is staged, so `host` may go.
  // Each slot is written again only after the stream has read it (same stream, in order).
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(d, host.data(), host.size_bytes(), cudaMemcpyHostToDevice, stream_),
                    "CudaTrainOps uploading ids");
  return d;
}

void CudaTrainOps::check_launch(const char* what) {
  PLEXUS_CUDA_CHECK(cudaGetLastError(), std::string("CudaTrainOps ") + what);
}

void CudaTrainOps::gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                        std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
                        bool accumulate, const char* what) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = 0 (or unchanged)
    if (!accumulate) PLEXUS_CUDA_CHECK(cudaMemset2DAsync(c, static_cast<std::size_t>(ldc) * sizeof(float), 0,
                                                         static_cast<std::size_t>(m) * sizeof(float),
                                                         static_cast<std::size_t>(n), stream_),
                                       what);
    return;
  }
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  PLEXUS_CUDA_CHECK(cublasGemmEx(cublas_, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &one, a, CUDA_R_32F,
                                 static_cast<int>(lda), b, CUDA_R_32F, static_cast<int>(ldb), &beta, c, CUDA_R_32F,
                                 static_cast<int>(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                    std::string("CudaTrainOps ") + what + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                        std::to_string(k));
}

void CudaTrainOps::embed(const float* table, std::span<const std::int32_t> ids, std::int64_t d, float* x) {
  if (ids.empty()) return;
  launch_train_embed(table, upload_ids(kIds, ids), static_cast<std::int64_t>(ids.size()), d, x, stream_);
  check_launch("embed");
}

void CudaTrainOps::rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
                           float* rstd) {
  launch_train_rmsnorm(x, w, rows, d, eps, y, rstd, stream_);
  check_launch("rmsnorm");
}

// Row-major y (n, out) is column-major yᵀ (out, n) = w (out, in) · xᵀ (in, n): w as stored is
// column-major wᵀ (in, out), so op T; x as stored is xᵀ (in, n).
void CudaTrainOps::linear(const float* x, const float* w, const float* bias, std::int64_t n, std::int64_t in,
                          std::int64_t out, float* y) {
  gemm(true, false, out, n, in, w, in, x, in, y, out, false, "linear");
  if (bias) {
    launch_add_bias(y, bias, n, out, stream_);
    check_launch("linear bias");
  }
}

void CudaTrainOps::rope_table(std::span<const double> inv_freq, std::int64_t T, float* cos, float* sin) {
  // The host's table (train_ops.cpp: angles in double), copied: the CPU's bits.
  const std::size_t n = static_cast<std::size_t>(T) * inv_freq.size();
  std::vector<float> c(n), s(n);
  TrainOps::rope_table(inv_freq, T, c.data(), s.data());
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(cos, c.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream_), "rope_table");
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(sin, s.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream_), "rope_table");
  synchronize();  // c and s are freed on return
}

void CudaTrainOps::rope(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim,
                        const float* cos, const float* sin, bool inverse) {
  launch_train_rope(x, b, T, heads, head_dim, cos, sin, inverse, stream_);
  check_launch("rope");
}

void CudaTrainOps::attention(const float* q, const float* k, const float* v, std::int64_t b, std::int64_t T,
                             const AttentionShape& s, float* out, float* lse) {
  launch_train_attention(q, k, v, dims_of(b, T, s), out, lse, stream_);
  check_launch("attention");
}

void CudaTrainOps::silu_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  launch_silu_mul(gate, up, out, n, stream_);
  check_launch("silu_mul");
}

double CudaTrainOps::cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                                   float grad_scale) {
  const auto n = static_cast<std::int64_t>(targets.size());
  if (n == 0) return 0;
  auto* row_loss = static_cast<double*>(scratch(kRowLoss, targets.size() * sizeof(double)));
  launch_cross_entropy(logits, upload_ids(kIds, targets), n, vocab, grad_scale, row_loss, stream_);
  check_launch("cross_entropy");
  row_loss_.resize(targets.size());
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(row_loss_.data(), row_loss, targets.size() * sizeof(double),
                                    cudaMemcpyDeviceToHost, stream_),
                    "CudaTrainOps cross_entropy losses");
  synchronize();
  double loss = 0;
  for (const double l : row_loss_) loss += l;  // in row order, as the CPU adds them
  return loss;
}

// dx (n, in): column-major dxᵀ (in, n) = wᵀ (in, out) · dyᵀ (out, n), both as stored.
void CudaTrainOps::linear_backward_input(const float* dy, const float* w, std::int64_t n, std::int64_t in,
                                         std::int64_t out, float* dx, bool accumulate) {
  gemm(false, false, in, n, out, w, in, dy, out, dx, in, accumulate, "linear_backward_input");
}

// dw (out, in): column-major dwᵀ (in, out) += xᵀ (in, n) · dy (n, out); dy as stored is dyᵀ, so op T.
void CudaTrainOps::linear_backward_weight(const float* dy, const float* x, std::int64_t n, std::int64_t in,
                                          std::int64_t out, float* dw, float* dbias) {
  gemm(false, true, in, out, n, x, in, dy, out, dw, in, true, "linear_backward_weight");
  if (dbias) {
    launch_column_sums_add(dy, n, out, dbias,
                           static_cast<float*>(scratch(kPartials, sizeof(float) * static_cast<std::size_t>(
                                                                      train_row_partials(n, out)))),
                           stream_);
    check_launch("linear_backward_weight bias");
  }
}

void CudaTrainOps::rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                                    std::int64_t rows, std::int64_t d, float* dx, float* dw) {
  auto* partials = static_cast<float*>(scratch(kPartials, sizeof(float) * static_cast<std::size_t>(train_row_partials(rows, d))));
  launch_train_rmsnorm_backward(dy, x, w, rstd, rows, d, dx, dw, partials, stream_);
  check_launch("rmsnorm_backward");
}

void CudaTrainOps::attention_backward(const float* dout, const float* q, const float* k, const float* v,
                                      const float* out, const float* lse, std::int64_t b, std::int64_t T,
                                      const AttentionShape& s, float* dq, float* dk, float* dv) {
  auto* row_dot = static_cast<float*>(scratch(kRowDot, sizeof(float) * static_cast<std::size_t>(b * s.n_heads * T)));
  launch_train_attention_backward(dout, q, k, v, out, lse, dims_of(b, T, s), dq, dk, dv, row_dot, stream_);
  check_launch("attention_backward");
}

void CudaTrainOps::silu_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                                     std::int64_t n) {
  launch_silu_mul_backward(dout, gate, up, dgate, dup, n, stream_);
  check_launch("silu_mul_backward");
}

void CudaTrainOps::embed_backward(const float* dx, std::span<const std::int32_t> ids, std::int64_t d, float* dtable) {
  if (ids.empty()) return;
  // Rows grouped by id (a stable sort: each id's rows in increasing i), one group per distinct id.
  std::vector<std::int32_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return ids[static_cast<std::size_t>(a)] < ids[static_cast<std::size_t>(b)]; });
  std::vector<std::int32_t> start, group_id;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::int32_t id = ids[static_cast<std::size_t>(order[k])];
    if (k == 0 || id != group_id.back()) {
      start.push_back(static_cast<std::int32_t>(k));
      group_id.push_back(id);
    }
  }
  start.push_back(static_cast<std::int32_t>(order.size()));
  const std::int32_t* d_order = upload_ids(kIdOrder, order);
  const std::int32_t* d_start = upload_ids(kIdGroupStart, start);
  const std::int32_t* d_group = upload_ids(kIdGroupId, group_id);
  launch_train_embed_backward(dx, d_order, d_start, d_group, static_cast<std::int64_t>(group_id.size()), d, dtable,
                              stream_);
  check_launch("embed_backward");
}

void CudaTrainOps::add(float* x, const float* y, std::int64_t n) {
  launch_add(x, y, n, stream_);
  check_launch("add");
}

void CudaTrainOps::zero(float* x, std::int64_t n) {
  if (n == 0) return;
  PLEXUS_CUDA_CHECK(cudaMemsetAsync(x, 0, static_cast<std::size_t>(n) * sizeof(float), stream_), "CudaTrainOps zero");
}

}  // namespace plexus::cuda
