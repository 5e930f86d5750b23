// One model on one CPU device: loads a checkpoint, owns the threads, the CPU compute operations
// (CpuOps) and scratch buffers, and runs token batches through the whole model. Prefill runs as matrix-matrix work in chunks of
// `max_batch_tokens`; decode as matrix-vector work against the KV cache. Nothing allocates per
// token.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/isa.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/cpu_ops.h"
#include "model/kv_cache.h"
#include "model/llama_family.h"

namespace plexus {

struct EngineOptions {
  int threads = 0;                    // 0: one per hardware thread
  std::int64_t max_batch_tokens = 256;  // tokens per forward call (prefill chunk)
  std::int64_t max_context = 0;       // 0: the model's max_position_embeddings
};

class Engine {
 public:
  // Throws InputError naming the file and field on a bad model directory.
  Engine(const std::string& model_dir, const EngineOptions& options);

  const ModelConfig& config() const { return model_.config(); }
  const LlamaFamilyModel& model() const { return model_; }
  const IsaKernels& kernels() const { return kernels_; }
  int threads() const { return pool_.size(); }
  std::int64_t max_batch_tokens() const { return workspace_.max_tokens(); }
  std::int64_t max_context() const { return workspace_.max_context(); }
  std::int64_t vocab_size() const { return model_.lm_head().rows; }

  // A cache for one sequence of up to `capacity` tokens (<= max_context()).
  KvCache new_cache(std::int64_t capacity) const;

  // Runs a batch of tokens (any mix of sequences, at most max_batch_tokens()) through the model
  // and writes logits (rows.size(), vocab) for the batch rows listed in `rows`.
  void forward(const TokenBatch& batch, std::span<const std::int64_t> rows, float* logits);

  // Runs `ids` of one sequence from position `start`, chunked; returns the last token's logits
  // in `logits` (vocab).
  void prefill(KvCache& cache, std::span<const std::int32_t> ids, std::int32_t start, float* logits);

 private:
  Checkpoint checkpoint_;
  LlamaFamilyModel model_;
  const IsaKernels& kernels_;
  ThreadPool pool_;
  CpuOps ops_;
  Workspace workspace_;
  std::vector<float> x_;        // (max_batch_tokens, H) residual stream
  std::vector<float> head_in_;  // (max_batch_tokens, H) rows that need logits
};

}  // namespace plexus
