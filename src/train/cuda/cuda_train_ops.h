// TrainOps on one CUDA device: the linear forms on cuBLAS (f32 inputs, f32 accumulation, never
// TF32), the rest on the train_*.cu kernels (kernels/cuda), asynchronous on one stream and
// deterministic (no atomics; every sum in a fixed order). Plain C++ header.
//
// Memory: every pointer passed to the ops is device memory of the current device; the object owns
// its stream, a cuBLAS handle and scratch it grows on demand (ids, rmsnorm partials, attention row
// sums, per-row losses). Results are ready once synchronize() returns (cross_entropy returns the
// loss, so it waits for its own work).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <vector>

#include "train/train_ops.h"

struct cublasContext;

namespace plexus::cuda {

class CudaTrainOps final : public TrainOps {
 public:
  // On the current CUDA device; RuntimeError when a stream or the cuBLAS handle cannot be made.
  CudaTrainOps();
  ~CudaTrainOps() override;
  CudaTrainOps(const CudaTrainOps&) = delete;
  CudaTrainOps& operator=(const CudaTrainOps&) = delete;

  cudaStream_t stream() const { return stream_; }
  // Waits for every op enqueued so far; RuntimeError naming the failure of one of them.
  void synchronize();

  void embed(const float* table, std::span<const std::int32_t> ids, std::int64_t d, float* x) override;
  void rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
               float* rstd) override;
  void linear(const float* x, const float* w, const float* bias, std::int64_t n, std::int64_t in, std::int64_t out,
              float* y) override;
  void rope_table(std::span<const double> inv_freq, std::int64_t T, float* cos, float* sin) override;
  void rope(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim, const float* cos,
            const float* sin, bool inverse) override;
  void attention(const float* q, const float* k, const float* v, std::int64_t b, std::int64_t T,
                 const AttentionShape& s, float* out, float* lse) override;
  void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) override;
  double cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                       float grad_scale) override;

  void linear_backward_input(const float* dy, const float* w, std::int64_t n, std::int64_t in, std::int64_t out,
                             float* dx, bool accumulate) override;
  void linear_backward_weight(const float* dy, const float* x, std::int64_t n, std::int64_t in, std::int64_t out,
                              float* dw, float* dbias) override;
  void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd, std::int64_t rows,
                        std::int64_t d, float* dx, float* dw) override;
  void attention_backward(const float* dout, const float* q, const float* k, const float* v, const float* out,
                          const float* lse, std::int64_t b, std::int64_t T, const AttentionShape& s, float* dq,
                          float* dk, float* dv) override;
  void silu_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                         std::int64_t n) override;
  void embed_backward(const float* dx, std::span<const std::int32_t> ids, std::int64_t d, float* dtable) override;

  void add(float* x, const float* y, std::int64_t n) override;
  void zero(float* x, std::int64_t n) override;

 private:
  // A device buffer of at least `bytes`, grown (never shrunk) on demand; slot `i` of scratch_.
  void* scratch(int slot, std::size_t bytes);
  // host (n) int32 to scratch slot `slot`, enqueued on the stream.
  const std::int32_t* upload_ids(int slot, std::span<const std::int32_t> host);
  // C (m, n; column-major, ldc) = A·B (+ C when accumulate) with cuBLAS's column-major ops:
  // every linear form is one call. The inputs are f32 today; a bf16 precision (issue 34's
  // --precision) converts A and B into bf16 scratch here and passes CUDA_R_16BF, the output and
  // the accumulation staying f32 (CUBLAS_COMPUTE_32F).
  void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
            std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc, bool accumulate,
            const char* what);
  void check_launch(const char* what);

  cudaStream_t stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  struct Scratch {
    void* p = nullptr;
    std::size_t bytes = 0;
  };
  std::vector<Scratch> scratch_;
  std::vector<double> row_loss_;  // host copy of cross_entropy's per-row losses
};

}  // namespace plexus::cuda
