// The single-device Engine behind the Runner interface: sequences are KvCaches in host memory.
#pragma once
#include <memory>
#include <vector>

#include "runtime/engine.h"
#include "runtime/runner.h"

namespace plexus {

class EngineRunner : public Runner {
 public:
  explicit EngineRunner(Engine& engine) : engine_(engine) {}

  const ModelConfig& config() const override { return engine_.config(); }
  std::int64_t vocab_size() const override { return engine_.vocab_size(); }
  std::int64_t max_context() const override { return engine_.max_context(); }
  std::int64_t max_batch_tokens() const override { return engine_.max_batch_tokens(); }
  int open_sequence(std::int64_t capacity) override;
  void close_sequence(int slot) override;
  void forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) override;

 private:
  Engine& engine_;
  std::vector<std::unique_ptr<KvCache>> caches_;  // by slot; null when closed
  std::vector<KvCache*> batch_caches_;            // (n) scratch for forward
};

}  // namespace plexus
