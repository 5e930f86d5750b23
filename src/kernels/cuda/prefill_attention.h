// Causal attention for many tokens (prefill): blocks over (query tile, kv head), a query tile
// being up to 64 / group consecutive tokens of one sequence at consecutive positions, so each
// key/value tile is read from the cache once for all of them (the split-context kernel in
// attention.h reads it once per token). f32 throughout, GQA, sliding window. Plain C++ header;
// pointers are device memory.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
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
// for bf16/f16 models (CudaOps' policy: compute/cuda/cuda_ops.h); needs sm_80 or newer.
void launch_prefill_attention_bf16(const float* q, const TokenSlot* slots, const QueryTile* tiles, std::int64_t n_tiles,
                                   const AttentionGeometry& g, int layer, float* out, cudaStream_t stream);

// The staged tensor-core path: a conversion pass writes the keys and values a batch's query tiles
// attend as bf16 into a scratch buffer (keys (kv head, key, dim), values transposed (kv head, dim,
// key)), then the attention kernel streams 64-key tiles of them into shared memory with cp.async,
// double-buffered. Same results as launch_prefill_attention_bf16 (the same bf16 roundings).
//
// A span: the keys of one run of query tiles of one sequence (consecutive tiles of one cache at
// consecutive positions), positions [0, last_pos] rounded up to 64, at keys [offset, offset +
// roundup64(last_pos + 1)) of the buffer. With a sliding window only positions from
// floor64(max(0, first_pos - window + 1)) on are converted (and read).
struct KvSpan {
  std::int32_t token = 0;      // a token of the span (its slot names the cache)
  std::int32_t first_pos = 0;  // the position of the span's first token
  std::int32_t last_pos = 0;   // the position of the span's last token
  std::int32_t offset = 0;     // the span's first key in the buffer, a multiple of 64
};
constexpr std::int64_t kKvSpanAlign = 64;

// The spans of a batch's tiles (host): writes spans (at most n_tiles) and, per tile, the buffer
// offset of its span (tile_offset, n_tiles); *n_spans their count. Returns the keys they need.
std::int64_t make_kv_spans(const TokenSlot* slots, const QueryTile* tiles, std::int64_t n_tiles, KvSpan* spans,
                           std::int32_t* tile_offset, std::int64_t* n_spans);

// Bytes of a bf16 key/value buffer of `keys` keys per kv head.
std::size_t prefill_kv_bf16_bytes(const AttentionGeometry& g, std::int64_t keys);

// Converts the spans' keys and values of `layer` into kv (prefill_kv_bf16_bytes(g, key_capacity)
// bytes, 16-byte aligned); needed_keys: make_kv_spans' result, <= key_capacity (a multiple of 64).
void launch_prefill_kv_bf16(const TokenSlot* slots, const KvSpan* spans, std::int64_t n_spans,
                            std::int64_t needed_keys, const AttentionGeometry& g, int layer, void* kv,
                            std::int64_t key_capacity, cudaStream_t stream);

// launch_prefill_attention_bf16 reading the converted keys and values (kv as converted above for
// the same tiles, layer and window); tile_offset: make_kv_spans' (n_tiles, device memory).
void launch_prefill_attention_bf16_staged(const float* q, const TokenSlot* slots, const QueryTile* tiles,
                                          const std::int32_t* tile_offset, std::int64_t n_tiles,
                                          const AttentionGeometry& g, const void* kv, std::int64_t key_capacity,
                                          float* out, cudaStream_t stream);

}  // namespace plexus::cuda
