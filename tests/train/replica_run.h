// A few data-parallel training steps of a small model for the tests of train/replica_trainer:
// the global batch of step s (deterministic token ids), one rank's slice of it, and a whole run
// over in-process replicas (RefTrainOps on every rank) recording rank 0's results. Header-only,
// shared by replica_trainer_test and the mpirun program mpi_replica_check.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/config.h"
#include "train/in_process_replicas.h"
#include "train/llama_train.h"
#include "train/ref_train_ops.h"
#include "train/replica_trainer.h"

namespace plexus::testing {

// (B, T) token ids of step s's global batch, in [0, vocab).
inline std::vector<std::int32_t> global_batch(std::int64_t step, std::int64_t B, std::int64_t T, std::int64_t vocab) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(B * T));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < T; ++t)
      ids[static_cast<std::size_t>(b * T + t)] =
          static_cast<std::int32_t>((step * 131 + b * 17 + t * 7 + b * t * 3 + (t * t) % 5) % vocab);
  return ids;
}

// Rank r's sequences [r·B/R, (r+1)·B/R) of the global batch.
inline std::span<const std::int32_t> rank_slice(const std::vector<std::int32_t>& batch, std::int64_t B,
                                                std::int64_t T, int rank, int ranks) {
  const std::int64_t per = B / ranks;
  return std::span<const std::int32_t>(batch).subspan(static_cast<std::size_t>(rank * per * T),
                                                      static_cast<std::size_t>(per * T));
}

inline BatchLayout batch_layout(std::int64_t B, int replicas, std::int64_t micro) {
  BatchLayout b;
  b.global_batch = B;
  b.replicas = replicas;
  b.micro_batch = micro;
  b.accumulation = B / replicas / micro;
  return b;
}

inline OptimizerOptions test_optimizer() {
  OptimizerOptions o;
  o.lr = 1e-3;
  o.weight_decay = 0.1;
  o.max_grad_norm = 1.0;
  return o;
}

inline std::vector<float> initial_params(const std::string& model_dir, const ParamLayout& layout) {
  std::vector<float> p(static_cast<std::size_t>(layout.total()));
  load_params(Checkpoint(model_dir), layout, p);
  return p;
}

struct RunResult {
  std::vector<StepResult> steps;              // rank 0's
  std::vector<std::vector<float>> params;     // (ranks) every rank's final weights
  OptimizerState state;                        // rank 0's view of the whole state
};

struct RunSpec {
  int replicas = 1;
  int threads = 0;  // the run's threads, split over the ranks; 0: one per replica
  std::int64_t B = 4, T = 9, micro = 0;  // micro 0: B / replicas (no accumulation)
  bool zero1 = false;
  int steps = 3;
  OptimizerOptions optimizer = test_optimizer();
  // Called before each step on every rank (steps from 0), e.g. to arm a fault.
  std::function<void(int rank, int step)> before_step;
  // null: the launcher's default (make_cpu_train_ops, the fast CPU kernels)
  MakeTrainOps make_ops = [](int, ThreadPool&) -> std::unique_ptr<TrainOps> { return std::make_unique<RefTrainOps>(); };
};

inline RunResult run_replicas(const std::string& model_dir, const RunSpec& spec) {
  const ModelConfig config = load_model_config(model_dir);
  const LlamaTrainModel model(config);
  const std::vector<float> start = initial_params(model_dir, model.layout());
  RunResult out;
  out.params.resize(static_cast<std::size_t>(spec.replicas));
  std::mutex mutex;
  const std::int64_t micro = spec.micro > 0 ? spec.micro : spec.B / spec.replicas;
  run_in_process_replicas(
      spec.replicas, spec.threads > 0 ? spec.threads : spec.replicas,
      [&](ReplicaRank& r) {
        ReplicaTrainer trainer(model, start, spec.optimizer, batch_layout(spec.B, spec.replicas, micro), spec.zero1,
                               r.comm, r.ops, &r.pool);
        for (int s = 0; s < spec.steps; ++s) {
          if (spec.before_step) spec.before_step(r.rank, s);
          const std::vector<std::int32_t> batch = global_batch(s, spec.B, spec.T, config.vocab_size);
          const StepResult res = trainer.step(rank_slice(batch, spec.B, spec.T, r.rank, spec.replicas), spec.T);
          if (r.rank == 0) out.steps.push_back(res);
        }
        OptimizerState state = trainer.optimizer_state();
        std::lock_guard lock(mutex);
        out.params[static_cast<std::size_t>(r.rank)].assign(trainer.params().begin(), trainer.params().end());
        if (r.rank == 0) out.state = std::move(state);
      },
      spec.make_ops);
  return out;
}

inline bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace plexus::testing
