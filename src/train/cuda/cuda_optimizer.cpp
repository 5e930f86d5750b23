// CudaOptimizer: AdamW's three passes and the gradient norm's block sums on the device, their
// small results (per-block maxima, per-block sums) folded on the host.
#include "train/cuda/cuda_optimizer.h"

#include <cmath>
#include <cstring>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "train/grad_clip.h"

namespace plexus::cuda {

CudaOptimizer::~CudaOptimizer() {
  if (scratch_) {
    cudaStreamSynchronize(stream_);
    cudaFree(scratch_);
  }
}

void* CudaOptimizer::scratch(std::size_t bytes) {
  if (scratch_bytes_ < bytes) {
    PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_), "CudaOptimizer growing scratch");
    if (scratch_) PLEXUS_CUDA_CHECK(cudaFree(scratch_), "CudaOptimizer growing scratch");
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    PLEXUS_CUDA_CHECK(cudaMalloc(&scratch_, bytes), "CudaOptimizer scratch of " + std::to_string(bytes) + " bytes");
    scratch_bytes_ = bytes;
  }
  return scratch_;
}

AdamwBounds CudaOptimizer::pass(AdamwPass kind, const AdamwScalars& s, float* params, const float* grads, float* exp_avg,
                                float* exp_avg_sq, std::int64_t n, bool* finite) {
  const auto blocks = static_cast<std::size_t>(adamw_blocks(n));
  auto* maxima = static_cast<AdamwBlockMaxima*>(scratch(blocks * sizeof(AdamwBlockMaxima)));
  std::vector<AdamwBlockMaxima> host(blocks);
  if (n > 0) {
    launch_adamw(kind, s, params, grads, exp_avg, exp_avg_sq, n, maxima, stream_);
    PLEXUS_CUDA_CHECK(cudaGetLastError(), "CudaOptimizer AdamW");
    PLEXUS_CUDA_CHECK(cudaMemcpyAsync(host.data(), maxima, blocks * sizeof(AdamwBlockMaxima), cudaMemcpyDeviceToHost,
                                      stream_),
                      "CudaOptimizer AdamW maxima");
    PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_), "CudaOptimizer AdamW");
  } else {
    std::memset(host.data(), 0, blocks * sizeof(AdamwBlockMaxima));
  }
  AdamwBlockMaxima all{0, 0, 0, 0};
  for (const AdamwBlockMaxima& b : host) {  // maxima: exact in any order
    all.p = std::fmax(all.p, b.p);
    all.m = std::fmax(all.m, b.m);
    all.v = std::fmax(all.v, b.v);
    all.bad |= b.bad;
  }
  if (finite) *finite = all.bad == 0;
  if (all.bad != 0) return {std::nan(""), std::nan(""), std::nan("")};
  return {all.p, all.m, all.v};
}

AdamwBounds CudaOptimizer::adamw_update(const OptimizerOptions& o, std::int64_t step, float grad_coef, float* params,
                                        const float* grads, float* exp_avg, float* exp_avg_sq, std::int64_t n) {
  return pass(AdamwPass::kUpdate, adamw_scalars(o, step, grad_coef), params, grads, exp_avg,
              exp_avg_sq, n, nullptr);
}

AdamwBounds CudaOptimizer::adamw_bounds(const float* params, const float* exp_avg, const float* exp_avg_sq,
                                        std::int64_t n) {
  // The bounds pass writes nothing: the casts only let the three passes share one kernel.
  return pass(AdamwPass::kBounds, AdamwScalars{}, const_cast<float*>(params), nullptr,
              const_cast<float*>(exp_avg), const_cast<float*>(exp_avg_sq), n, nullptr);
}

bool CudaOptimizer::adamw_update_stays_finite(const OptimizerOptions& o, std::int64_t step, float grad_coef,
                                              const float* params, const float* grads, const float* exp_avg,
                                              const float* exp_avg_sq, std::int64_t n) {
  bool finite = true;
  pass(AdamwPass::kCheck, adamw_scalars(o, step, grad_coef), const_cast<float*>(params), grads,
       const_cast<float*>(exp_avg), const_cast<float*>(exp_avg_sq), n, &finite);
  return finite;
}

double CudaOptimizer::grad_norm(const std::vector<ParamSlot>& tensors, const float* grads) {
  const GradNormBlocks blocks = grad_norm_blocks(tensors);
  const std::size_t count = blocks.begin.size();
  std::vector<double> sums(count);
  if (count > 0) {
    // scratch: begin (count) int64, end (count) int64, sums (count) double.
    auto* base = static_cast<std::int64_t*>(scratch(count * (2 * sizeof(std::int64_t) + sizeof(double))));
    std::int64_t* d_begin = base;
    std::int64_t* d_end = base + count;
    auto* d_sums = reinterpret_cast<double*>(base + 2 * count);
    PLEXUS_CUDA_CHECK(cudaMemcpyAsync(d_begin, blocks.begin.data(), count * sizeof(std::int64_t), cudaMemcpyHostToDevice,
                                      stream_),
                      "CudaOptimizer grad_norm");
    PLEXUS_CUDA_CHECK(cudaMemcpyAsync(d_end, blocks.end.data(), count * sizeof(std::int64_t), cudaMemcpyHostToDevice,
                                      stream_),
                      "CudaOptimizer grad_norm");
    launch_sum_squares(grads, d_begin, d_end, static_cast<std::int64_t>(count), d_sums, stream_);
    PLEXUS_CUDA_CHECK(cudaGetLastError(), "CudaOptimizer grad_norm");
    PLEXUS_CUDA_CHECK(cudaMemcpyAsync(sums.data(), d_sums, count * sizeof(double), cudaMemcpyDeviceToHost, stream_),
                      "CudaOptimizer grad_norm");
    PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_), "CudaOptimizer grad_norm");
  }
  return grad_norm_of_sums(blocks, sums);
}

}  // namespace plexus::cuda
