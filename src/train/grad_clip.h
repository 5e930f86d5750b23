// Gradient clipping as torch.nn.utils.clip_grad_norm_ does it: the global 2-norm of the
// gradients (the 2-norm of the per-tensor 2-norms) and the factor the gradients are scaled by.
// Computed in double, in a fixed order: the same bits whatever the number of threads.
#pragma once
#include <cstdint>
#include <vector>

#include "train/param_layout.h"

namespace plexus {

class ThreadPool;

// sqrt(Σ_tensors ‖g_tensor‖²) over the layout's tensors of `grads` (layout.total()). Each tensor's
// sum of squares is added in blocks of a fixed size, then the blocks in order. NaN or ±Inf when a
// gradient is not finite. `pool` may be null.
double grad_norm(const ParamLayout& layout, const float* grads, ThreadPool* pool = nullptr);
// The same over the given tensors (offset and count of each) of `grads`.
double grad_norm(const std::vector<ParamSlot>& tensors, const float* grads, ThreadPool* pool = nullptr);

// How grad_norm cuts the tensors: block k covers [begin[k], end[k]) of the flat buffer, tensor t
// blocks first_block[t] .. first_block[t + 1] (the CUDA norm, train/cuda, sums the same blocks).
struct GradNormBlocks {
  std::vector<std::int64_t> begin, end;
  std::vector<std::size_t> first_block;  // (tensors + 1)
};
GradNormBlocks grad_norm_blocks(const std::vector<ParamSlot>& tensors);
// The norm from each block's sum of squares: each tensor's blocks added in order, then the tensors.
double grad_norm_of_sums(const GradNormBlocks& blocks, const std::vector<double>& sums);

// clip_grad_norm_'s factor min(1, max_norm / (norm + 1e-6)); 1 when max_norm is 0 (no clipping).
// torch multiplies by the factor clamped to 1 always; a factor of 1 leaves the bits as they are.
double clip_coefficient(double norm, double max_norm);

}  // namespace plexus
