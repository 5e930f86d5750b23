// A Runner over one tensor-parallel group: every rank's executor computes its shard of each
// token (model/tensor_split.h), summing partial products inside the layers through its
// collectives, and the ranks' vocabulary slices of the logits are gathered into whole rows.
// The ranks are either all in this process (one executor each, on devices of their own, the
// collectives in-process) or one per process (this process's executor, and the group's
// collective across processes, MPI), where every rank runs the same loop and holds the same logits.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/device_registry.h"
#include "comm/collective.h"
#include "comm/rank_group.h"
#include "exec/exec_stats.h"
#include "exec/executor.h"
#include "runtime/runner.h"

namespace plexus {

class TensorParallelRunner : public Runner {
 public:
  // What a group is made of; the runner owns it all (executors destroyed first).
  struct Parts {
    int tp = 1;                                            // ranks in the group
    bool expert_parallel = false;                          // --ep: the ranks hold whole experts (TensorSplit::whole_experts)
    std::vector<DeviceRegistry> devices;                   // per local rank
    std::vector<std::unique_ptr<RankGroup>> groups;        // collectives of the local ranks, per device ordinal
    std::unique_ptr<Collective> world;                     // across processes: this process's rank of the group
    std::vector<std::unique_ptr<Executor>> ranks;          // local ranks in rank order: all tp, or this process's one
    bool inject_forward_failure = false;                   // tests: the first forward throws (PLEXUS_TP_FAIL_RANK)
  };
  explicit TensorParallelRunner(Parts parts);
  ~TensorParallelRunner() override;

  const ModelConfig& config() const override { return parts_.ranks.front()->config(); }
  std::int64_t vocab_size() const override { return vocab_; }
  std::int64_t max_context() const override { return parts_.ranks.front()->max_context(); }
  std::int64_t max_batch_tokens() const override { return parts_.ranks.front()->max_batch_tokens(); }
  int open_sequence(std::int64_t capacity) override;
  void close_sequence(int slot) override;
  void copy_sequence(int from, int to, std::int64_t tokens) override;  // every local rank's shard
  // Across processes a rank that fails ends every rank (Collective::abort: exit 1, naming the rank).
  void forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) override;

  int tp() const { return parts_.tp; }
  bool expert_parallel() const { return parts_.expert_parallel; }
  // This process's rank of the group (0 when every rank is local).
  int rank() const { return parts_.world ? parts_.world->rank() : 0; }
  // The collective across processes, if the ranks are processes.
  Collective* world() const { return parts_.world.get(); }
  const std::vector<std::unique_ptr<Executor>>& executors() const { return parts_.ranks; }
  // The local ranks' statistics as one run: every device (accelerators renumbered as the run
  // numbers them: tp rank fastest), busy fractions over the longest rank's wall time, the
  // collectives of every rank summed (comm_ranks: the group's size).
  ExecStats stats() const;

 private:
  void forward_ranks(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits);

  Parts parts_;
  std::int64_t vocab_;
  std::vector<std::vector<float>> rank_logits_;  // (local ranks) (rows, the rank's vocabulary rows)
  std::vector<float> send_, gathered_;           // across processes: (rows, width) and (tp, rows, width)
};

}  // namespace plexus
