// The compute interface of one device: the handful of operations the Llama-family forward is
// written against (model/llama_family.cpp). The architecture code calls these and nothing else,
// so it runs unchanged on every device that implements them: CpuOps (compute/cpu_ops, bitwise
// the engine's CPU results) and CudaOps (compute/cuda). Every pointer is in the device's own
// memory (activations, workspace, KV caches, weights); spans named "host" are host memory.
// compute/ sits between kernels/ (which know no models) and model/ (which knows no devices).
#pragma once
#include <cstdint>
#include <span>

#include "compute/kv_cache.h"
#include "kernels/weight_matrix.h"

namespace plexus {

class Workspace;

// n tokens run together; they may belong to different sequences. Host memory.
struct TokenBatch {
  std::span<const std::int32_t> ids;   // (n)
  std::span<const std::int32_t> pos;   // (n) position of each token in its sequence
  std::span<KvCache* const> cache;     // (n) the cache of each token's sequence (its memory on the device)
};

// The attention geometry of the model.
struct AttentionShape {
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  std::int64_t window = 0;  // sliding window in tokens; 0: the whole context
  float scale = 1;          // 1 / sqrt(head_dim)
  bool rope_interleaved = false;  // ModelConfig::rope_interleaved: rope pairs (2i, 2i+1), not (i, i + head_dim/2)
  // gpt-oss: one learned logit per query head (n_heads, device memory) added to each softmax's
  // denominator, taking no share of the values; null for every other architecture.
  const float* sinks = nullptr;
  // Partial rotary (Phi-4-mini): RoPE turns dims [0, rotary_dim) of each head, rotate-half pairs
  // (i, i + rotary_dim/2) by cos/sin i (the tables stay head_dim/2 wide); the rest pass as they
  // are. 0: the whole head. rope_scale multiplies cos and sin (LongRoPE's attention factor, which
  // with whole-head rope is folded into `scale` instead).
  std::int64_t rotary_dim = 0;
  float rope_scale = 1;
  std::int64_t rotated_dims() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  // Gemma: scores soft-capped as tanh(s / softcap) · softcap after the scale, before the mask
  // and softmax (0: not capped).
  float softcap = 0;
  // The rope table this layer rotates with, of rope_tables per token (LayerShape::rope_tables;
  // Gemma 3's sliding layers use table 1, the local base).
  int rope_tables = 1, rope_table = 0;
};

// Mixture-of-experts routing: each token runs through `top_k` of `experts` experts.
struct MoeRouting {
  std::int64_t experts = 0;  // E
  std::int64_t top_k = 0;    // k
  bool normalize = true;     // the k probabilities rescaled to sum to 1
  // gpt-oss (MoeConfig::top_k_then_softmax): the k largest logits, softmaxed among themselves.
  bool top_k_then_softmax = false;
  // gpt-oss experts (swiglu_limit > 0): g = min(x·gateᵀ + gate_bias, limit), u = clamp(x·upᵀ +
  // up_bias, ±limit), expert(x) = ((u + 1) · g · sigmoid(alpha · g))·downᵀ + down_bias, in place
  // of down·(silu(gate·x) ⊙ up·x). The biases are device memory: (E, Ie) (E, Ie) (E, H).
  float swiglu_alpha = 0, swiglu_limit = 0;
  const float *gate_bias = nullptr, *up_bias = nullptr, *down_bias = nullptr;
};

// One expert of a mixture: a gated MLP of width Ie. Under expert parallelism a rank holds
// only some experts; the others are empty (no data, no rows) there.
struct ExpertWeights {
  WeightMatrix gate, up, down;  // (Ie, H) (Ie, H) (H, Ie)
  bool held() const { return down.data != nullptr; }
};

// The first expert of `experts` that holds weights (there is one at least): its shapes are every
// held expert's.
const ExpertWeights& first_held_expert(std::span<const ExpertWeights> experts);

class ComputeOps {
 public:
  virtual ~ComputeOps() = default;

  // Before the first layer of a batch: what every layer reads of the batch (rope cos/sin of
  // the positions with `inv_freq` (rope_tables · head_dim / 2: each table's frequencies, one
  // after another) into ws.rope_cos/sin, the tokens' positions and
  // caches). `layers` is false for a batch that only embeds or only runs the head.
  virtual void begin_batch(const TokenBatch& batch, std::span<const double> inv_freq, bool layers, Workspace& ws) = 0;
  // After the last operation of the batch on this device, before its results are read.
  virtual void end_batch() = 0;

  // x (n, H) = rows ids (host, n, checked by the caller) of `table` (vocab, H) as f32.
  virtual void embed(const WeightMatrix& table, std::span<const std::int32_t> ids, float* x) = 0;
  // y (rows, d) = x (rows, d) / sqrt(mean(x²) + eps) * w (d); y may alias x.
  virtual void rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y) = 0;
  // For each part: part.y (n, part.ldy) = x (n, ldx) · part.wᵀ; every part has the same cols.
  // A weight may be stored (in, out) (WeightMatrix::in_out: GPT-2's Conv1D weights, read in place).
  virtual void matmul(std::span<const MatmulPart> parts, const float* x, std::int64_t n, std::int64_t ldx) = 0;
  // y (n, d) += bias (d), every row.
  virtual void add_bias(float* y, const float* bias, std::int64_t n, std::int64_t d) = 0;
  // Rotates ws.q (n, n_heads·head_dim) and ws.k (n, n_kv_heads·head_dim) in place at the batch's
  // positions (ws.rope_cos/sin; s.rotated_dims() of each head, cos/sin times s.rope_scale), then stores each token's k and ws.v rows in its cache at `layer`.
  virtual void rope_store_kv(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) = 0;
  // ws.att (n, n_heads·head_dim) = softmax(q·kᵀ·scale)·v of each token's query heads ws.q over
  // its cache at `layer`, positions [max(0, pos - window + 1), pos]; query head h reads kv head
  // h / (n_heads / n_kv_heads).
  virtual void attention(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) = 0;
  // out (n) = silu(gate) · up; out may alias gate.
  virtual void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) = 0;
  // gate.y (n, I) = silu(x (n, ldx) · gate.wᵀ) · (x · up.wᵀ), up.y (n, I) the up product; gate.w and
  // up.w are (I, cols) and both ldy are I. By default matmul then silu_mul; CpuOps runs both in
  // one launch (bitwise the two steps).
  virtual void matmul_silu_mul(const MatmulPart& gate, const MatmulPart& up, const float* x, std::int64_t n,
                               std::int64_t ldx) {
    const MatmulPart parts[] = {gate, up};
    matmul(parts, x, n, ldx);
    silu_mul(gate.y, up.y, gate.y, n * gate.ldy);
  }
  // out (n) = gelu_tanh(gate) · up, gelu_tanh(g) = g/2 · (1 + tanh(√(2/π) · (g + 0.044715 g³)))
  // (GeGLU, Gemma); out may alias gate.
  virtual void gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n) = 0;
  // x (n) *= s
  virtual void scale(float* x, float s, std::int64_t n) = 0;
  // x (n) = tanh(x / cap) · cap (Gemma's logit soft-capping)
  virtual void softcap(float* x, float cap, std::int64_t n) = 0;
  // x (n) += y (n)
  virtual void add(float* x, const float* y, std::int64_t n) = 0;
  // x (rows, d) += y (rows, d), then out (rows, d) = rmsnorm(x) · w (d) as rmsnorm does; out may
  // alias y (or x). The residual add and the next norm in one step (one kernel on the GPU); by
  // default exactly add then rmsnorm (CpuOps: bitwise the two steps).
  virtual void add_rmsnorm(float* x, const float* y, const float* w, std::int64_t rows, std::int64_t d, float eps,
                           float* out) {
    add(x, y, rows * d);
    rmsnorm(x, w, rows, d, eps, out);
  }
  // GPT-2: y (rows, d) = (x − mean(x)) / sqrt(var(x) + eps) · w (d) + b (d) per row, the biased
  // variance (torch.nn.LayerNorm); y may alias x.
  virtual void layernorm(const float* x, const float* w, const float* b, std::int64_t rows, std::int64_t d, float eps,
                         float* y) = 0;
  // GPT-2's MLP activation, in place on x (n): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (gelu_new).
  virtual void gelu_tanh(float* x, std::int64_t n) = 0;
  // dst row i (d) = src row rows[i] (d), for rows (host).
  virtual void gather_rows(const float* src, std::span<const std::int64_t> rows, std::int64_t d, float* dst) = 0;

  // Mixture of experts, routing: ws.route_expert (n, k) and ws.route_weight (n, k) = each token's
  // k largest probabilities of softmax(logits row (E)), largest first (ties: the lower expert
  // first), and their experts; rescaled to sum to 1 when r.normalize. With r.top_k_then_softmax
  // the weights are instead the softmax of the k largest logits. logits (n, E).
  virtual void moe_route(const float* logits, std::int64_t n, const MoeRouting& r, Workspace& ws);
  // Mixture of experts, compute: out (n, H) = Σ_j route_weight[t, j] · expert_e(xb[t]) over the
  // token's k routed experts e = route_expert[t, j], expert(v) = down·(silu(gate·v) ⊙ up·v)
  // (or gpt-oss's clamped form with biases, MoeRouting::swiglu_limit > 0), summed from zero in
  // ascending expert order (as Hugging Face's loop adds them). xb (n, H);
  // experts (E); out must not alias xb or the workspace's moe buffers. An expert without weights
  // (data == nullptr: expert parallelism, another rank holds it) contributes nothing here: a
  // token routed to it gets that expert's share from the rank that holds it, in the group's sum.
  virtual void moe_experts(std::span<const ExpertWeights> experts, const float* xb, std::int64_t n, const MoeRouting& r,
                           float* out, Workspace& ws);
};

}  // namespace plexus
