// The key/value cache of one sequence: f32, laid out (n_layer, {k, v}, n_kv_head, capacity,
// head_dim) so that one head's keys are contiguous for attention.
#pragma once
#include <cstdint>
#include <vector>

namespace plexus {

class KvCache {
 public:
  KvCache(std::int64_t n_layers, std::int64_t n_kv_heads, std::int64_t head_dim, std::int64_t capacity)
      : n_kv_heads_(n_kv_heads), head_dim_(head_dim), capacity_(capacity),
        data_(static_cast<std::size_t>(n_layers * 2 * n_kv_heads * capacity * head_dim)) {}

  std::int64_t capacity() const { return capacity_; }
  std::int64_t head_dim() const { return head_dim_; }
  std::int64_t bytes() const { return static_cast<std::int64_t>(data_.size() * sizeof(float)); }
  static std::int64_t bytes_per_token(std::int64_t n_layers, std::int64_t n_kv_heads, std::int64_t head_dim) {
    return n_layers * 2 * n_kv_heads * head_dim * static_cast<std::int64_t>(sizeof(float));
  }

  // (capacity, head_dim) keys / values of one layer's kv head.
  float* keys(std::int64_t layer, std::int64_t kv_head) { return at(layer, 0, kv_head); }
  float* values(std::int64_t layer, std::int64_t kv_head) { return at(layer, 1, kv_head); }

 private:
  float* at(std::int64_t layer, std::int64_t which, std::int64_t kv_head) {
    return data_.data() + (((layer * 2 + which) * n_kv_heads_ + kv_head) * capacity_) * head_dim_;
  }
  std::int64_t n_kv_heads_, head_dim_, capacity_;
  std::vector<float> data_;
};

}  // namespace plexus
