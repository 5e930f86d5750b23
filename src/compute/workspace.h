// Scratch buffers of one layer's activations for up to `max_tokens` tokens per call; allocated
// once, in memory the workspace owns or in caller memory of bytes_for(...) bytes (a device buffer).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "compute/layer_shape.h"

namespace plexus {

// n floats rounded up to whole 64-byte lines: every buffer of a workspace starts on a line.
inline std::int64_t round_up_line(std::int64_t n) {
  constexpr std::int64_t kFloatsPerLine = 16;
  return (n + kFloatsPerLine - 1) / kFloatsPerLine * kFloatsPerLine;
}

class Workspace {
 public:
  Workspace(const LayerShape& s, std::int64_t max_tokens, std::int64_t max_context, int n_threads,
            float* memory = nullptr);
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  static std::int64_t bytes_for(const LayerShape& s, std::int64_t max_tokens, std::int64_t max_context, int n_threads);
  std::int64_t max_tokens() const { return max_tokens_; }
  std::int64_t max_context() const { return max_context_; }

  std::span<float> xb, q, k, v, att, gate, up;  // (max_tokens, H | q_dim | kv_dim | q_dim | I | I)
  std::span<float> rope_cos, rope_sin;          // (max_tokens, rope_tables · head_dim / 2)
  std::span<float> scores;                      // (n_threads, group, max_context)
  // Mixture-of-experts layers (empty for a dense model): router logits, each token's experts and
  // their weights, and one expert's gathered inputs, outputs and the tokens' summed outputs.
  std::span<float> router;                      // (max_tokens, E)
  std::span<float> route_weight;                // (max_tokens, k)
  std::span<std::int32_t> route_expert;         // (max_tokens, k)
  std::span<float> moe_x, moe_y;                // (max_tokens · k, H): each (token, slot)'s input and output, by expert
  std::span<float> moe_gate, moe_up;            // (max_tokens · k, I)
  std::span<float> moe_out;                     // (max_tokens, H)

 private:
  std::int64_t max_tokens_, max_context_;
  std::vector<float> owned_;
};

}  // namespace plexus
