// Tensor parallelism as a wrapper of a device's compute operations (like gpt-fast's tp.py wraps
// linear layers): every operation goes to the device's own ops unchanged, and a matrix product
// with a partial_sum weight (o_proj, down_proj split by input columns, model/tensor_split.h) is
// summed across the rank's group right after it, before anything reads it. The architecture
// code never knows it runs on a shard.
#pragma once
#include "comm/collective.h"
#include "compute/compute_ops.h"

namespace plexus {

class TensorParallelOps : public ComputeOps {
 public:
  TensorParallelOps(ComputeOps& inner, Collective& group) : inner_(inner), group_(group) {}

  Collective& group() const { return group_; }

  void begin_batch(const TokenBatch& batch, std::span<const double> inv_freq, bool layers, Workspace& ws) override {
    inner_.begin_batch(batch, inv_freq, layers, ws);
  }
  void end_batch() override { inner_.end_batch(); }
  void embed(const WeightMatrix& table, std::span<const std::int32_t> ids, float* x) override { inner_.embed(table, ids, x); }
  void rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y) override {
    inner_.rmsnorm(x, w, rows, d, eps, y);
  }
  // The products, then the group's sum of each partial one: y (n, ldy) summed over the ranks.
  void matmul(std::span<const MatmulPart> parts, const float* x, std::int64_t n, std::int64_t ldx) override;
  void add_bias(float* y, const float* bias, std::int64_t n, std::int64_t d) override { inner_.add_bias(y, bias, n, d); }
  void rope_store_kv(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) override {
    inner_.rope_store_kv(layer, batch, s, ws);
  }
  void attention(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) override {
    inner_.attention(layer, batch, s, ws);
  }
  void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) override { inner_.silu_mul(gate, up, out, n); }
  // gate and up are split by rows (whole products): the device's fused operation as it is.
  void matmul_silu_mul(const MatmulPart& gate, const MatmulPart& up, const float* x, std::int64_t n,
                       std::int64_t ldx) override;
  void gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n) override {
    inner_.gelu_tanh_mul(gate, up, out, n);
  }
  void scale(float* x, float s, std::int64_t n) override { inner_.scale(x, s, n); }
  void softcap(float* x, float cap, std::int64_t n) override { inner_.softcap(x, cap, n); }
  void add(float* x, const float* y, std::int64_t n) override { inner_.add(x, y, n); }
  void add_rmsnorm(float* x, const float* y, const float* w, std::int64_t rows, std::int64_t d, float eps,
                   float* out) override {
    inner_.add_rmsnorm(x, y, w, rows, d, eps, out);
  }
  void gather_rows(const float* src, std::span<const std::int64_t> rows, std::int64_t d, float* dst) override {
    inner_.gather_rows(src, rows, d, dst);
  }
  void layernorm(const float* x, const float* w, const float* b, std::int64_t rows, std::int64_t d, float eps,
                 float* y) override {
    inner_.layernorm(x, w, b, rows, d, eps, y);
  }
  void gelu_tanh(float* x, std::int64_t n) override { inner_.gelu_tanh(x, n); }
  // Every rank routes every token alike (the router is whole).
  void moe_route(const float* logits, std::int64_t n, const MoeRouting& r, Workspace& ws) override {
    inner_.moe_route(logits, n, r, ws);
  }
  // The experts' outputs, then the group's sum when their down projections are partial (each
  // expert split over the ranks, or expert parallelism: each rank's experts whole, the others empty).
  void moe_experts(std::span<const ExpertWeights> experts, const float* xb, std::int64_t n, const MoeRouting& r,
                   float* out, Workspace& ws) override;

 private:
  ComputeOps& inner_;
  Collective& group_;
};

}  // namespace plexus
