// Data-parallel ranks as threads of this process: R replicas over an InProcessGroup, each with
// its own thread pool (the run's threads split across them) and its own TrainOps, each calling
// the same per-rank function (SPMD). The MPI path runs one rank per process instead, over
// MpiCollective; the per-rank function is the same.
#pragma once
#include <functional>
#include <memory>

#include "comm/collective.h"
#include "core/thread_pool.h"
#include "train/train_ops.h"

namespace plexus {

// What one rank computes and communicates with.
struct ReplicaRank {
  int rank = 0;
  int replicas = 1;
  Collective& comm;
  TrainOps& ops;
  ThreadPool& pool;  // this rank's threads (the ops compute on them)
};

// Rank r's TrainOps over its pool.
using MakeTrainOps = std::function<std::unique_ptr<TrainOps>(int rank, ThreadPool& pool)>;
// The CPU's fastest TrainOps of this build, computing in `precision`.
std::unique_ptr<TrainOps> make_cpu_train_ops(ThreadPool& pool, TrainPrecision precision = TrainPrecision::kF32);

// How `threads` threads (0: one per hardware thread) are split over `replicas` ranks: at least one
// each, the remainder to the first ranks.
int replica_threads(int threads, int replicas, int rank);

// Runs fn on `replicas` ranks, rank 0 on the calling thread, the others on threads of their own,
// and returns when all have returned. When a rank throws, the group is aborted (ranks waiting in
// a collective throw too) and the first rank's exception to be thrown is rethrown here, after
// every rank has ended. `make_ops` null: make_cpu_train_ops.
void run_in_process_replicas(int replicas, int threads, const std::function<void(ReplicaRank&)>& fn,
                             const MakeTrainOps& make_ops = {}, WaitPolicy wait = WaitPolicy::kAuto);

}  // namespace plexus
