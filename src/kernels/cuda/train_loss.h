// Training's next-token cross-entropy on CUDA: one block per row, every sum in a fixed order.
// Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace plexus::cuda {

// For each of n rows: row_loss[r] (double) = logsumexp(logits_r) − logits_r[targets[r]], and
// logits (n, vocab) replaced by (softmax(logits_r) − onehot(targets[r])) · grad_scale. targets
// (n) device, in [0, vocab).
void launch_cross_entropy(float* logits, const std::int32_t* targets, std::int64_t n, std::int64_t vocab,
                          float grad_scale, double* row_loss, cudaStream_t stream);

}  // namespace plexus::cuda
