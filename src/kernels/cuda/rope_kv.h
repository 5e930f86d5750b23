// RoPE on a batch's queries and keys fused with the store of each token's keys and values into
// its sequence's KV cache. Plain C++ header; pointers are device memory.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/token_slot.h"

namespace plexus::cuda {

// Rotate-half RoPE, pairs (i, i + head_dim/2) of every head — (2i, 2i + 1) when `interleaved`
// (AttentionShape::rope_interleaved: GGUF Llama q/k rows) — rotated by cos/sin i, in place on
//   q (n, n_heads·head_dim) and k (n, n_kv_heads·head_dim)
// with cos/sin (n, head_dim/2) of each token's position; then the rotated k rows and v (n,
// n_kv_heads·head_dim) rows of token t are stored at position slots[t].pos of model layer
// `layer` in the cache slots[t].cache (layout in token_slot.h). slots (n) on the device.
// Partial rotary (rotary_dim < head_dim; 0: head_dim): only dims [0, rotary_dim) turn, pairs (i,
// i + rotary_dim/2) by cos/sin i of the head_dim/2-wide tables; cos and sin are multiplied by
// `scale` (AttentionShape::rope_scale).
void launch_rope_store_kv(float* q, float* k, const float* v, const float* cos, const float* sin,
                          const TokenSlot* slots, std::int64_t n, std::int64_t n_heads, std::int64_t n_kv_heads,
                          std::int64_t head_dim, int layer, bool interleaved, std::int64_t rotary_dim, float scale,
                          cudaStream_t stream);

}  // namespace plexus::cuda
