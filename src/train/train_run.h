// A whole `plexus train` run in this process: rank 0 prepares it (every input checked before any
// step: the model, the data, --out, the checkpoint to resume), then the ranks run the loop
// (train/trainer.h) — R in-process ranks on threads, or this process as one rank of an MPI job,
// the prepared inputs broadcast from rank 0.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "core/thread_pool.h"
#include "train/train_ops.h"
#include "train/trainer.h"

namespace plexus {

// Where the replicas run: CPU devices only (the GPU backward is not built yet).
struct TrainDevices {
  int virtual_devices = 0;  // > 0: one replica per virtual CPU device
  std::string max_memory;   // --max-memory as given ("" none); checked by the command
  int threads = 0;          // CPU threads of this process, split over its ranks (0: all)
};

// Everything a rank needs before its first step.
struct PreparedRun {
  TrainSetup setup;  // setup.data points at *data
  std::unique_ptr<TrainData> data;
  std::vector<float> params;            // (layout.total()) the starting weights
  std::optional<OptimizerState> state;  // set when resumed
  std::string resumed_from;             // the checkpoint's path, "" for a fresh run
};

// Rank 0's preparation: InputError (exit 2) naming the file:line or path for bad data, an --out
// of another model or with checkpoints and no --resume, --resume without a checkpoint or with
// one of another model or other options; nothing is written before it returns (bar --out made).
PreparedRun prepare_training(const TrainOptions& options, const std::string& model_dir, const TrainFaults& faults);
// The same for the other ranks of an MPI job: the model only; share_prepared fills the rest.
PreparedRun prepare_training_rank(const TrainOptions& options, const std::string& model_dir, const TrainFaults& faults);
// Rank 0's data, starting weights, optimizer state and progress on every rank (collective).
void share_prepared(PreparedRun& run, Collective& comm);

using StepCallback = std::function<void(const StepRecord&)>;

// Runs options.batch.replicas in-process ranks on threads (train/in_process_replicas.h), `threads`
// split between them; rank 0's report. The first rank's error is rethrown (the others are woken).
TrainReport run_in_process(const PreparedRun& run, int threads, const StepCallback& on_step);
// This process as rank comm.rank() of comm.size(), computing with `ops` on `pool`: its report
// (rank 0's holds every rank's totals).
TrainReport run_rank(const PreparedRun& run, Collective& comm, TrainOps& ops, ThreadPool& pool, const StepCallback& on_step);

}  // namespace plexus
