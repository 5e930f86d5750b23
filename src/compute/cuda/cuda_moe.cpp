// CudaOps' mixture-of-experts layer: routing on the GPU; the routing read back to group the
// tokens by expert on the host; each expert through the dense MLP's kernels; one combine launch.
#include <string>
#include <vector>

#include "compute/cuda/cuda_ops.h"
#include "compute/workspace.h"
#include "core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/moe.h"

namespace plexus::cuda {

void CudaOps::moe_route(const float* logits, std::int64_t n, const MoeRouting& r, Workspace& ws) {
  if (r.experts > kMoeMaxExperts) {
    throw RuntimeError(device_ + ": " + std::to_string(r.experts) + " experts per layer; the CUDA router takes at most " +
                       std::to_string(kMoeMaxExperts));
  }
  graphs_.uncapturable();  // the experts read the routing back on the host: this batch runs eagerly
  launch_moe_route(logits, n, r.experts, r.top_k, r.normalize, ws.route_expert.data(), ws.route_weight.data(), stream_);
  check_launch("moe_route");
}

void CudaOps::moe_experts(std::span<const ExpertWeights> experts, const float* xb, std::int64_t n, const MoeRouting& r,
                          float* out, Workspace& ws) {
  const std::int64_t k = r.top_k, pairs = n * k;
  const ExpertWeights& held = first_held_expert(experts);
  const std::int64_t H = held.down.rows, Ie = held.gate.rows;
  if (pairs > sizes_.max_pairs) {
    throw RuntimeError(device_ + ": " + std::to_string(pairs) + " routed (token, expert) pairs; the CUDA ops were sized for " +
                       std::to_string(sizes_.max_pairs));
  }
  graphs_.uncapturable();
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(moe_experts_host_, ws.route_expert.data(), static_cast<std::size_t>(pairs) * sizeof(std::int32_t),
                                    cudaMemcpyDeviceToHost, stream_),
                    device_ + " reading the routing back");
  PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream_), device_ + " waiting for the routing");
  // The pairs grouped by expert (tokens ascending in each): expert e's rows of ws.moe_y are
  // [start[e], start[e + 1]); pair i's row is moe_pair_rows_host_[i].
  std::vector<std::int64_t> start(experts.size() + 1, 0);
  for (std::int64_t i = 0; i < pairs; ++i) ++start[static_cast<std::size_t>(moe_experts_host_[i]) + 1];
  for (std::size_t e = 0; e < experts.size(); ++e) start[e + 1] += start[e];
  std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
  for (std::int64_t i = 0; i < pairs; ++i) {
    const std::int64_t row = fill[static_cast<std::size_t>(moe_experts_host_[i])]++;
    moe_rows_host_[row] = i / k;  // the token
    moe_pair_rows_host_[i] = static_cast<std::int32_t>(row);
  }
  // The stream is idle (synchronised above): the pinned arrays may be reused at once.
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(moe_rows_dev_, moe_rows_host_, static_cast<std::size_t>(pairs) * sizeof(std::int64_t),
                                    cudaMemcpyHostToDevice, stream_),
                    device_ + " uploading the experts' tokens");
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(moe_pair_rows_dev_, moe_pair_rows_host_, static_cast<std::size_t>(pairs) * sizeof(std::int32_t),
                                    cudaMemcpyHostToDevice, stream_),
                    device_ + " uploading the pairs' rows");
  for (std::size_t e = 0; e < experts.size(); ++e) {
    const std::int64_t m = start[e + 1] - start[e];
    if (m == 0) continue;
    float* y = ws.moe_y.data() + start[e] * H;  // (m, H)
    const ExpertWeights& w = experts[e];
    if (!w.held()) {  // held by another rank (expert parallelism): contributes nothing here
      PLEXUS_CUDA_CHECK(cudaMemsetAsync(y, 0, static_cast<std::size_t>(m * H) * sizeof(float), stream_), device_ + " zeroing rows");
      continue;
    }
    launch_gather_rows(xb, moe_rows_dev_ + start[e], m, H, ws.moe_x.data(), stream_);  // (m, H)
    check_launch("gathering an expert's tokens");
    matmul_silu_mul({w.gate, ws.gate.data(), Ie}, {w.up, ws.up.data(), Ie}, ws.moe_x.data(), m, H);  // ws.gate (m, Ie)
    const MatmulPart down[] = {{w.down, y, H}};
    matmul(down, ws.gate.data(), m, Ie);
  }
  launch_moe_combine(ws.moe_y.data(), moe_pair_rows_dev_, ws.route_weight.data(), n, k, H, out, stream_);
  check_launch("moe_combine");
}

}  // namespace plexus::cuda
