// Engine behind Runner: slots map to host KvCaches.
#include "runtime/engine_runner.h"

#include <cassert>

namespace plexus {

int EngineRunner::open_sequence(std::int64_t capacity) {
  auto cache = std::make_unique<KvCache>(engine_.new_cache(capacity));
  for (std::size_t i = 0; i < caches_.size(); ++i) {
    if (!caches_[i]) {
      caches_[i] = std::move(cache);
      return static_cast<int>(i);
    }
  }
  caches_.push_back(std::move(cache));
  return static_cast<int>(caches_.size() - 1);
}

void EngineRunner::close_sequence(int slot) {
  assert(slot >= 0 && static_cast<std::size_t>(slot) < caches_.size());
  caches_[static_cast<std::size_t>(slot)].reset();
}

void EngineRunner::forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) {
  batch_caches_.resize(batch.ids.size());
  for (std::size_t t = 0; t < batch.ids.size(); ++t) {
    batch_caches_[t] = caches_[static_cast<std::size_t>(batch.seq[t])].get();
    assert(batch_caches_[t] != nullptr && "token of a closed sequence");
  }
  engine_.forward(TokenBatch{batch.ids, batch.pos, batch_caches_}, rows, logits);
}

}  // namespace plexus
