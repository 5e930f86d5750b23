// The key/value cache of one sequence: f32, laid out (n_layer, {k, v}, n_kv_head, capacity,
// head_dim) so that one head's keys are contiguous for attention. A cache may hold a range of
// layers only (one pipeline stage's) and may live in memory owned elsewhere (a device buffer).
#pragma once
#include <cassert>
#include <cstdint>
#include <vector>

namespace plexus {

class KvCache {
 public:
  // All layers, in memory owned by the cache.
  KvCache(std::int64_t n_layers, std::int64_t n_kv_heads, std::int64_t head_dim, std::int64_t capacity)
      : n_layers_(n_layers), n_kv_heads_(n_kv_heads), head_dim_(head_dim), capacity_(capacity),
        owned_(static_cast<std::size_t>(n_layers * 2 * n_kv_heads * capacity * head_dim)), data_(owned_.data()) {}
  // Layers [first_layer, first_layer + n_layers) in caller memory of bytes_for(...) bytes, which
  // must outlive the cache.
  KvCache(std::int64_t first_layer, std::int64_t n_layers, std::int64_t n_kv_heads, std::int64_t head_dim,
          std::int64_t capacity, float* memory)
      : first_layer_(first_layer), n_layers_(n_layers), n_kv_heads_(n_kv_heads), head_dim_(head_dim),
        capacity_(capacity), data_(memory) {}
  KvCache(KvCache&&) noexcept = default;  // a vector keeps its buffer when moved: data_ stays valid
  KvCache& operator=(KvCache&&) noexcept = default;
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  std::int64_t capacity() const { return capacity_; }
  std::int64_t head_dim() const { return head_dim_; }
  std::int64_t first_layer() const { return first_layer_; }
  std::int64_t n_layers() const { return n_layers_; }
  std::int64_t bytes() const { return bytes_for(n_layers_, n_kv_heads_, head_dim_, capacity_); }
  static std::int64_t bytes_per_token(std::int64_t n_layers, std::int64_t n_kv_heads, std::int64_t head_dim) {
    return n_layers * 2 * n_kv_heads * head_dim * static_cast<std::int64_t>(sizeof(float));
  }
  static std::int64_t bytes_for(std::int64_t n_layers, std::int64_t n_kv_heads, std::int64_t head_dim,
                                std::int64_t capacity) {
    return bytes_per_token(n_layers, n_kv_heads, head_dim) * capacity;
  }

  // (capacity, head_dim) keys / values of one layer's kv head; `layer` is the model's index.
  float* keys(std::int64_t layer, std::int64_t kv_head) { return at(layer, 0, kv_head); }
  float* values(std::int64_t layer, std::int64_t kv_head) { return at(layer, 1, kv_head); }

 private:
  float* at(std::int64_t layer, std::int64_t which, std::int64_t kv_head) {
    const std::int64_t local = layer - first_layer_;
    assert(local >= 0 && local < n_layers_ && "layer outside this cache's range");
    return data_ + (((local * 2 + which) * n_kv_heads_ + kv_head) * capacity_) * head_dim_;
  }
  std::int64_t first_layer_ = 0, n_layers_ = 0, n_kv_heads_ = 0, head_dim_ = 0, capacity_ = 0;
  std::vector<float> owned_;
  float* data_ = nullptr;
};

}  // namespace plexus
