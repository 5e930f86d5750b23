// The compute interface on the host CPU: the kernels of one ISA (kernels/cpu) on a thread pool.
// Activations, workspace, KV caches and weights are all host memory. Its results are bitwise
// those of the CPU engine before the interface existed (the tests hold them).
#pragma once
#include <cstdint>
#include <span>

#include "compute/compute_ops.h"
#include "core/thread_pool.h"
#include "kernels/cpu/isa.h"

namespace plexus {

class CpuOps final : public ComputeOps {
 public:
  // `kernels` and `pool` must outlive the ops; launch from one thread at a time.
  CpuOps(const IsaKernels& kernels, ThreadPool& pool) : k_(kernels), pool_(pool) {}

  void begin_batch(const TokenBatch& batch, std::span<const double> inv_freq, bool layers, Workspace& ws) override;
  void end_batch() override {}
  void embed(const WeightMatrix& table, std::span<const std::int32_t> ids, float* x) override;
  void rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y) override;
  void matmul(std::span<const MatmulPart> parts, const float* x, std::int64_t n, std::int64_t ldx) override;
  void add_bias(float* y, const float* bias, std::int64_t n, std::int64_t d) override;
  void rope_store_kv(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) override;
  void attention(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) override;
  void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) override;
  // One launch: each thread multiplies a row range of gate and up, then activates it.
  void matmul_silu_mul(const MatmulPart& gate, const MatmulPart& up, const float* x, std::int64_t n,
                       std::int64_t ldx) override;
  void gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n) override;
  void scale(float* x, float s, std::int64_t n) override;
  void softcap(float* x, float cap, std::int64_t n) override;
  void add(float* x, const float* y, std::int64_t n) override;
  // add then rmsnorm, the two steps as before (bitwise).
  void add_rmsnorm(float* x, const float* y, const float* w, std::int64_t rows, std::int64_t d, float eps,
                   float* out) override;
  void gather_rows(const float* src, std::span<const std::int64_t> rows, std::int64_t d, float* dst) override;
  // GPT-2 (cpu_layernorm_gelu.cpp): rows threaded; statistics in double.
  void layernorm(const float* x, const float* w, const float* b, std::int64_t rows, std::int64_t d, float eps,
                 float* y) override;
  void gelu_tanh(float* x, std::int64_t n) override;
  // cpu_moe.cpp: routing on the calling thread; each expert's gathered tokens through its MLP.
  void moe_route(const float* logits, std::int64_t n, const MoeRouting& r, Workspace& ws) override;
  void moe_experts(std::span<const ExpertWeights> experts, const float* xb, std::int64_t n, const MoeRouting& r,
                   float* out, Workspace& ws) override;

 private:
  const IsaKernels& k_;
  ThreadPool& pool_;
};

}  // namespace plexus
