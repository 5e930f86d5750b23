// The one place a tensor-parallel rank communicates inside a layer: after a partial product.
#include "exec/tensor_parallel_ops.h"

#include <cassert>

namespace plexus {

void TensorParallelOps::matmul(std::span<const MatmulPart> parts, const float* x, std::int64_t n, std::int64_t ldx) {
  inner_.matmul(parts, x, n, ldx);
  for (const MatmulPart& p : parts) {
    if (p.w.partial_sum) group_.all_reduce_sum(p.y, n * p.ldy);  // (n, ldy)
  }
}

void TensorParallelOps::matmul_silu_mul(const MatmulPart& gate, const MatmulPart& up, const float* x, std::int64_t n,
                                        std::int64_t ldx) {
  assert(!gate.w.partial_sum && !up.w.partial_sum && "gate and up are split by rows");
  inner_.matmul_silu_mul(gate, up, x, n, ldx);
}

void TensorParallelOps::moe_experts(std::span<const ExpertWeights> experts, const float* xb, std::int64_t n,
                                    const MoeRouting& r, float* out, Workspace& ws) {
  inner_.moe_experts(experts, xb, n, r, out, ws);
  const WeightMatrix& down = first_held_expert(experts).down;
  if (down.partial_sum) group_.all_reduce_sum(out, n * down.rows);  // (n, H)
}

}  // namespace plexus
