// Multi-threaded matrix products against weights in their checkpoint dtype:
// y (n, rows) = x (n, cols) · Wᵀ. Several weights that read the same x (q/k/v, gate/up) run
// as one launch. Up to the table's stream_max_tokens tokens (decode, batched decode) stream the
// weights straight from memory in their dtype; more tokens (prefill) convert a block of bf16/f16
// rows to f32 once and reuse it across all tokens from cache (f32 weights are always in place).
#pragma once
#include <cstdint>
#include <span>

#include "core/thread_pool.h"
#include "kernels/cpu/isa.h"
#include "kernels/weight_matrix.h"

namespace plexus {

// Every part must have the same `cols`; x is (n, ldx) with ldx >= cols.
void matmul(const IsaKernels& k, ThreadPool& pool, std::span<const MatmulPart> parts, const float* x,
            std::int64_t n, std::int64_t ldx);

// The MLP's gate/up product and its activation in one launch: gate.y (n, ldy) = silu(x · gate.wᵀ) ·
// (x · up.wᵀ), up.y (n, ldy) left holding x · up.wᵀ. Each chunk multiplies the same row range of
// both weights, then applies silu_mul to that range: bitwise matmul({gate, up}) then silu_mul, one
// barrier fewer. gate.w and up.w have the same shape.
void matmul_silu_mul(const IsaKernels& k, ThreadPool& pool, const MatmulPart& gate, const MatmulPart& up,
                     const float* x, std::int64_t n, std::int64_t ldx);

// One product of a group launch: gate.y (n, ldy) = x (n, ldx) · gate.wᵀ, or with `up` (same
// shape as gate; up.w.data null: none) the gated product matmul_silu_mul makes.
struct MatmulGroup {
  MatmulPart gate, up;
  const float* x = nullptr;
  std::int64_t n = 0, ldx = 0;
};

// Every group's product in one launch, their output rows split over the pool together (each
// group's x prepared first): bitwise each group's own matmul / matmul_silu_mul. The mixture of
// experts' per-expert products, one launch for all the experts a step uses.
void matmul_groups(const IsaKernels& k, ThreadPool& pool, std::span<const MatmulGroup> groups);

}  // namespace plexus
