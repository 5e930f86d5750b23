// The optimizer's step on one CUDA device over the flat parameter buffer: AdamW (train/adamw's
// functions, the same bits: kernels/adamw_element.h without fused multiply-adds) and the global
// gradient norm (train/grad_clip's blocks, summed on the device in a fixed order, combined on the
// host as the CPU combines them). Device pointers; each call waits for its result.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/train_optimizer.h"
#include "train/adamw.h"
#include "train/param_layout.h"

namespace plexus::cuda {

class CudaOptimizer {
 public:
  // Computes on `stream` (not owned); device scratch is owned and grown on demand.
  explicit CudaOptimizer(cudaStream_t stream) : stream_(stream) {}
  ~CudaOptimizer();
  CudaOptimizer(const CudaOptimizer&) = delete;
  CudaOptimizer& operator=(const CudaOptimizer&) = delete;

  // adamw_update, adamw_bounds and adamw_update_stays_finite (train/adamw.h) on device buffers.
  AdamwBounds adamw_update(const OptimizerOptions& o, std::int64_t step, float grad_coef, float* params,
                           const float* grads, float* exp_avg, float* exp_avg_sq, std::int64_t n);
  AdamwBounds adamw_bounds(const float* params, const float* exp_avg, const float* exp_avg_sq, std::int64_t n);
  bool adamw_update_stays_finite(const OptimizerOptions& o, std::int64_t step, float grad_coef, const float* params,
                                 const float* grads, const float* exp_avg, const float* exp_avg_sq, std::int64_t n);
  // grad_norm (train/grad_clip.h) of device gradients: sqrt(Σ_tensors ‖g_tensor‖²).
  double grad_norm(const std::vector<ParamSlot>& tensors, const float* grads);

 private:
  void* scratch(std::size_t bytes);
  AdamwBounds pass(AdamwPass kind, const AdamwScalars& s, float* params, const float* grads, float* exp_avg,
                   float* exp_avg_sq, std::int64_t n, bool* finite);

  cudaStream_t stream_;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
};

}  // namespace plexus::cuda
