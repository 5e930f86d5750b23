// Per-token metadata the CUDA kernels read on the device: where a token's keys and values go
// and which positions it attends. CudaOps::begin_batch writes one per token of a batch into a
// fixed device buffer, so a captured forward reads each step's values from the same place.
// Plain C++17 (included by .cu and .cpp files alike).
#pragma once
#include <cstdint>

namespace plexus::cuda {

struct TokenSlot {
  float* cache = nullptr;        // the token's sequence's KvCache memory, f32
                                 // (cache_layers, {k, v}, n_kv_heads, capacity, head_dim)
  std::int64_t capacity = 0;     // positions per head in `cache`
  std::int32_t first_layer = 0;  // the model layer index of the cache's first layer
  std::int32_t pos = 0;          // the token's position in its sequence, < capacity
};

}  // namespace plexus::cuda
