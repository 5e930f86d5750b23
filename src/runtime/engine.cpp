// Whole-model forward on one device.
#include "runtime/engine.h"

#include <algorithm>

#include "core/error.h"

namespace plexus {

namespace {
std::int64_t context_of(const ModelConfig& c, const EngineOptions& o) {
  return o.max_context > 0 ? std::min(o.max_context, c.max_position_embeddings) : c.max_position_embeddings;
}
}  // namespace

Engine::Engine(const std::string& model_dir, const EngineOptions& options)
    : checkpoint_(model_dir),
      model_(load_model_config(model_dir), checkpoint_),
      kernels_(isa_kernels(best_isa())),
      pool_(options.threads),
      ops_(kernels_, pool_),
      workspace_(model_.config(), std::max<std::int64_t>(1, options.max_batch_tokens), context_of(model_.config(), options),
                 pool_.size()),
      x_(static_cast<std::size_t>(workspace_.max_tokens() * model_.config().hidden_size)),
      head_in_(x_.size()) {}

KvCache Engine::new_cache(std::int64_t capacity) const {
  const ModelConfig& c = config();
  if (capacity > max_context()) {
    throw InputError("sequence of " + std::to_string(capacity) + " tokens exceeds the context of " +
                     std::to_string(max_context()) + " tokens (max_position_embeddings in config.json)");
  }
  return KvCache(c.num_layers, c.num_kv_heads, c.head_dim, capacity);
}

void Engine::forward(const TokenBatch& batch, std::span<const std::int64_t> rows, float* logits) {
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  const std::int64_t H = config().hidden_size;
  if (n == 0) return;
  if (n > max_batch_tokens()) throw RuntimeError("batch of " + std::to_string(n) + " tokens exceeds max_batch_tokens");
  for (std::int64_t t = 0; t < n; ++t) {
    const std::int32_t p = batch.pos[static_cast<std::size_t>(t)];
    if (p < 0 || p >= batch.cache[static_cast<std::size_t>(t)]->capacity()) {
      throw RuntimeError("position " + std::to_string(p) + " outside the KV cache capacity");
    }
  }
  ops_.begin_batch(batch, model_.inv_freq(), true, workspace_);
  model_.embed(ops_, batch.ids, x_.data());
  for (int l = 0; l < config().num_layers; ++l) model_.layer(ops_, l, x_.data(), batch, workspace_);
  ops_.gather_rows(x_.data(), rows, H, head_in_.data());
  model_.head(ops_, head_in_.data(), static_cast<std::int64_t>(rows.size()), logits);
  ops_.end_batch();
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
