// The compute interface of training on one device: the forward operations, keeping what the
// backward needs, and the backward of each. The Llama-family training step (train/llama_train)
// calls these and nothing else, so it runs unchanged on every device that implements them: the
// CPU (train/cpu_train_ops) today, a GPU next; train/ref_train_ops is the plain oracle both are
// tested against. Pointers are in the device's memory; spans named "host" are host memory.
// Parameter gradients (dw, dbias, dnorm, dtable) always accumulate (+=): they sum over the
// micro-batches of a step and over the uses of a tied weight. Results do not depend on the
// number of threads or their timing (bitwise), so a resumed run repeats an uninterrupted one.
//
// Precision (fixed when an implementation is made, precision()): kF32 computes everything in f32.
// kBf16 is torch.autocast(dtype=torch.bfloat16)'s mixed precision: the inputs of the matrix
// products are rounded to bf16 (nearest even; f32 subnormals to 0) and summed in f32 — both
// operands of the three linear forms (x and w, dy and w, dy and x; not the bias or dbias), and of
// attention's products: q·kᵀ, P·v with P the normalised probabilities, and in the backward
// dout·vᵀ, dS·k, dSᵀ·q, Pᵀ·dout. Outputs stay f32; norms, rope, softmax, the lse, silu,
// cross-entropy and the optimizer are f32, as are the weights (master weights) and gradients.
#pragma once
#include <cstdint>
#include <span>

#include "compute/compute_ops.h"
#include "train/train_precision.h"

namespace plexus {

class TrainOps {
 public:
  explicit TrainOps(TrainPrecision precision = TrainPrecision::kF32) : precision_(precision) {}
  virtual ~TrainOps() = default;
  TrainPrecision precision() const { return precision_; }

  // ---- forward ----
  // x (n, d) = rows ids (host, n; checked by the caller) of table (vocab, d).
  virtual void embed(const float* table, std::span<const std::int32_t> ids, std::int64_t d, float* x) = 0;
  // y (rows, d) = x · rstd · w (d), rstd (rows) = 1 / sqrt(mean(x²) + eps), kept for the backward.
  // y does not alias x.
  virtual void rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
                       float* rstd) = 0;
  // y (n, out) = x (n, in) · wᵀ (w: (out, in)) + bias (out); bias may be null.
  virtual void linear(const float* x, const float* w, const float* bias, std::int64_t n, std::int64_t in,
                      std::int64_t out, float* y) = 0;
  // cos, sin (T, head_dim / 2) = cos, sin of position t · inv_freq[i] (host, head_dim / 2), the
  // angles computed in double as the inference forward does. By default written by the host
  // (train_ops.cpp): a device whose memory the host cannot write overrides it.
  virtual void rope_table(std::span<const double> inv_freq, std::int64_t T, float* cos, float* sin);
  // Rotates x (b·T, heads, head_dim) in place, rotate-half pairs (i, i + head_dim/2), token t of
  // each sequence at position t; `inverse` rotates by minus the angle (the backward of rope).
  virtual void rope(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim,
                    const float* cos, const float* sin, bool inverse) = 0;
  // Causal self-attention within each of b sequences of T tokens: out (b·T, n_heads·head_dim) =
  // softmax(q·kᵀ·scale)·v over key positions [max(0, t - window + 1), t] (window 0: [0, t]);
  // with s.softcap > 0 (Gemma 2; the CPU's alone, as the ops below) the scores are
  // softcap·tanh(score / softcap) before the softmax, and attention_backward goes through it;
  // query head h reads kv head h / (n_heads / n_kv_heads). q (b·T, n_heads·head_dim), k and v
  // (b·T, n_kv_heads·head_dim). lse (b, n_heads, T) = log Σ exp(scores) of each query row, kept
  // for the backward.
  virtual void attention(const float* q, const float* k, const float* v, std::int64_t b, std::int64_t T,
                         const AttentionShape& s, float* out, float* lse) = 0;
  // out (n) = silu(gate) · up.
  virtual void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) = 0;
  // The next-token cross-entropy of n rows: returns Σ_i −log softmax(logits_i)[targets_i] (in
  // double), and replaces logits (n, vocab) by the gradient of that sum times grad_scale:
  // (softmax(logits_i) − onehot(targets_i)) · grad_scale. targets (host, n), in [0, vocab).
  virtual double cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                               float grad_scale) = 0;

  // ---- backward ----
  // dx (n, in) = dy (n, out) · w (out, in), or += when accumulate.
  virtual void linear_backward_input(const float* dy, const float* w, std::int64_t n, std::int64_t in,
                                     std::int64_t out, float* dx, bool accumulate) = 0;
  // dw (out, in) += dyᵀ (out, n) · x (n, in); dbias (out) += Σ_rows dy when not null.
  virtual void linear_backward_weight(const float* dy, const float* x, std::int64_t n, std::int64_t in,
                                      std::int64_t out, float* dw, float* dbias) = 0;
  // Through y = x · rstd · w: dx (rows, d) += ∂/∂x, dw (d) += Σ_rows dy · x · rstd. rstd from the
  // forward; dy does not alias dx.
  virtual void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                                std::int64_t rows, std::int64_t d, float* dx, float* dw) = 0;
  // From dout (b·T, n_heads·head_dim) and the forward's q, k, v, out and lse: dq (b·T,
  // n_heads·head_dim), dk and dv (b·T, n_kv_heads·head_dim), written (not accumulated).
  virtual void attention_backward(const float* dout, const float* q, const float* k, const float* v,
                                  const float* out, const float* lse, std::int64_t b, std::int64_t T,
                                  const AttentionShape& s, float* dq, float* dk, float* dv) = 0;
  // Through out = silu(gate) · up: dgate (n), dup (n) written; they may alias gate and up.
  virtual void silu_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                                 std::int64_t n) = 0;
  // dtable (vocab, d) row ids[i] += dx row i (n, d), rows of repeated ids added in i order.
  virtual void embed_backward(const float* dx, std::span<const std::int32_t> ids, std::int64_t d,
                              float* dtable) = 0;

  // ---- buffers ----
  // x (n) += y (n)
  virtual void add(float* x, const float* y, std::int64_t n) = 0;
  // x (n) = 0
  virtual void zero(float* x, std::int64_t n) = 0;

  // ---- Gemma and Phi-3 (train/llama_train's other families) ----
  // Built on the CPU (CpuTrainOps, RefTrainOps: family_ops() true). By default (a device without
  // them: CudaTrainOps today) family_ops() is false, LlamaTrainModel refuses the models that need
  // them (InputError), and each throws RuntimeError naming the op; the training step of a Llama,
  // Mistral, Qwen or whole-head-rope Phi-3 model never calls them.
  virtual bool family_ops() const { return false; }
  // out (n) = gelu_tanh(gate) · up, gelu_tanh(g) = g/2 · (1 + tanh(√(2/π) · (g + 0.044715 g³)))
  // (GeGLU, Gemma's MLP).
  virtual void gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n);
  // Through out = gelu_tanh(gate) · up: dgate (n), dup (n) written; they may alias gate and up.
  virtual void gelu_tanh_mul_backward(const float* dout, const float* gate, const float* up, float* dgate,
                                      float* dup, std::int64_t n);
  // cross_entropy of the soft-capped logits cap·tanh(logits / cap) (Gemma 2's
  // final_logit_softcapping): returns the loss sum and replaces logits by the gradient with
  // respect to the logits before the cap, (softmax − onehot) · grad_scale · (1 − tanh²).
  virtual double softcap_cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                                       float grad_scale, float cap);
  // x (n) *= s (Gemma's √H embedding scale and its backward; LongRoPE's attention factor on a
  // partial rotary's rope tables).
  virtual void scale(float* x, float s, std::int64_t n);
  // y (n) = x (n) + c (Gemma's norms multiply by 1 + w).
  virtual void add_constant(const float* x, float c, float* y, std::int64_t n);
  // rope on the first rotary_dim dims of each head alone (partial rotary, Phi-3 with
  // partial_rotary_factor < 1): rotate-half pairs (i, i + rotary_dim/2) by cos/sin i of the
  // (T, head_dim / 2) tables, the dims from rotary_dim on unchanged; `inverse` as rope.
  virtual void rope_partial(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim,
                            std::int64_t rotary_dim, const float* cos, const float* sin, bool inverse);

 private:
  TrainPrecision precision_;
};

}  // namespace plexus
