// Attention of a batch's queries over their sequences' KV caches, split over the context
// (flash-decoding): blocks over (token, kv head, context split) compute a partial softmax —
// running max, sum and unnormalised value sum — for the `group` query heads that share the kv
// head, and a combine kernel merges the splits. Causal, GQA, sliding window; used for any
// number of tokens (prefill too). Plain C++ header; pointers are device memory.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/token_slot.h"

namespace plexus::cuda {

struct AttentionGeometry {
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;  // head_dim <= 256
  std::int64_t window = 0;                                 // 0: the whole context
  float scale = 1;                                         // applied to q·k
  float softcap = 0;  // scores tanh(s / softcap) · softcap after the scale (Gemma); 0: none
};

// The launch's context split: `splits` blocks per (token, kv head), each over `chunk` keys (the
// last over the rest).
struct AttentionSplit {
  std::int64_t splits = 1, chunk = 32;
};

// The split for n tokens whose longest attended range is at most max_keys keys: enough blocks
// for `target_blocks` (a few per SM) where the context allows. Depends on (n, max_keys) only.
AttentionSplit attention_split(const AttentionGeometry& g, std::int64_t n, std::int64_t max_keys, int target_blocks);

// Floats of partial results launch_attention needs for up to max_tokens tokens with any
// target_blocks <= max_target_blocks.
std::int64_t attention_partial_floats(const AttentionGeometry& g, std::int64_t max_tokens, int max_target_blocks);

// out (n, n_heads·head_dim) = softmax(q·kᵀ·scale)·v (the scores soft-capped when g.softcap > 0)
// for each token t of
//   q (n, n_heads·head_dim)
// over positions [max(0, pos - window + 1), pos] (pos = slots[t].pos) of model layer `layer` of
// the cache slots[t].cache; query head h reads kv head h / (n_heads / n_kv_heads).
// `split` from attention_split; partials holds partial_floats floats (checked: throws
// RuntimeError when too small) and is overwritten.
void launch_attention(const float* q, const TokenSlot* slots, std::int64_t n, const AttentionGeometry& g,
                      const AttentionSplit& split, int layer, float* partials, std::int64_t partial_floats, float* out,
                      cudaStream_t stream);

}  // namespace plexus::cuda
