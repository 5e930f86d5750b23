// One model on the host CPU: a convenience over the one run path, an Executor (exec/executor.h)
// with one stage on the host device, its threads all the engine's, its weights viewed in place
// from the mmapped checkpoint and its work called on the calling thread. Prefill runs as
// matrix-matrix work in chunks of `max_batch_tokens`; decode as matrix-vector work against the KV
// cache. Nothing allocates per token.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backend/device_registry.h"
#include "compute/kv_cache.h"
#include "exec/executor.h"
#include "kernels/cpu/isa.h"
#include "model/config.h"
#include "model/llama_family.h"

namespace plexus {

// EngineOptions (threads, tokens per forward, context): exec/executor.h, shared with ModelRun.

class Engine {
 public:
  // Throws InputError naming the file and field on a bad model directory.
  Engine(const std::string& model_dir, const EngineOptions& options);

  const ModelConfig& config() const { return executor_->config(); }
  const LlamaFamilyModel& model() const { return executor_->model(); }
  const IsaKernels& kernels() const { return executor_->kernels(); }
  int threads() const { return executor_->threads(); }
  std::int64_t max_batch_tokens() const { return executor_->max_batch_tokens(); }
  std::int64_t max_context() const { return executor_->max_context(); }
  std::int64_t vocab_size() const { return executor_->vocab_size(); }
  // The executor that runs the model (a Runner: sequences as slots, KV caches it allocates).
  Executor& executor() { return *executor_; }

  // A cache for one sequence of up to `capacity` tokens (<= max_context()).
  KvCache new_cache(std::int64_t capacity) const;

  // Runs a batch of tokens (any mix of sequences, at most max_batch_tokens()) through the model
  // and writes logits (rows.size(), vocab) for the batch rows listed in `rows`.
  void forward(const TokenBatch& batch, std::span<const std::int64_t> rows, float* logits);

  // Runs `ids` of one sequence from position `start`, chunked; returns the last token's logits
  // in `logits` (vocab).
  void prefill(KvCache& cache, std::span<const std::int32_t> ids, std::int32_t start, float* logits);

 private:
  DeviceRegistry devices_;
  std::unique_ptr<Executor> executor_;  // after devices_: destroyed first
};

}  // namespace plexus
