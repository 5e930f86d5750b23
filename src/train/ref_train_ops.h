// The plain, obviously-correct oracle of TrainOps: direct loops, double accumulators in every
// reduction, one thread. Slow; the tests check the fast implementations (cpu_train_ops) and
// the finite differences of each backward against it. With TrainPrecision::kBf16 the inputs of
// the products (train_ops.h lists them) are rounded to bf16 before they are multiplied.
#pragma once
#include "train/train_ops.h"

namespace plexus {

class RefTrainOps : public TrainOps {
 public:
  explicit RefTrainOps(TrainPrecision precision = TrainPrecision::kF32) : TrainOps(precision) {}

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

 private:
  // v as a product reads it: rounded to bf16 under kBf16.
  double operand(float v) const;
  double operand(double v) const { return operand(static_cast<float>(v)); }
};

}  // namespace plexus
