// A TrainOps that times every call of another one, per operation: where a training step's time
// goes (the benchmark's --profile), without touching the kernels.
#pragma once
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "core/timer.h"
#include "train/train_ops.h"

namespace plexus::bench {

class TimingTrainOps : public TrainOps {
 public:
  enum Op { kEmbed, kRmsnorm, kLinear, kRopeTable, kRope, kAttention, kSiluMul, kCrossEntropy, kLinearDx, kLinearDw,
            kRmsnormBackward, kAttentionBackward, kSiluMulBackward, kEmbedBackward, kAdd, kZero, kOps };
  static constexpr std::array<const char*, kOps> kNames = {
      "embed", "rmsnorm", "linear", "rope_table", "rope", "attention", "silu_mul", "cross_entropy",
      "linear_backward_input", "linear_backward_weight", "rmsnorm_backward", "attention_backward",
      "silu_mul_backward", "embed_backward", "add", "zero"};

  explicit TimingTrainOps(TrainOps& inner) : TrainOps(inner.precision()), inner_(inner) {}
  // (name, seconds), every operation that ran, the largest first.
  std::vector<std::pair<std::string, double>> totals() const;
  void clear() { seconds_.fill(0); }

  void embed(const float* table, std::span<const std::int32_t> ids, std::int64_t d, float* x) override {
    time(kEmbed, [&] { inner_.embed(table, ids, d, x); });
  }
  void rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
               float* rstd) override {
    time(kRmsnorm, [&] { inner_.rmsnorm(x, w, rows, d, eps, y, rstd); });
  }
  void linear(const float* x, const float* w, const float* bias, std::int64_t n, std::int64_t in, std::int64_t out,
              float* y) override {
    time(kLinear, [&] { inner_.linear(x, w, bias, n, in, out, y); });
  }
  void rope_table(std::span<const double> inv_freq, std::int64_t T, float* cos, float* sin) override {
    time(kRopeTable, [&] { inner_.rope_table(inv_freq, T, cos, sin); });
  }
  void rope(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim, const float* cos,
            const float* sin, bool inverse) override {
    time(kRope, [&] { inner_.rope(x, b, T, heads, head_dim, cos, sin, inverse); });
  }
  void attention(const float* q, const float* k, const float* v, std::int64_t b, std::int64_t T,
                 const AttentionShape& s, float* out, float* lse) override {
    time(kAttention, [&] { inner_.attention(q, k, v, b, T, s, out, lse); });
  }
  void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) override {
    time(kSiluMul, [&] { inner_.silu_mul(gate, up, out, n); });
  }
  double cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                       float grad_scale) override {
    double r = 0;
    time(kCrossEntropy, [&] { r = inner_.cross_entropy(logits, targets, vocab, grad_scale); });
    return r;
  }
  void linear_backward_input(const float* dy, const float* w, std::int64_t n, std::int64_t in, std::int64_t out,
                             float* dx, bool accumulate) override {
    time(kLinearDx, [&] { inner_.linear_backward_input(dy, w, n, in, out, dx, accumulate); });
  }
  void linear_backward_weight(const float* dy, const float* x, std::int64_t n, std::int64_t in, std::int64_t out,
                              float* dw, float* dbias) override {
    time(kLinearDw, [&] { inner_.linear_backward_weight(dy, x, n, in, out, dw, dbias); });
  }
  void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd, std::int64_t rows,
                        std::int64_t d, float* dx, float* dw) override {
    time(kRmsnormBackward, [&] { inner_.rmsnorm_backward(dy, x, w, rstd, rows, d, dx, dw); });
  }
  void attention_backward(const float* dout, const float* q, const float* k, const float* v, const float* out,
                          const float* lse, std::int64_t b, std::int64_t T, const AttentionShape& s, float* dq,
                          float* dk, float* dv) override {
    time(kAttentionBackward, [&] { inner_.attention_backward(dout, q, k, v, out, lse, b, T, s, dq, dk, dv); });
  }
  void silu_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                         std::int64_t n) override {
    time(kSiluMulBackward, [&] { inner_.silu_mul_backward(dout, gate, up, dgate, dup, n); });
  }
  void embed_backward(const float* dx, std::span<const std::int32_t> ids, std::int64_t d, float* dtable) override {
    time(kEmbedBackward, [&] { inner_.embed_backward(dx, ids, d, dtable); });
  }
  void add(float* x, const float* y, std::int64_t n) override { time(kAdd, [&] { inner_.add(x, y, n); }); }
  void zero(float* x, std::int64_t n) override { time(kZero, [&] { inner_.zero(x, n); }); }

 private:
  template <typename F>
  void time(Op op, F&& f) {
    Timer t;
    f();
    seconds_[op] += t.seconds();
  }
  TrainOps& inner_;
  std::array<double, kOps> seconds_{};
};

}  // namespace plexus::bench
