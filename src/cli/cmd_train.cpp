// `plexus train`: data-parallel fine-tuning of a Llama-family, Gemma or Phi-3 model on CPU devices
// (in-process replicas on threads or virtual devices, or one replica per rank under mpirun), with
// checkpoints, --resume, skipped non-finite steps and the trained model written to --out.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "backend/device_options.h"
#include "cli/commands.h"
#include "cli/interrupt_guard.h"
#include "cli/model_argument.h"
#include "cli/train_auto.h"
#include "comm/mpi_collective.h"
#include "comm/mpi_world.h"
#include "core/args.h"
#include "core/error.h"
#include "core/json.h"
#include "exec/model_run.h"
#include "monitor/monitor_session.h"
#include "planner/budgets.h"
#include "train/batch_choice.h"
#include "train/in_process_replicas.h"
#include "train/process_rss.h"
#include "train/training_memory.h"
#include "train/train_run.h"

namespace plexus::cli {

namespace {

constexpr long long kDefaultMaxSkipped = 10;

// Every flag of the command, declared in one place (train-memory's flags join here).
void declare_train_flags(Args& args) {
  add_model_argument(args, "MODEL", "model directory (config.json + safetensors, f32/bf16/f16; Llama, Mistral, Qwen2/3, Gemma 2/3, Phi-3)");
  args.option("--data", "FILE", "training data: one {\"ids\": [token ids]} per line (docs/train.md)")
      .option("--out", "DIR", "where checkpoints (DIR/checkpoints) and the trained model (config.json, model.safetensors, tokenizer) go")
      .option("--steps", "N", "optimizer steps to run (in total, counting those before a --resume)")
      .option("--seq-len", "T", "cut every sequence to its first T tokens (default: the data's length, the same on every line)")
      .option("--lr", "X", "AdamW learning rate (constant), 0..1000", "1e-3")
      .option("--beta1", "X", "AdamW beta1, at least 0 and less than 1", "0.9")
      .option("--beta2", "X", "AdamW beta2, at least 0 and less than 1", "0.999")
      .option("--eps", "X", "AdamW eps, more than 0 (and at least 1e-45, f32's smallest) and at most 1", "1e-8")
      .option("--weight-decay", "X", "AdamW decoupled weight decay, 0..1000", "0")
      .option("--max-grad-norm", "X", "clip the gradients' global 2-norm to X as torch's clip_grad_norm_ (0: no clipping)", "1.0")
      .option("--replicas", "R", "data-parallel replicas in this process, one thread share each (default 1, or --virtual-devices)")
      .option("--threads", "N", "CPU threads of this process, split over its replicas (0: one per hardware thread)", "0")
      .option("--devices", "LIST", "accelerators to train on: refused for now (exit 2), training runs on CPU devices")
      .option("--max-memory", "LIST", "memory budgets as accelerate writes them, e.g. \"0=2GiB,1=2GiB\" for virtual devices, \"cpu=8GiB\"")
      .option("--zero", "STAGE", "1: shard the AdamW state across replicas (ZeRO stage 1); 0: every replica holds all of it", "0")
      .option("--checkpoint-every", "K", "write a checkpoint every K steps (0: only at the end); the newest 2 are kept", "0")
      .flag("--checkpoint-activations", "keep only each layer's input in the forward and recompute the layer's forward in the backward: "
            "less memory, up to a third more compute, the same results bit for bit (--micro-batch auto turns it on when it lets a larger micro-batch fit)")
      .flag("--resume", "continue from the newest checkpoint in --out (the same options; ends bit-identical to an uninterrupted run)")
      .option("--max-skipped", "K", "end the run (exit 1, after a checkpoint) when K steps in a row were skipped: a non-finite gradient norm or update (0: never)",
              std::to_string(kDefaultMaxSkipped))
      .option("--precision", "P", "f32, or bf16: torch.autocast(bfloat16)'s mixed precision (the matrix products' inputs rounded to bf16, "
              "summed in f32; f32 weights, gradients, norms, softmax, loss and AdamW; docs/train.md)", "f32")
      .flag("--json", "print {\"steps\": [...], \"skipped_steps\", \"monitor\", ...} on stdout");
  add_device_options(args);
  add_train_auto_options(args);  // --global-batch, --micro-batch, --parallel (cli/train_auto)
  args.epilog(
      "Step s (from 0) trains on data lines s·G … s·G+G−1 in file order, wrapping around; replica r of R takes\n"
      "the r-th G/R of them. The loss is the mean next-token cross-entropy of the global batch; gradients are\n"
      "averaged over the replicas, clipped by their global norm and applied with AdamW, all in f32. A step whose\n"
      "gradient norm is not finite, or whose update would make a weight non-finite, is skipped (weights\n"
      "unchanged) and counted. Training runs on CPU devices:\n"
      "--virtual-devices N runs N replicas, one per virtual device. Under mpirun every rank runs one replica;\n"
      "rank 0 reads the data and writes everything. See docs/train.md.");
}

struct TrainCommand {
  TrainOptions options;
  TrainDevices devices;
  bool replicas_given = false;
};

long long positive(const Args& args, const char* name, long long hi = 1LL << 40) { return args.get_int_in(name, 1, hi); }

// An AdamW beta: at least 0 and less than 1, as torch.optim.AdamW checks it.
double adam_beta(const Args& args, const char* name) {
  const double v = args.get_double(name);
  if (!(v >= 0 && v < 1)) {
    throw InputError(std::string(name) + " must be at least 0 and less than 1 (torch.optim.AdamW's range), got " + args.get(name) +
                     ": with 1 the bias correction 1 - beta^t is 0 and step 1 makes every weight NaN");
  }
  return v;
}

// The flags as plain values, checked: InputError naming the flag. `mpi_ranks` > 0: the ranks of
// an mpirun job (one replica each).
TrainCommand train_command_from(const Args& args, int mpi_ranks) {
  TrainCommand c;
  TrainOptions& o = c.options;
  o.model = model_argument(args, ModelNeeds::kWeights);
  for (const char* required : {"--data", "--out", "--steps"}) {
    if (!args.has(required)) throw InputError(std::string("give ") + required + " (plexus train --help lists the flags)");
  }
  o.data = args.get("--data");
  o.out = args.get("--out");
  o.steps = positive(args, "--steps");
  o.seq_len = args.has("--seq-len") ? args.get_int_in("--seq-len", 2, 1 << 24) : 0;
  // torch.optim.AdamW's own checks (0 <= lr, 0 <= beta < 1, 0 <= weight_decay; non-finite values
  // refused) with a stricter eps: with eps 0 (or one that rounds to 0 in f32) an element whose
  // gradient and moments are 0 divides 0 by 0, and step 1 made every such weight NaN; beta 1
  // divides by 1 - 1^t = 0 in the bias corrections.
  o.optimizer.lr = args.get_double_in("--lr", 0, 1e3);
  o.optimizer.beta1 = adam_beta(args, "--beta1");
  o.optimizer.beta2 = adam_beta(args, "--beta2");
  o.optimizer.eps = args.get_double("--eps");
  if (!(static_cast<float>(o.optimizer.eps) > 0 && o.optimizer.eps <= 1)) {
    throw InputError("--eps must be more than 0 and at most 1, got " + args.get("--eps") +
                     (o.optimizer.eps > 0 ? " (it rounds to 0 in f32, the precision AdamW runs in)" : "") +
                     ": with eps 0 a weight whose gradient and moments are 0 becomes NaN (0 / 0); the usual value is 1e-8");
  }
  o.optimizer.weight_decay = args.get_double_in("--weight-decay", 0, 1e3);
  o.optimizer.max_grad_norm = args.get_double_in("--max-grad-norm", 0, 1e30);
  o.zero1 = args.get_choice("--zero", {"0", "1"}) == "1";
  o.checkpoint_every = args.get_int_in("--checkpoint-every", 0, 1LL << 40);
  o.resume = args.get_flag("--resume");
  o.max_skipped = args.get_int_in("--max-skipped", 0, 1LL << 40);
  o.json = args.get_flag("--json");
  o.precision = args.get_choice("--precision", {"f32", "bf16"}) == "bf16" ? TrainPrecision::kBf16 : TrainPrecision::kF32;

  const DeviceOptions d = device_options_from(args);
  if (d.virtual_gpus > 0) {
    throw InputError("--virtual-gpus / PLEXUS_VIRTUAL_GPUS: training runs on CPU devices; the GPU backward is not built yet "
                     "(use --virtual-devices N or --replicas R)");
  }
  if (auto list = args.get_optional("--devices")) {
    throw InputError("--devices " + *list + ": training runs on CPU devices; the GPU backward is not built yet "
                     "(use --virtual-devices N or --replicas R)");
  }
  c.devices.virtual_devices = d.virtual_devices;
  c.devices.threads = static_cast<int>(args.get_int_in("--threads", 0, 1024));
  if (auto mm = args.get_optional("--max-memory")) {
    const Budgets budgets = parse_max_memory(*mm);
    for (const DeviceId& id : budgets.accelerators()) {
      if (d.virtual_devices == 0) {
        throw InputError("--max-memory " + *mm + " budgets accelerators: training runs on CPU devices; the GPU backward is "
                         "not built yet (add --virtual-devices N to budget virtual CPU devices, or give cpu=SIZE)");
      }
      if (id.ordinal() >= d.virtual_devices) {
        throw InputError("--max-memory " + *mm + " budgets device " + std::to_string(id.ordinal()) + " but --virtual-devices " +
                         std::to_string(d.virtual_devices) + " makes devices 0.." + std::to_string(d.virtual_devices - 1));
      }
    }
    c.devices.max_memory = *mm;
  }

  int replicas = 1;
  c.replicas_given = args.given("--replicas");
  if (mpi_ranks > 0) {
    if (c.replicas_given) throw InputError("--replicas: under mpirun every rank runs one replica; leave --replicas out");
    if (d.virtual_devices > 0) {
      throw InputError("--virtual-devices: under mpirun every rank runs one replica on its CPU; leave --virtual-devices out");
    }
    replicas = mpi_ranks;
  } else {
    if (c.replicas_given) replicas = static_cast<int>(positive(args, "--replicas", 1024));
    if (d.virtual_devices > 0) {
      if (c.replicas_given && replicas != d.virtual_devices) {
        throw InputError("--replicas " + std::to_string(replicas) + " and --virtual-devices " + std::to_string(d.virtual_devices) +
                         ": --virtual-devices N runs one replica per virtual device; give one of them");
      }
      replicas = d.virtual_devices;
    }
  }
  const TrainBatchFlags b = train_batch_flags(args);  // auto: chosen after loading (cli/train_auto); 1 per replica till then
  if (b.micro_auto && mpi_ranks > 0) throw InputError("--micro-batch auto is not built for mpirun yet: give --global-batch G");
  o.batch = fixed_batch_layout(b.micro_auto ? replicas : b.global > 0 ? b.global : b.micro * replicas, replicas,
                               b.micro_auto ? 0 : b.micro, mpi_ranks > 0 ? "mpirun ranks" : "replicas");
  o.batch.checkpoint_activations = args.get_flag("--checkpoint-activations");
  return c;
}

// Per-step lines on stderr (rank 0): a progress line on a terminal, plain lines otherwise.
class StepPrinter {
 public:
  explicit StepPrinter(std::int64_t steps) : steps_(steps), tty_(::isatty(STDERR_FILENO) != 0) {}
  ~StepPrinter() { finish(); }
  void operator()(const StepRecord& s) {
    char line[256];
    if (s.skipped) {
      ++in_a_row_;
      std::snprintf(line, sizeof line, "step %lld/%lld skipped: gradient norm %g is not finite (weights unchanged, %lld in a row)",
                    static_cast<long long>(s.step), static_cast<long long>(steps_), s.grad_norm, in_a_row_);
    } else {
      in_a_row_ = 0;
      std::snprintf(line, sizeof line, "step %lld/%lld  loss %.6f  grad_norm %.4f  lr %.3g  %.0f tok/s",
                    static_cast<long long>(s.step), static_cast<long long>(steps_), s.loss, s.grad_norm, s.lr, s.tokens_per_s);
    }
    if (tty_ && !s.skipped) {
      std::fprintf(stderr, "\r\033[K%s", line);
      open_ = true;
    } else {
      finish();
      std::fprintf(stderr, "%s\n", line);
    }
    std::fflush(stderr);
  }
  void finish() {
    if (open_) std::fprintf(stderr, "\n");
    open_ = false;
  }

 private:
  std::int64_t steps_;
  bool tty_, open_ = false;
  long long in_a_row_ = 0;
};

// The process's resident memory over the run, measured beside its estimate: the high-water mark
// is reset when the run starts (after the binary's own start-up, whose libraries may have
// touched more), so the peak counts what the run itself holds.
struct MemoryWatch {
  std::int64_t start_rss = -1;      // RSS when the run began; -1 when /proc cannot say
  std::int64_t earlier_peak = -1;   // the peak before --micro-batch auto's trial step reset the mark
  void start() { start_rss = reset_peak_rss() ? current_rss_bytes() : -1; }
  void before_trial() { earlier_peak = peak_rss_bytes(); }
  std::int64_t measured_peak() const {
    return start_rss < 0 ? -1 : std::max(earlier_peak, peak_rss_bytes()) - start_rss;
  }
};

// train/training_memory's estimate of this process's peak: `in_process_replicas` replicas on
// `threads` threads in all.
std::int64_t estimated_peak(const TrainCommand& c, const PreparedRun& run, int in_process_replicas, int threads) {
  const BatchLayout& b = c.options.batch;
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  TrainingShape shape{b.micro_batch, run.data->T, b.replicas, c.options.zero1,
                      replica_threads(threads > 0 ? threads : hw, in_process_replicas, 0), b.checkpoint_activations};
  std::int64_t checkpoint_bytes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(run.setup.model_dir, ec)) {
    if (e.path().extension() == ".safetensors") checkpoint_bytes += static_cast<std::int64_t>(e.file_size(ec));
  }
  const auto data_bytes = static_cast<std::int64_t>(run.data->tokens.size() * sizeof(std::int32_t));
  return process_memory(run.setup.config, shape, in_process_replicas, checkpoint_bytes, data_bytes,
                        !run.resumed_from.empty())
      .total();
}

// Rank 0 (or the single process): the output of a finished run; exit 1 when --max-skipped ended it.
int report(const TrainCommand& c, const PreparedRun& run, const TrainReport& r, MonitorSession& monitor, double seconds,
           const MemoryWatch& memory, std::int64_t estimate) {
  const TrainOptions& o = c.options;
  const MonitorSummary summary = monitor.stop();
  double tokens = 0, step_seconds = 0;
  for (const StepRecord& s : r.steps) {
    tokens += s.tokens_per_s * s.seconds;
    step_seconds += s.seconds;
  }
  std::fprintf(stderr,
               "trained steps %lld..%lld (%lld skipped in all): %.1f s of steps, %.0f tok/s; %.1f s in all with "
               "checkpoints and output; %s%s\n",
               static_cast<long long>(run.setup.start.step + 1), static_cast<long long>(r.end.step),
               static_cast<long long>(r.end.skipped_total), step_seconds, step_seconds > 0 ? tokens / step_seconds : 0.0,
               seconds, o.batch.why.c_str(), o.batch.checkpoint_activations ? "; activations checkpointed" : "");
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const RankTotals& t = r.ranks[i];
    std::fprintf(stderr, "  rank %zu: busy %.2f s, communication %.2f s (%.1f MiB)\n", i, t.compute_seconds, t.comm_seconds,
                 t.comm_mib);
  }
  if (summary.aggregate.total_energy_j) std::fprintf(stderr, "  energy %.1f J\n", *summary.aggregate.total_energy_j);
  const std::int64_t measured = memory.measured_peak();
  if (measured > 0) {
    std::fprintf(stderr, "  memory: peak %.1f MiB above the start, estimated %.1f MiB (plexus estimate --training)\n",
                 static_cast<double>(measured) / (1 << 20), static_cast<double>(estimate) / (1 << 20));
  }
  if (!r.stopped_for_skips && !r.interrupted) std::fprintf(stderr, "model written to %s; checkpoint %s\n", o.out.c_str(), r.last_checkpoint.c_str());
  if (o.json) {
    Json j = train_report_to_json(r);
    j["monitor"] = to_json(summary);
    j["precision"] = precision_name(o.precision);
    j["batch"] = {{"why", o.batch.why},
                  {"global", o.batch.global_batch},
                  {"micro_batch", o.batch.micro_batch},
                  {"accumulation", o.batch.accumulation},
                  {"replicas", o.batch.replicas},
                  {"seq_len", run.data->T}};
    j["checkpoint_activations"] = o.batch.checkpoint_activations;
    j["memory"] = {{"estimated_peak_bytes", estimate},
                   {"measured_peak_bytes", measured > 0 ? Json(measured) : Json(nullptr)}};
    j["resumed_from"] = run.resumed_from.empty() ? Json(nullptr) : Json(run.resumed_from);
    j["checkpoint"] = r.last_checkpoint;
    j["out"] = o.out;
    j["seconds"] = seconds;
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
  }
  if (r.interrupted) {
    throw Interrupted("interrupted after step " + std::to_string(r.end.step) + "; " + r.last_checkpoint +
                      " was written (the model so far: every command loads it; the trained model goes to " + o.out +
                      " at the end): run again with --resume to continue");
  }
  if (r.stopped_for_skips) {
    throw RuntimeError("--max-skipped " + std::to_string(o.max_skipped) + ": steps " +
                       std::to_string(r.end.step - r.end.skipped_consecutive + 1) + ".." + std::to_string(r.end.step) +
                       " were all skipped (a non-finite gradient norm, or an update that would make weights non-finite); "
                       "the run stopped after writing " + r.last_checkpoint +
                       " (a model every command loads: check the data, or start a new run from it with a lower --lr or "
                       "--max-grad-norm and another --out)");
  }
  return 0;
}

std::unique_ptr<MonitorSession> start_monitor() {
  auto m = std::make_unique<MonitorSession>(make_sources(source_options_from(device_options_from_env())));
  m->start(MonitorOptions{});
  return m;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// SIGINT/SIGTERM end the run after the step in progress, with a checkpoint (exit 130).
void stop_on_signals(PreparedRun& run) { run.setup.stop_requested = [] { return InterruptGuard::requested(); }; }

int train_here(const Args& args, const TrainFaults& faults) {
  TrainCommand c = train_command_from(args, 0);
  const std::uint64_t available = host_available_memory();  // before the weights load
  MemoryWatch memory;
  memory.start();
  PreparedRun run = prepare_training(c.options, c.options.model, faults);
  memory.before_trial();
  apply_train_auto(args, run, c.devices.threads, available);  // --parallel, --micro-batch auto
  c.options.batch = run.setup.options.batch;
  const InterruptGuard guard;
  stop_on_signals(run);
  if (!run.resumed_from.empty()) std::fprintf(stderr, "resuming from %s (step %lld)\n", run.resumed_from.c_str(),
                                             static_cast<long long>(run.setup.start.step));
  const std::unique_ptr<MonitorSession> monitor = start_monitor();
  StepPrinter printer(c.options.steps);
  const double t0 = now_s();
  const TrainReport r = run_in_process(run, c.devices.threads, std::ref(printer));
  printer.finish();
  return report(c, run, r, *monitor, now_s() - t0, memory,
                estimated_peak(c, run, c.options.batch.replicas, c.devices.threads));
}

// One rank of an mpirun job: rank 0 prepares and shares; every rank runs its replica.
int train_mpi(const Args& args, const TrainFaults& faults, MpiWorld& world) {
  MpiCollective inputs;  // shares the prepared run (its traffic is not the run's)
  MpiCollective comm;
  const TrainCommand c = train_command_from(args, world.size());
  const bool root = world.rank() == 0;
  MemoryWatch memory;
  memory.start();
  PreparedRun run = root ? prepare_training(c.options, c.options.model, faults)
                         : prepare_training_rank(c.options, c.options.model, faults);
  share_prepared(run, inputs);
  const InterruptGuard guard;
  stop_on_signals(run);
  int threads = c.devices.threads;
  if (threads == 0) {
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    threads = std::max(1, hw / std::max(1, world.local_size()));
  }
  std::unique_ptr<MonitorSession> monitor;
  if (root) monitor = start_monitor();
  StepPrinter printer(c.options.steps);
  const double t0 = now_s();
  ThreadPool pool(threads);
  const std::unique_ptr<TrainOps> ops = make_cpu_train_ops(pool, c.options.precision);
  const TrainReport r = run_rank(run, comm, *ops, pool, root ? StepCallback(std::ref(printer)) : StepCallback{});
  printer.finish();
  if (!root) return 0;
  return report(c, run, r, *monitor, now_s() - t0, memory, estimated_peak(c, run, 1, threads));
}

}  // namespace

int cmd_train(int argc, char** argv) {
  Args args("train",
            "Fine-tune a Llama, Mistral, Qwen2/3, Gemma 2/3 or Phi-3 model with data-parallel replicas on\n"
            "CPU devices: mean next-token cross-entropy, clip_grad_norm_ and AdamW as PyTorch define them,\n"
            "f32 weights, gradients and optimizer state. Checkpoints are atomic; --resume ends\n"
            "bit-identical to an uninterrupted run.");
  declare_train_flags(args);
  if (!args.parse(argc, argv)) return 0;
  const char* spec = std::getenv("PLEXUS_TRAIN_FAIL");
  const TrainFaults faults = parse_train_faults(spec ? spec : "");
  if (!launched_by_mpi()) return train_here(args, faults);
  MpiWorld world(nullptr, nullptr);
  if (world.size() == 1) return train_here(args, faults);
  if (world.rank() != 0) world.silence_output();
  int code = 1;
  std::string message;
  try {
    return train_mpi(args, faults, world);
  } catch (const Error& e) {
    code = static_cast<int>(e.code());
    message = e.what();
  } catch (const std::exception& e) {
    message = e.what();
  }
  if (world.rank() != 0 && code == static_cast<int>(ExitCode::kBadInput)) {
    // Bad input is bad on every rank: rank 0 says so and ends the job.
    std::this_thread::sleep_for(std::chrono::seconds(3));
  }
  report_error("plexus train: error (rank " + std::to_string(world.rank()) + " of " + std::to_string(world.size()) + "): " + message);
  world.abort(code);
}

}  // namespace plexus::cli
