// The training loop of one data-parallel rank (SPMD: every rank of the group runs it, as threads
// of one process or as MPI processes): each step takes the rank's slice of the global batch,
// runs the replica's step, counts skipped steps, and writes checkpoints and the final model (rank
// 0 writes, every rank takes part in the collectives). Knows nothing of the command line.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "core/json.h"
#include "model/config.h"
#include "train/param_layout.h"
#include "train/replica_trainer.h"
#include "train/train_checkpoint.h"
#include "train/train_data.h"
#include "train/train_options.h"

namespace plexus {

// What the loop needs of a rank's replica: ReplicaTrainer's operations (train/replica_trainer.h),
// behind an interface so the loop is tested with a stand-in.
class TrainReplica {
 public:
  virtual ~TrainReplica() = default;
  virtual StepResult step(std::span<const std::int32_t> tokens, std::int64_t T) = 0;  // collective
  virtual std::span<const float> params() const = 0;
  virtual OptimizerState optimizer_state() = 0;  // collective
  virtual void restore(std::span<const float> params, const OptimizerState& state) = 0;
  virtual CommStats comm_stats() const = 0;
};

// Test hooks from PLEXUS_TRAIN_FAIL, comma-separated (steps numbered from 1):
//   kill_at_step=N        SIGKILL this process once step N is done (before its checkpoint)
//   kill_in_checkpoint=N  SIGKILL while writing the checkpoint of step N (after its first file)
//   nan_steps=A-B         steps A..B get a non-finite gradient (a NaN put into the final norm's
//                         weight for the step, taken out after it)
//   sigint_at_step=N      raise SIGINT once step N is done (as a Ctrl-C then)
struct TrainFaults {
  std::int64_t kill_at_step = 0;
  std::int64_t sigint_at_step = 0;
  std::int64_t kill_in_checkpoint = 0;
  std::int64_t nan_first = 0, nan_last = 0;
};
// InputError naming PLEXUS_TRAIN_FAIL and the item on a bad spec.
TrainFaults parse_train_faults(const std::string& spec);

// Everything the ranks share, read-only during the run.
struct TrainSetup {
  TrainOptions options;
  const TrainData* data = nullptr;
  ModelConfig config;
  ParamLayout layout;
  std::string model_dir;  // the tokenizer files and config.json copied into --out come from here
  Json model_fingerprint, run_fingerprint;
  TrainProgress start;    // where the run starts (a resumed checkpoint's progress, or zero)
  TrainFaults faults;
  // Polled on rank 0 after every step (null: never): true ends the run there, after a
  // checkpoint (SIGINT/SIGTERM). Set it on every rank or on none (its answer is broadcast).
  std::function<bool()> stop_requested;
};

// One step as reported (rank 0's view; the loss and norm are the global batch's).
struct StepRecord {
  std::int64_t step = 0;  // from 1, as ref_train.py numbers them
  double loss = 0, grad_norm = 0, lr = 0, tokens_per_s = 0, seconds = 0;
  bool skipped = false;
};

// Per-rank totals over the run: the rank's busy time on its device and its communication time.
struct RankTotals {
  double step_seconds = 0, compute_seconds = 0, comm_seconds = 0;
  double comm_mib = 0;  // MiB this rank contributed to collectives
};

struct TrainReport {
  std::vector<StepRecord> steps;  // the steps this run did (not those before a resume)
  TrainProgress end;
  bool stopped_for_skips = false;  // --max-skipped consecutive skips ended the run
  bool interrupted = false;        // stop_requested ended the run
  std::vector<RankTotals> ranks;   // (ranks) on rank 0; this rank's alone elsewhere
  std::string last_checkpoint;
};

// Runs steps setup.start.step … options.steps−1 on this rank. Rank 0 calls on_step after each
// step, writes the checkpoints (every options.checkpoint_every steps, at the end, and when
// --max-skipped or stop_requested stops the run) and, at a normal end, the trained model into
// options.out.
TrainReport train_rank(const TrainSetup& setup, TrainReplica& replica, Collective& comm,
                       const std::function<void(const StepRecord&)>& on_step = {});

// The report's JSON: {"steps": [{"step", "loss", "grad_norm", "lr", "tokens_per_s", "skipped"}],
// "skipped_steps", "stopped_for_skips", "ranks": [{"rank", "step_s", "compute_s", "comm_s", "comm_mib"}]}.
Json train_report_to_json(const TrainReport& report);

}  // namespace plexus
