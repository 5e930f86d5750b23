// The device pointers CudaOps reads of a Workspace (model/llama_family.h), behind a plain
// struct so that CudaOps depends on the Workspace's fields in one translation unit only.
#pragma once
#include <cstdint>

namespace plexus {
class Workspace;
}

namespace plexus::cuda {

struct WorkspaceView {
  float* q = nullptr;         // (max_tokens, n_heads·head_dim)
  float* k = nullptr;         // (max_tokens, n_kv_heads·head_dim)
  float* v = nullptr;         // (max_tokens, n_kv_heads·head_dim)
  float* att = nullptr;       // (max_tokens, n_heads·head_dim)
  float* rope_cos = nullptr;  // (max_tokens, head_dim / 2)
  float* rope_sin = nullptr;  // (max_tokens, head_dim / 2)
  std::int64_t max_tokens = 0;
  std::int64_t rope_floats = 0;  // elements of rope_cos (and of rope_sin)
};

WorkspaceView view_of(Workspace& ws);

}  // namespace plexus::cuda
