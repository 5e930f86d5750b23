// The workspace's buffers, one after another, each on its own 64-byte line.
#include "compute/workspace.h"

namespace plexus {

namespace {
// Element counts of the workspace's buffers, in declaration order.
std::vector<std::int64_t> workspace_sizes(const LayerShape& s, std::int64_t max_tokens, std::int64_t max_context,
                                          int n_threads) {
  return {max_tokens * s.hidden, max_tokens * s.q_dim(), max_tokens * s.kv_dim(), max_tokens * s.kv_dim(),
          max_tokens * s.q_dim(), max_tokens * s.intermediate, max_tokens * s.intermediate,
          max_tokens * s.rope_tables * s.head_dim / 2, max_tokens * s.rope_tables * s.head_dim / 2,
          n_threads * (s.n_heads / s.n_kv_heads) * max_context,
          max_tokens * s.experts, max_tokens * s.experts_per_token, max_tokens * s.experts_per_token,
          max_tokens * s.experts_per_token * s.hidden, max_tokens * s.experts_per_token * s.hidden,
          max_tokens * s.experts_per_token * s.intermediate, max_tokens * s.experts_per_token * s.intermediate,
          s.experts > 0 ? max_tokens * s.hidden : 0};
}
}  // namespace

std::int64_t Workspace::bytes_for(const LayerShape& s, std::int64_t max_tokens, std::int64_t max_context, int n_threads) {
  std::int64_t floats = 0;
  for (std::int64_t n : workspace_sizes(s, max_tokens, max_context, n_threads)) floats += round_up_line(n);
  return floats * static_cast<std::int64_t>(sizeof(float));
}

Workspace::Workspace(const LayerShape& s, std::int64_t max_tokens, std::int64_t max_context, int n_threads,
                     float* memory)
    : max_tokens_(max_tokens), max_context_(max_context) {
  if (memory == nullptr) {
    owned_.resize(static_cast<std::size_t>(bytes_for(s, max_tokens, max_context, n_threads) / sizeof(float)));
    memory = owned_.data();
  }
  std::span<float> route_expert_floats;  // the int32 ids' memory (the same size as floats)
  std::span<float>* fields[] = {&xb,     &q,           &k,       &v,     &att,   &gate,  &up, &rope_cos, &rope_sin, &scores,
                                &router, &route_weight, &route_expert_floats, &moe_x, &moe_y, &moe_gate, &moe_up, &moe_out};
  const std::vector<std::int64_t> sizes = workspace_sizes(s, max_tokens, max_context, n_threads);
  static_assert(sizeof(float) == sizeof(std::int32_t));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    *fields[i] = std::span<float>(memory, static_cast<std::size_t>(sizes[i]));
    memory += round_up_line(sizes[i]);
  }
  route_expert = std::span<std::int32_t>(reinterpret_cast<std::int32_t*>(route_expert_floats.data()), route_expert_floats.size());
}

}  // namespace plexus
