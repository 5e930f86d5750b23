// What the generate / perplexity loops need from whatever runs the model: the Executor
// (exec/executor.h), on one host stage or across devices (EngineRunner: an Engine's executor).
// Sequences are slots whose KV caches live wherever the runner keeps them.
#pragma once
#include <cstdint>
#include <span>

#include "model/config.h"

namespace plexus {

// n tokens of any mix of open sequences.
struct SlotBatch {
  std::span<const std::int32_t> ids;  // (n)
  std::span<const std::int32_t> pos;  // (n) position of each token in its sequence
  std::span<const int> seq;           // (n) the slot of each token's sequence
};

class Runner {
 public:
  virtual ~Runner() = default;
  virtual const ModelConfig& config() const = 0;
  virtual std::int64_t vocab_size() const = 0;
  virtual std::int64_t max_context() const = 0;
  virtual std::int64_t max_batch_tokens() const = 0;  // tokens per forward() at most

  // Opens a sequence of up to `capacity` tokens (InputError beyond max_context()); returns its slot.
  virtual int open_sequence(std::int64_t capacity) = 0;
  virtual void close_sequence(int slot) = 0;
  // Copies positions [0, tokens) of sequence `from`'s KV cache into sequence `to` (both open,
  // tokens within both capacities): `to` goes on from that prefix without running it (the
  // choices of one prompt share its prefill). Between forwards.
  virtual void copy_sequence(int from, int to, std::int64_t tokens) = 0;

  // Runs the tokens and writes logits (rows.size(), vocab) for the batch rows listed in `rows`.
  virtual void forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) = 0;
};

}  // namespace plexus
