// The sizes of one decoder layer's activations: what a device's compute buffers are sized by
// (Workspace, CudaOps). ModelConfig::layer_shape() gives a model's; compute/ knows no models.
#pragma once
#include <cstdint>

namespace plexus {

struct LayerShape {
  std::int64_t hidden = 0;        // H
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  std::int64_t intermediate = 0;  // I, the widest MLP (dense or one expert's)
  // Mixture of experts (0 when dense): E experts, k of them per token.
  std::int64_t experts = 0, experts_per_token = 0;
  // RoPE tables per token (ws.rope_cos/sin hold rope_tables · head_dim / 2 per token): 2 for
  // Gemma 3 (global and local bases), 1 otherwise.
  std::int64_t rope_tables = 1;
  std::int64_t q_dim() const { return n_heads * head_dim; }
  std::int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

}  // namespace plexus
