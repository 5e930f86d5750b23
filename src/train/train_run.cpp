// Preparing a training run on rank 0, sharing it with the other ranks, and running the ranks
// (in-process threads, or this process as one MPI rank).
#include "train/train_run.h"

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "model/checkpoint.h"
#include "train/in_process_replicas.h"
#include "train/llama_train.h"
#include "train/replica_trainer.h"
#include "train/train_output.h"

namespace plexus {

namespace {

// ReplicaTrainer behind the loop's interface.
class ReplicaAdapter : public TrainReplica {
 public:
  explicit ReplicaAdapter(ReplicaTrainer& t) : t_(t) {}
  StepResult step(std::span<const std::int32_t> tokens, std::int64_t T) override { return t_.step(tokens, T); }
  std::span<const float> params() const override { return t_.params(); }
  OptimizerState optimizer_state() override { return t_.optimizer_state(); }
  void restore(std::span<const float> params, const OptimizerState& state) override { t_.restore(params, state); }
  CommStats comm_stats() const override { return t_.comm_stats(); }

 private:
  ReplicaTrainer& t_;
};

void broadcast_string(Collective& comm, std::string& s) {
  std::uint64_t n = s.size();
  comm.broadcast(&n, sizeof n, 0);
  s.resize(static_cast<std::size_t>(n));
  if (n > 0) comm.broadcast(s.data(), s.size(), 0);
}

template <typename T>
void broadcast_vector(Collective& comm, std::vector<T>& v) {
  std::uint64_t n = v.size();
  comm.broadcast(&n, sizeof n, 0);
  v.resize(static_cast<std::size_t>(n));
  if (n > 0) comm.broadcast(v.data(), v.size() * sizeof(T), 0);
}

}  // namespace

PreparedRun prepare_training_rank(const TrainOptions& options, const std::string& model_dir, const TrainFaults& faults) {
  PreparedRun run;
  TrainSetup& s = run.setup;
  s.options = options;
  s.model_dir = model_dir;
  s.faults = faults;
  s.config = load_model_config(model_dir);
  LlamaTrainModel check(s.config);  // InputError for a model training does not support
  s.layout = ParamLayout::of(s.config);
  s.model_fingerprint = model_fingerprint(s.config, s.layout);
  run.data = std::make_unique<TrainData>();
  s.data = run.data.get();
  return run;
}

PreparedRun prepare_training(const TrainOptions& options, const std::string& model_dir, const TrainFaults& faults) {
  PreparedRun run = prepare_training_rank(options, model_dir, faults);
  TrainSetup& s = run.setup;
  *run.data = read_train_data(options.data, s.config.vocab_size, options.seq_len);
  s.run_fingerprint = run_fingerprint(options, *run.data);
  std::error_code ec;
  if (std::filesystem::exists(options.out, ec) && std::filesystem::equivalent(options.out, model_dir, ec)) {
    throw InputError("--out " + options.out + " is the model's own directory: the trained model would overwrite " +
                     model_dir + "; choose another --out");
  }
  check_out_dir(options.out, s.config, options.resume);
  if (options.resume) {
    LoadedCheckpoint c = load_newest_checkpoint(options.out, s.model_fingerprint, s.run_fingerprint, s.layout);
    if (c.progress.step > options.steps) {
      throw InputError("--steps " + std::to_string(options.steps) + " is below the " + std::to_string(c.progress.step) +
                       " steps " + c.path + " has done: give --steps " + std::to_string(c.progress.step) + " or more");
    }
    s.start = c.progress;
    run.params = std::move(c.params);
    run.state = std::move(c.state);
    run.resumed_from = c.path;
  } else {
    run.params.resize(static_cast<std::size_t>(s.layout.total()));
    load_params(Checkpoint(model_dir), s.layout, run.params);
  }
  ensure_writable_dir(options.out, "--out");  // the first thing written, once every input is checked
  return run;
}

void share_prepared(PreparedRun& run, Collective& comm) {
  TrainSetup& s = run.setup;
  TrainData& d = *run.data;
  std::string meta;
  if (comm.rank() == 0) {
    meta = Json{{"step", s.start.step},
                {"skipped_total", s.start.skipped_total},
                {"skipped_consecutive", s.start.skipped_consecutive},
                {"sequences", d.sequences},
                {"T", d.T},
                {"file_bytes", d.file_bytes},
                {"file_hash", d.file_hash},
                {"run", s.run_fingerprint},
                {"resumed_from", run.resumed_from},
                {"optimizer_step", run.state ? Json(run.state->step) : Json(nullptr)}}
               .dump();
  }
  broadcast_string(comm, meta);
  broadcast_vector(comm, d.tokens);
  broadcast_vector(comm, run.params);
  if (comm.rank() != 0) {
    const Json j = Json::parse(meta);
    s.start.step = j["step"].get<std::int64_t>();
    s.start.skipped_total = j["skipped_total"].get<std::int64_t>();
    s.start.skipped_consecutive = j["skipped_consecutive"].get<std::int64_t>();
    d.sequences = j["sequences"].get<std::int64_t>();
    d.T = j["T"].get<std::int64_t>();
    d.file_bytes = j["file_bytes"].get<std::uint64_t>();
    d.file_hash = j["file_hash"].get<std::string>();
    d.path = s.options.data;
    s.run_fingerprint = j["run"];
    run.resumed_from = j["resumed_from"].get<std::string>();
    if (!j["optimizer_step"].is_null()) {
      run.state.emplace();
      run.state->step = j["optimizer_step"].get<std::int64_t>();
    }
  }
  if (run.state) {
    broadcast_vector(comm, run.state->exp_avg);
    broadcast_vector(comm, run.state->exp_avg_sq);
  }
}

TrainReport run_rank(const PreparedRun& run, Collective& comm, TrainOps& ops, ThreadPool& pool, const StepCallback& on_step) {
  const TrainSetup& s = run.setup;
  const LlamaTrainModel model(s.config);
  ReplicaTrainer trainer(model, run.params, s.options.optimizer, s.options.batch, s.options.zero1, comm, ops, &pool);
  if (run.state) trainer.restore(run.params, *run.state);
  ReplicaAdapter replica(trainer);
  return train_rank(s, replica, comm, on_step);
}

TrainReport run_in_process(const PreparedRun& run, int threads, const StepCallback& on_step) {
  TrainReport report;
  const TrainPrecision precision = run.setup.options.precision;
  run_in_process_replicas(
      run.setup.options.batch.replicas, threads,
      [&](ReplicaRank& r) {
        TrainReport mine = run_rank(run, r.comm, r.ops, r.pool, r.rank == 0 ? on_step : StepCallback{});
        if (r.rank == 0) report = std::move(mine);
      },
      [precision](int, ThreadPool& pool) { return make_cpu_train_ops(pool, precision); });
  return report;
}

}  // namespace plexus
