// `plexus train`'s batch flags (--global-batch G, --micro-batch M|auto, the old --batch-size) and
// its choices from memory: --micro-batch auto [--global-batch G] and --parallel
// auto|replicas|stages, on each replica's device budget (--max-memory, --virtual-devices, or the
// host's available memory). cmd_train calls decide_train_layout before the first step; the
// logic is train/batch_choice, this file reads the flags and measures the trial step.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/args.h"
#include "core/json.h"
#include "model/config.h"
#include "train/batch_choice.h"
#include "train/llama_train.h"
#include "train/train_run.h"

namespace plexus::cli {

// Adds --global-batch, --micro-batch, the old --batch-size (hidden) and --parallel (--max-memory,
// --virtual-devices are cmd_train's).
void add_train_auto_options(Args& args);

// The batch flags, read once: --global-batch G (sequences per optimizer step), --micro-batch M
// (sequences a replica runs forward+backward at once) or `auto` (the largest that fits), and the
// old spelling --batch-size B|auto (B: the global batch, auto: --micro-batch auto). InputError
// when neither is given, when two of them give the global batch, or with auto and a fixed M.
struct TrainBatchFlags {
  bool micro_auto = false;
  std::int64_t global = 0;  // 0: not given (replicas × the micro-batch)
  std::int64_t micro = 0;   // 0: not given (global / replicas, or chosen)
};
TrainBatchFlags train_batch_flags(const Args& args);

struct ReplicaBudget {
  std::int64_t bytes = 0;
  std::string source;  // "--max-memory", "virtual device (--virtual-devices 2)", "host's available memory"
};
// The memory one replica's device may hold: the smallest accelerator budget of --max-memory (its
// cpu entry split over the replicas when it names no accelerator), the host's available memory
// split over --virtual-devices N, else 90 % of the host's available memory split over the
// in-process replicas (`host_available`: MemAvailable, read before the weights load).
ReplicaBudget replica_budget(const std::optional<std::string>& max_memory, std::optional<long long> virtual_devices,
                             int in_process_replicas, std::uint64_t host_available);

struct TrainLayoutInputs {
  bool batch_auto = false;          // --micro-batch auto
  std::int64_t batch_size = 0;      // the global batch otherwise
  std::int64_t global_batch = 0;    // --global-batch G (auto only; 0: replicas × micro-batch)
  std::string parallel = "auto";    // --parallel
  int replicas = 1;
  bool zero1 = false;
  bool checkpoint_activations = false;  // --checkpoint-activations (auto may turn it on otherwise)
  int threads = 1;                  // compute threads of one replica
  std::int64_t seq_len = 0;         // T of the data
  std::int64_t max_micro_batch = 0; // without --global-batch: the data's sequences per replica
  ReplicaBudget budget;
};

struct TrainLayoutChoice {
  BatchLayout batch;
  Json json;  // {"parallel", "micro_batch", "accumulation", "global_batch", "replicas", "budget_bytes",
              //  "budget_source", "estimate_bytes", "trial_bytes", "trials"} (batch_auto), for --json
};

// The trial's tokens: `m` sequences of the data's T tokens (the first m of the file, wrapping).
using TrialTokens = std::function<std::vector<std::int32_t>(std::int64_t m)>;

// --parallel and the batch layout. With --micro-batch auto it picks the micro-batch, runs trial
// steps (forward/backward of `model` on `params` through `ops`, measured by the process's peak
// RSS) and prints the choice on stderr. InputError: stages asked for or needed, B not divisible by
// the replicas, nothing fits.
TrainLayoutChoice decide_train_layout(const ModelConfig& config, const TrainLayoutInputs& in,
                                      const LlamaTrainModel* model, TrainOps* ops, std::span<float> params,
                                      const TrialTokens& tokens);

// cmd_train's single-process run, after prepare_training (`run` prepared with a placeholder batch
// with --micro-batch auto): applies --parallel and, with --micro-batch auto, the chosen layout
// to run.setup.options.batch (and the run's fingerprint). `host_available`: MemAvailable read
// before the weights were loaded. InputError for --resume with auto (give the chosen batch).
void apply_train_auto(const Args& args, PreparedRun& run, int threads, std::uint64_t host_available);

}  // namespace plexus::cli
