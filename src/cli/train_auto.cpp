// --global-batch, --micro-batch [auto] and --parallel for `plexus train` (see train_auto.h).
#include "cli/train_auto.h"

#include <algorithm>
#include <cstdio>

#include "backend/device_options.h"
#include "core/error.h"
#include "core/units.h"
#include "planner/budgets.h"
#include "train/batch_trial.h"
#include "train/in_process_replicas.h"
#include "train/process_rss.h"
#include "train/train_checkpoint.h"

namespace plexus::cli {

void add_train_auto_options(Args& args) {
  args.option("--global-batch", "G", "sequences per optimizer step, over every replica; with --micro-batch auto reached by "
                                     "gradient accumulation (default: replicas x the micro-batch)")
      .option("--micro-batch", "M", "sequences a replica runs through forward+backward at once, G/R/M micro-batches accumulated "
                                    "(default: G/R); auto: the largest that fits each device, confirmed by a trial step "
                                    "(docs/train.md)")
      .option("--batch-size", "B", "the old spelling: B is --global-batch B, auto is --micro-batch auto").hidden();
  args.option("--parallel", "MODE", "auto | replicas | stages: auto trains data-parallel replicas when one device "
                                    "holds the training state, layer stages otherwise (stages are not built yet)",
              "auto");
}

ReplicaBudget replica_budget(const std::optional<std::string>& max_memory, std::optional<long long> virtual_devices,
                             int in_process_replicas, std::uint64_t host_available) {
  const std::int64_t replicas = std::max(in_process_replicas, 1);
  ReplicaBudget b;
  if (max_memory) {
    const Budgets budgets = parse_max_memory(*max_memory);
    const std::vector<DeviceId> acc = budgets.accelerators();
    if (!acc.empty()) {
      std::uint64_t least = *budgets.get(acc.front());
      for (const DeviceId& d : acc) least = std::min(least, *budgets.get(d));
      b.bytes = static_cast<std::int64_t>(least);
      b.source = "--max-memory budget";
      return b;
    }
    if (auto cpu = budgets.get(DeviceId::cpu())) {
      b.bytes = static_cast<std::int64_t>(*cpu) / replicas;
      b.source = replicas == 1 ? "--max-memory cpu budget" : "--max-memory cpu budget split over the replicas";
      return b;
    }
  }
  if (virtual_devices && *virtual_devices > 0) {
    b.bytes = static_cast<std::int64_t>(host_available / static_cast<std::uint64_t>(*virtual_devices));
    b.source = "virtual device's share (--virtual-devices " + std::to_string(*virtual_devices) + ")";
    return b;
  }
  b.bytes = static_cast<std::int64_t>(host_available / 10 * 9) / replicas;
  b.source = replicas == 1 ? "host's available memory (90%)" : "host's available memory (90%) split over the replicas";
  return b;
}

TrainLayoutChoice decide_train_layout(const ModelConfig& config, const TrainLayoutInputs& in,
                                      const LlamaTrainModel* model, TrainOps* ops, std::span<float> params,
                                      const TrialTokens& tokens) {
  const int replicas = std::max(in.replicas, 1);
  // One sequence as little as it can take: checkpointed when given, or when auto may choose it.
  TrainingShape one{1, in.seq_len, replicas, in.zero1, in.threads, in.checkpoint_activations || in.batch_auto};
  const ParallelMode mode = choose_parallel(parse_parallel_mode(in.parallel),
                                            training_memory(config, one).device_total(), in.budget.bytes,
                                            in.budget.source);
  (void)mode;  // replicas: the only mode built
  TrainLayoutChoice c;
  c.json["parallel"] = "replicas";
  if (!in.batch_auto) {
    if (in.batch_size % replicas != 0) {
      throw InputError("--global-batch " + std::to_string(in.batch_size) + " is not a multiple of the " +
                       std::to_string(replicas) + " replicas: the global batch is split evenly across replicas");
    }
    c.batch.global_batch = in.batch_size;
    c.batch.micro_batch = in.batch_size / replicas;
    c.batch.accumulation = 1;
    c.batch.replicas = replicas;
    c.batch.checkpoint_activations = in.checkpoint_activations;
    c.batch.why = "--global-batch " + std::to_string(in.batch_size) + " over " + std::to_string(replicas) +
                  (replicas == 1 ? " replica" : " replicas");
    return c;
  }
  AutoBatchRequest req;
  req.global_batch = in.global_batch;
  req.seq_len = in.seq_len;
  req.max_micro_batch = in.max_micro_batch;
  req.replicas = replicas;
  req.zero1 = in.zero1;
  req.threads = in.threads;
  req.budget = in.budget.bytes;
  req.budget_source = in.budget.source;
  req.checkpoint_activations = in.checkpoint_activations;
  TrialStep trial;
  if (model != nullptr && ops != nullptr && !params.empty() && tokens) {
    const std::int64_t baseline = current_rss_bytes();  // before the first trial
    trial = [&, baseline](std::int64_t m, bool checkpoint) {
      TrainingShape shape = one;
      shape.micro_batch = m;
      shape.checkpoint_activations = checkpoint;
      const std::vector<std::int32_t> ids = tokens(m);
      return measure_trial_step(*model, *ops, params, ids, in.seq_len, m, checkpoint, training_memory(config, shape),
                                baseline);
    };
  }
  const AutoBatchChoice a = choose_auto_batch(config, req, trial);
  c.batch = a.batch;
  std::fprintf(stderr, "%s\n", a.batch.why.c_str());
  c.json["micro_batch"] = a.batch.micro_batch;
  c.json["accumulation"] = a.batch.accumulation;
  c.json["global_batch"] = a.batch.global_batch;
  c.json["replicas"] = a.batch.replicas;
  c.json["budget_bytes"] = in.budget.bytes;
  c.json["budget_source"] = in.budget.source;
  c.json["estimate_bytes"] = a.estimate.device_total();
  c.json["largest_fit"] = a.largest_fit;
  c.json["trial_bytes"] = a.measured;
  c.json["trials"] = a.trials;
  c.json["checkpoint_activations"] = a.batch.checkpoint_activations;
  return c;
}

TrainBatchFlags train_batch_flags(const Args& args) {
  // The old --batch-size: B is the global batch, auto the micro-batch chosen (beside --global-batch G).
  const bool old_given = args.given("--batch-size");
  const bool old_auto = old_given && args.get("--batch-size") == "auto";
  if (old_given && !old_auto && args.given("--global-batch")) {
    throw InputError("--global-batch and --batch-size (its old spelling) both give the global batch: give --global-batch");
  }
  const char* global_flag = old_given && !old_auto ? "--batch-size" : "--global-batch";
  const bool global_auto = args.given(global_flag) && args.get(global_flag) == "auto";
  TrainBatchFlags f;
  f.micro_auto = old_auto || global_auto || (args.given("--micro-batch") && args.get("--micro-batch") == "auto");
  if ((old_auto || global_auto) && args.given("--micro-batch")) {
    throw InputError(std::string(old_auto ? "--batch-size" : global_flag) + " auto chooses the micro-batch: leave --micro-batch out");
  }
  if (args.given(global_flag) && !global_auto) f.global = args.get_int_in(global_flag, 1, 1LL << 30);
  if (args.given("--micro-batch") && !f.micro_auto) f.micro = args.get_int_in("--micro-batch", 1, 1LL << 30);
  if (!f.micro_auto && f.global == 0 && f.micro == 0) {
    throw InputError("give --global-batch G (sequences per optimizer step), --micro-batch M or --micro-batch auto "
                     "(plexus train --help lists the flags)");
  }
  return f;
}

void apply_train_auto(const Args& args, PreparedRun& run, int threads, std::uint64_t host_available) {
  TrainOptions& o = run.setup.options;
  const TrainBatchFlags flags = train_batch_flags(args);
  const bool is_auto = flags.micro_auto;
  if (is_auto && o.resume) {
    throw InputError("--micro-batch auto with --resume: give the batch the first run chose (--global-batch G "
                     "--micro-batch M, printed on its stderr), so that the run continues as it began");
  }
  TrainLayoutInputs in;
  in.batch_auto = is_auto;
  in.batch_size = o.batch.global_batch;
  if (is_auto) in.global_batch = flags.global;
  in.parallel = args.get("--parallel");
  in.replicas = o.batch.replicas;
  in.zero1 = o.zero1;
  in.checkpoint_activations = o.batch.checkpoint_activations;
  in.threads = replica_threads(threads, o.batch.replicas, 0);
  in.seq_len = run.data->T;
  in.max_micro_batch = (run.data->sequences + in.replicas - 1) / in.replicas;
  const DeviceOptions d = device_options_from(args);
  std::optional<long long> virtual_devices;
  if (d.virtual_devices > 0) virtual_devices = d.virtual_devices;
  in.budget = replica_budget(args.get_optional("--max-memory"), virtual_devices, o.batch.replicas, host_available);
  if (d.virtual_devices > 0 && d.virtual_device_memory > 0 && !args.has("--max-memory")) {
    in.budget.bytes = static_cast<std::int64_t>(d.virtual_device_memory);
    in.budget.source = "--virtual-device-memory budget";
  }
  if (!is_auto) {
    // Only --parallel to check: the batch is the one the flags gave.
    decide_train_layout(run.setup.config, in, nullptr, nullptr, {}, {});
    return;
  }
  const LlamaTrainModel model(run.setup.config);
  ThreadPool pool(in.threads);
  const std::unique_ptr<TrainOps> ops = make_cpu_train_ops(pool, o.precision);
  const TrainData& data = *run.data;
  const TrialTokens tokens = [&data](std::int64_t m) {
    std::vector<std::int32_t> ids;
    step_sequences(data, 0, m, 0, 1, ids);  // the first m sequences, wrapping around
    return ids;
  };
  const TrainLayoutChoice c = decide_train_layout(run.setup.config, in, &model, ops.get(), run.params, tokens);
  o.batch = c.batch;
  run.setup.run_fingerprint = run_fingerprint(o, data);
}

}  // namespace plexus::cli
