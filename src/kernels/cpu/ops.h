// Transformer building blocks on f32 activations, multi-threaded where it pays.
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/cpu/isa.h"

namespace plexus {

// y (n, d) = x (n, d) / sqrt(mean(x²) + eps) * weight (d); y may alias x.
void rmsnorm(const IsaKernels& k, const float* x, const float* weight, std::int64_t n, std::int64_t d, float eps,
             float* y);

// In place rotate-half RoPE on x (n_heads, head_dim) with cos/sin (head_dim/2) of one position:
// pairs (i, i + head_dim/2) turn by angle i, or with `interleaved` pairs (2i, 2i+1) (GGUF llama).
// rotary_dim > 0 (partial rotary, Phi-4-mini): only dims [0, rotary_dim) turn, pairs (i, i +
// rotary_dim/2) by the first rotary_dim/2 angles; the rest pass unchanged.
void rope(float* x, std::int64_t n_heads, std::int64_t head_dim, const float* cos, const float* sin, bool interleaved = false,
          std::int64_t rotary_dim = 0);

// out (n) = silu(gate) * up, split across threads.
void silu_mul(const IsaKernels& k, ThreadPool& pool, const float* gate, const float* up, float* out, std::int64_t n);

// out (n) = gelu_tanh(gate) * up (GeGLU), split across threads; out may alias gate.
void gelu_tanh_mul(ThreadPool& pool, const float* gate, const float* up, float* out, std::int64_t n);

// x (n) = tanh(x / cap) * cap, split across threads.
void softcap(ThreadPool& pool, float* x, float cap, std::int64_t n);

// In place softmax of x (n); returns nothing, uses the ISA exp.
void softmax(const IsaKernels& k, float* x, std::int64_t n);
// x (n) = exp(x - m) / (Σ exp(x - m) + exp(sink - m)), m = max(x, sink): a softmax whose
// denominator holds one more logit that takes no share of the output (gpt-oss attention sinks).
void softmax_with_sink(const IsaKernels& k, float* x, std::int64_t n, float sink);

}  // namespace plexus
