// TrainOps' default rope table, computed by the host into memory it can write (the CPU's).
#include "train/train_ops.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace plexus {

void TrainOps::rope_table(std::span<const double> inv_freq, std::int64_t T, float* cos, float* sin) {
  const auto half = static_cast<std::int64_t>(inv_freq.size());
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(t) * inv_freq[static_cast<std::size_t>(i)];
      cos[t * half + i] = static_cast<float>(std::cos(a));
      sin[t * half + i] = static_cast<float>(std::sin(a));
    }
  }
}

namespace {

[[noreturn]] void train_op_missing(const char* op) {
  throw RuntimeError(std::string("TrainOps::") + op +
                     " is not built on this device (Gemma and Phi-3 train on the CPU only: docs/train.md)");
}

}  // namespace

void TrainOps::gelu_tanh_mul(const float*, const float*, float*, std::int64_t) { train_op_missing("gelu_tanh_mul"); }
void TrainOps::gelu_tanh_mul_backward(const float*, const float*, const float*, float*, float*, std::int64_t) {
  train_op_missing("gelu_tanh_mul_backward");
}
double TrainOps::softcap_cross_entropy(float*, std::span<const std::int32_t>, std::int64_t, float, float) {
  train_op_missing("softcap_cross_entropy");
}
void TrainOps::scale(float*, float, std::int64_t) { train_op_missing("scale"); }
void TrainOps::add_constant(const float*, float, float*, std::int64_t) { train_op_missing("add_constant"); }
void TrainOps::rope_partial(float*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, const float*,
                            const float*, bool) {
  train_op_missing("rope_partial");
}

}  // namespace plexus
