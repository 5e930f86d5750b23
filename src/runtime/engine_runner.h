// The Engine behind the Runner interface: its executor's own sequences (KV caches in host memory
// of the host device).
#pragma once
#include "runtime/engine.h"
#include "runtime/runner.h"

namespace plexus {

class EngineRunner : public Runner {
 public:
  explicit EngineRunner(Engine& engine) : executor_(engine.executor()) {}

  const ModelConfig& config() const override { return executor_.config(); }
  std::int64_t vocab_size() const override { return executor_.vocab_size(); }
  std::int64_t max_context() const override { return executor_.max_context(); }
  std::int64_t max_batch_tokens() const override { return executor_.max_batch_tokens(); }
  int open_sequence(std::int64_t capacity) override { return executor_.open_sequence(capacity); }
  void close_sequence(int slot) override { executor_.close_sequence(slot); }
  void copy_sequence(int from, int to, std::int64_t tokens) override { executor_.copy_sequence(from, to, tokens); }
  void forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) override {
    executor_.forward(batch, rows, logits);
  }

 private:
  Executor& executor_;
};

}  // namespace plexus
