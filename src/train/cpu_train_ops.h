// The fast CPU TrainOps: multi-threaded on a ThreadPool, SIMD through the ISA tables
// (kernels/cpu/isa.h) and train_gemm (kernels/cpu/train_gemm.h). Deterministic: threads split
// outputs, never a sum, so results are bitwise independent of the thread count and timing.
// One caller at a time (it keeps scratch: attention_backward's here, train_gemm's packing
// buffers thread_local to the calling thread, up to ~14 MiB for the lm_head products).
#pragma once
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/isa.h"
#include "train/train_ops.h"

namespace plexus {

class CpuTrainOps : public TrainOps {
 public:
  // Uses best_isa() (PLEXUS_ISA may ask for another).
  explicit CpuTrainOps(ThreadPool& pool, TrainPrecision precision = TrainPrecision::kF32);
  CpuTrainOps(ThreadPool& pool, Isa isa, TrainPrecision precision = TrainPrecision::kF32);

  void embed(const float* table, std::span<const std::int32_t> ids, std::int64_t d, float* x) override;
  void rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
               float* rstd) override;
  void linear(const float* x, const float* w, const float* bias, std::int64_t n, std::int64_t in, std::int64_t out,
              float* y) override;
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
  // Keeps 2 · (n_heads / n_kv_heads) · T · (T + 16) floats of scratch (the probabilities and
  // their gradients of one kv head of one sequence) while it runs.
  void attention_backward(const float* dout, const float* q, const float* k, const float* v, const float* out,
                          const float* lse, std::int64_t b, std::int64_t T, const AttentionShape& s, float* dq,
                          float* dk, float* dv) override;
  void silu_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                         std::int64_t n) override;
  void embed_backward(const float* dx, std::span<const std::int32_t> ids, std::int64_t d, float* dtable) override;

  void add(float* x, const float* y, std::int64_t n) override;
  void zero(float* x, std::int64_t n) override;

  bool family_ops() const override { return true; }
  void gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n) override;
  void gelu_tanh_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                              std::int64_t n) override;
  double softcap_cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                               float grad_scale, float cap) override;
  void scale(float* x, float s, std::int64_t n) override;
  void add_constant(const float* x, float c, float* y, std::int64_t n) override;
  void rope_partial(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim,
                    std::int64_t rotary_dim, const float* cos, const float* sin, bool inverse) override;

  Isa isa() const { return isa_; }

 private:
  // train_gemm's ISA for this precision's products.
  Isa gemm_isa() const { return bf16_ ? bf16_isa_ : isa_; }

  ThreadPool& pool_;
  Isa isa_;
  Isa bf16_isa_;  // train_gemm's ISA for the bf16 products: avx512bf16 where isa_ is avx512 and the CPU has it
  const IsaKernels& k_;
  bool bf16_;                       // precision() == kBf16: the products' inputs rounded to bf16
  std::vector<float> att_scratch_;  // attention_backward's P and dS of one (sequence, kv head)
};

}  // namespace plexus
