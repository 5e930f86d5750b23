// One data-parallel rank of a training run: its copy of the weights, its gradients, its share of
// the AdamW state (all of it, or a ZeRO-1 shard), and the optimizer step. Every rank of the
// group runs the same code (SPMD): in-process ranks on threads (comm/in_process_group) or MPI
// processes (comm/mpi_collective), one replica each. A step runs the rank's micro-batches, sums
// the gradients over the ranks with all-reduces of layer buckets started as the backward
// finishes each layer, clips by the global norm and applies AdamW — or skips the update when the
// norm is not finite, or when the update would make a weight or moment non-finite. Every rank
// ends a step with the same weights, bit for bit.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/collective.h"
#include "train/llama_train.h"
#include "train/train_options.h"

namespace plexus {

class ThreadPool;

struct StepResult {
  double loss = 0;          // mean next-token cross-entropy of the global batch
  double grad_norm = 0;     // global 2-norm of the summed gradients, before clipping
  bool skipped = false;     // the norm, or the update, was not finite: weights and optimizer state unchanged
  std::int64_t tokens = 0;  // tokens of the global batch (B·T)
  double seconds = 0;          // the whole step on this rank
  double compute_seconds = 0;  // forward + backward + optimizer on this rank
  double comm_seconds = 0;     // waiting for collectives that did not overlap compute
};

// AdamW state of the whole layout, for checkpoints (gathered from the shards under ZeRO-1).
struct OptimizerState {
  std::int64_t step = 0;       // updates applied (AdamW's bias-correction count)
  std::vector<float> exp_avg;     // (layout.total()) first moment
  std::vector<float> exp_avg_sq;  // (layout.total()) second moment
};

class ReplicaTrainer {
 public:
  // `params` (layout.total()) the starting weights, equal on every rank. `comm` is this rank's
  // handle of the replica group (batch.replicas == comm.size(); batch.checkpoint_activations:
  // TrainActivations checkpointed, the same bits); `ops` computes on this rank's
  // device; `pool` (may be null) runs the optimizer's elementwise work and the gradient norm.
  // The trainer keeps references to model, comm, ops and pool.
  ReplicaTrainer(const LlamaTrainModel& model, std::vector<float> params, const OptimizerOptions& optimizer,
                 const BatchLayout& batch, bool zero1, Collective& comm, TrainOps& ops, ThreadPool* pool = nullptr);
  ~ReplicaTrainer();
  ReplicaTrainer(const ReplicaTrainer&) = delete;
  ReplicaTrainer& operator=(const ReplicaTrainer&) = delete;

  // One optimizer step. `tokens` (batch.accumulation · batch.micro_batch, T) are this rank's
  // sequences of the global batch (rank r holds sequences [r·B/R, (r+1)·B/R) of it). Collective:
  // every rank calls it for every step.
  StepResult step(std::span<const std::int32_t> tokens, std::int64_t T);

  std::span<const float> params() const;  // (layout.total()) the current weights
  // The whole optimizer state on every rank (collective under ZeRO-1), and its restore on
  // resume (each rank keeps its shard). restore_params sets the weights (equal on every rank).
  OptimizerState optimizer_state();
  void restore(std::span<const float> params, const OptimizerState& state);

  CommStats comm_stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus
