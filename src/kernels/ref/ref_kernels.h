// Plain, obviously-correct oracle kernels (double accumulation). Every fast kernel in
// kernels/cpu is tested against these.
#pragma once
#include <cstdint>

#include "kernels/weight_matrix.h"

namespace plexus::ref {

// Weight element r, c as float (output r, input c; WeightMatrix::in_out weights read transposed).
float weight_at(const WeightMatrix& w, std::int64_t r, std::int64_t c);

// y (n, w.rows) = x (n, w.cols) · wᵀ (block formats: the dequantised weights; either layout).
void matmul(const WeightMatrix& w, const float* x, std::int64_t n, float* y);

// The product the quantised kernels compute for block-format w: y (n, w.rows) = xq · wᵀ with w
// dequantised (quantize.h) and xq (n, w.cols) = x quantised by quantize_x (kernels/cpu/quant_x.h)
// and taken back to d·q, summed in double.
void matmul_quantized_x(const WeightMatrix& w, const float* x, std::int64_t n, float* y);

// y (n, d) = x / sqrt(mean(x²) + eps) * weight, per row; weight (d) in `wt`.
void rmsnorm(const float* x, const void* weight, DType wt, std::int64_t n, std::int64_t d, double eps, float* y);

// out (n) = silu(gate) * up, silu(g) = g / (1 + e^-g)
void silu_mul(const float* gate, const float* up, std::int64_t n, float* out);

// out (n) = gelu_tanh(gate) * up, gelu_tanh(g) = g/2 · (1 + tanh(√(2/π) · (g + 0.044715 g³))), in double
void gelu_tanh_mul(const float* gate, const float* up, std::int64_t n, float* out);

// x (n) = tanh(x / cap) · cap, in double
void softcap(float* x, double cap, std::int64_t n);

// In place, rotate-half RoPE on x (n_heads, head_dim) at `position` with inv_freq (head_dim/2)
// (partial rotary: only dims [0, rotary_dim) turn, pairs (i, i + rotary_dim/2); 0: the whole head;
// cos and sin times `scale`):
// pairs (i, i + head_dim/2) turn by angle i, or with `interleaved` pairs (2i, 2i+1) (GGUF llama).
void rope(float* x, std::int64_t n_heads, std::int64_t head_dim, std::int64_t position, const double* inv_freq,
          bool interleaved = false, std::int64_t rotary_dim = 0, double scale = 1.0);

// Causal attention of one query q (head_dim) against keys/values (n_keys, head_dim) with
// row stride `stride`: out (head_dim) = softmax(q·k / sqrt(head_dim)) · v.
void attention(const float* q, const float* keys, const float* values, std::int64_t n_keys, std::int64_t stride,
               std::int64_t head_dim, float* out);

// x (n, table.cols) = rows ids[i] of `table` as f32.
void embed(const WeightMatrix& table, const std::int32_t* ids, std::int64_t n, float* x);

// Grouped-query, causal, sliding-window attention of one token at position `pos`:
//   out (n_heads, head_dim) = softmax(q·kᵀ·scale)·v for q (n_heads, head_dim)
// where query head h reads kv head g = h / (n_heads / n_kv_heads), whose keys and values are
// (>= pos + 1, head_dim) rows at keys + g·kv_stride and values + g·kv_stride (the KvCache layout of
// one layer: kv_stride = capacity·head_dim), over positions [max(0, pos - window + 1), pos]
// (window 0: from 0).
void attention_gqa(const float* q, const float* keys, const float* values, std::int64_t kv_stride,
                   std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t head_dim, std::int64_t pos,
                   std::int64_t window, double scale, float* out);

// log(sum(exp(x))) over n values, in double.
double logsumexp(const float* x, std::int64_t n);

}  // namespace plexus::ref
