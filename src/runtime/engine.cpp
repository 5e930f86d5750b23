// The Engine: a one-stage Executor on the host device.
#include "runtime/engine.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "exec/run_devices.h"

namespace plexus {

Engine::Engine(const std::string& model_dir, const EngineOptions& options)
    : devices_(make_host_run_devices(options.threads, options.wait)),
      executor_(std::make_unique<Executor>(model_dir, whole_model_on_host(), devices_, single_host_stage(options))) {}

KvCache Engine::new_cache(std::int64_t capacity) const {
  const ModelConfig& c = config();
  if (capacity > max_context()) {
    throw InputError("sequence of " + std::to_string(capacity) + " tokens exceeds the context of " +
                     std::to_string(max_context()) + " tokens (max_position_embeddings in config.json)");
  }
  return KvCache(c.num_layers, c.num_kv_heads, c.head_dim, capacity);
}

void Engine::forward(const TokenBatch& batch, std::span<const std::int64_t> rows, float* logits) {
  executor_->forward(batch, rows, logits);
}

void Engine::prefill(KvCache& cache, std::span<const std::int32_t> ids, std::int32_t start, float* logits) {
  const std::int64_t chunk = max_batch_tokens();
  std::vector<std::int32_t> pos(static_cast<std::size_t>(chunk));
  std::vector<KvCache*> caches(static_cast<std::size_t>(chunk), &cache);
  for (std::size_t b = 0; b < ids.size(); b += static_cast<std::size_t>(chunk)) {
    const std::size_t n = std::min(ids.size() - b, static_cast<std::size_t>(chunk));
    for (std::size_t i = 0; i < n; ++i) pos[i] = start + static_cast<std::int32_t>(b + i);
    const TokenBatch batch{ids.subspan(b, n), std::span(pos).first(n), std::span(caches).first(n)};
    const bool last = b + n == ids.size();
    const std::int64_t row = static_cast<std::int64_t>(n) - 1;
    forward(batch, last ? std::span<const std::int64_t>(&row, 1) : std::span<const std::int64_t>(), logits);
  }
}

}  // namespace plexus
