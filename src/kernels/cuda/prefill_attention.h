// Causal attention for many tokens (prefill): blocks over (query tile, kv head), a query tile
// being up to 64 / group consecutive tokens of one sequence at consecutive positions, so each
// key/value tile is read from the cache once for all of them (the split-context kernel in
// attention.h reads it once per token). f32 throughout, GQA, sliding window. Plain C++ header;
// pointers are device memory.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/token_slot.h"

namespace plexus::cuda {

// Tokens [first, first + count) of a batch: one sequence, positions slots[first].pos + i.
struct QueryTile {
  std::int32_t first = 0, count = 0;
};

// Query rows (tokens · group) per block.
constexpr std::int64_t kPrefillRows = 64;

// Whether launch_prefill_attention takes this geometry: head_dim 64 or 128, group <= 64.
bool prefill_attention_supported(const AttentionGeometry& g);
// Tokens per query tile for this geometry: kPrefillRows / group.
std::int64_t prefill_tile_tokens(const AttentionGeometry& g);

// Splits a batch's tokens (slots, host, n) into query tiles of at most tile_tokens: runs of
// consecutive tokens with the same cache at consecutive positions. Writes out[0..) (at most n)
// and returns how many.
std::int64_t make_query_tiles(const TokenSlot* slots, std::int64_t n, std::int64_t tile_tokens, QueryTile* out);

// out (n, n_heads·head_dim) as launch_attention computes it, for the tokens of `tiles`
// (n_tiles, device memory) which must cover the batch; q (n, n_heads·head_dim); every cache
// 16-byte aligned. Throws RuntimeError for an unsupported geometry.
void launch_prefill_attention(const float* q, const TokenSlot* slots, const QueryTile* tiles, std::int64_t n_tiles,
                              const AttentionGeometry& g, int layer, float* out, cudaStream_t stream);

// The same on tensor cores (prefill_attention_tc.cu): same tiles, geometries and arguments, but
// q, keys and values are rounded to bf16 for the two products (S = q·kᵀ, O = p·v, f32
// accumulation; softmax in f32), so results differ from the f32 kernel by ~1e-2 relative. Meant
// for bf16/f16 models (CudaOps' policy: cuda_ops.h); needs sm_80 or newer.
void launch_prefill_attention_bf16(const float* q, const TokenSlot* slots, const QueryTile* tiles, std::int64_t n_tiles,
                                   const AttentionGeometry& g, int layer, float* out, cudaStream_t stream);

}  // namespace plexus::cuda
