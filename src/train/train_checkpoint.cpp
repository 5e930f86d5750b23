// Writing, pruning and loading training checkpoints (see train_checkpoint.h).
#include "train/train_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "train/train_output.h"

namespace plexus {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "step-";

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Steps of the complete checkpoints under OUT/checkpoints, ascending.
std::vector<std::int64_t> checkpoint_steps(const std::string& out) {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  const std::string dir = out + "/checkpoints";
  if (!fs::is_directory(dir, ec)) return steps;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || !e.is_directory(ec)) continue;
    const std::string digits = name.substr(std::char_traits<char>::length(kPrefix));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    if (!fs::exists(e.path() / "state.json", ec)) continue;
    steps.push_back(std::stoll(digits));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace

Json run_fingerprint(const TrainOptions& o, const TrainData& data) {
  return {{"batch_size", o.batch.global_batch},
          {"micro_batch", o.batch.micro_batch},
          {"replicas", o.batch.replicas},
          {"seq_len", data.T},
          {"lr", o.optimizer.lr},
          {"beta1", o.optimizer.beta1},
          {"beta2", o.optimizer.beta2},
          {"eps", o.optimizer.eps},
          {"weight_decay", o.optimizer.weight_decay},
          {"max_grad_norm", o.optimizer.max_grad_norm},
          {"zero", o.zero1 ? 1 : 0},
          {"precision", precision_name(o.precision)},
          {"data", {{"bytes", data.file_bytes}, {"fnv1a64", data.file_hash}, {"sequences", data.sequences}}}};
}

std::string checkpoint_dir(const std::string& out, std::int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "%s%06lld", kPrefix, static_cast<long long>(step));
  return out + "/checkpoints/" + name;
}

void write_checkpoint(const std::string& out, const TrainProgress& progress, const Json& model_fp, const Json& run_fp,
                      const ParamLayout& layout, std::span<const float> params, const OptimizerState& state,
                      const Json& config, const std::string& model_dir, const std::function<void()>& between_files) {
  const std::string root = out + "/checkpoints";
  const std::string final_dir = checkpoint_dir(out, progress.step);
  const std::string temp = root + "/.tmp-" + fs::path(final_dir).filename().string() + "-" + std::to_string(::getpid());
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw RuntimeError("cannot create " + root + ": " + ec.message());
  fs::remove_all(temp, ec);
  fs::create_directories(temp, ec);
  if (ec) throw RuntimeError("cannot create " + temp + ": " + ec.message());
  const auto step_hook = [&] {
    if (between_files) between_files();
  };
  write_params_safetensors(temp + "/model.safetensors", layout, params);
  step_hook();
  write_file_atomically(temp + "/config.json", config.dump(2) + "\n");
  copy_model_side_files(model_dir, temp);
  write_params_safetensors(temp + "/exp_avg.safetensors", layout, state.exp_avg, "exp_avg.");
  step_hook();
  write_params_safetensors(temp + "/exp_avg_sq.safetensors", layout, state.exp_avg_sq, "exp_avg_sq.");
  step_hook();
  // The first data line of the next step (step s starts at line s·B, wrapping around).
  const std::int64_t sequences = run_fp["data"]["sequences"].get<std::int64_t>();
  const std::int64_t next_sequence = sequences > 0 ? progress.step * run_fp["batch_size"].get<std::int64_t>() % sequences : 0;
  const Json j = {{"format", "plexus-train-checkpoint"},
                  {"version", 1},
                  {"step", progress.step},
                  {"optimizer_step", state.step},
                  {"skipped_total", progress.skipped_total},
                  {"skipped_consecutive", progress.skipped_consecutive},
                  {"data_position", {{"next_sequence", next_sequence}}},
                  {"options", run_fp},
                  {"model", model_fp},
                  // Training draws no random numbers (no dropout, data in file order): the state
                  // of the run is the step and the data position above.
                  {"rng", {{"kind", "none"}, {"state", nullptr}}}};
  write_file_atomically(temp + "/state.json", j.dump(2) + "\n");
  step_hook();
  fsync_path(temp);
  fs::remove_all(final_dir, ec);  // an older run's checkpoint of the same step (resumed after it)
  fs::rename(temp, final_dir, ec);
  if (ec) throw RuntimeError("cannot rename " + temp + " to " + final_dir + ": " + ec.message());
  fsync_path(root);
  const std::vector<std::int64_t> steps = checkpoint_steps(out);
  for (std::size_t i = 0; i + kCheckpointsKept < steps.size(); ++i) fs::remove_all(checkpoint_dir(out, steps[i]), ec);
  // Temporary directories of runs killed while writing.
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    if (e.path().filename().string().rfind(".tmp-", 0) == 0) fs::remove_all(e.path(), ec);
  }
}

LoadedCheckpoint load_newest_checkpoint(const std::string& out, const Json& model_fp, const Json& run_fp,
                                        const ParamLayout& layout) {
  const std::vector<std::int64_t> steps = checkpoint_steps(out);
  if (steps.empty()) {
    throw InputError("--resume: no checkpoint in " + out + "/checkpoints: run without --resume to start training");
  }
  LoadedCheckpoint c;
  c.path = checkpoint_dir(out, steps.back());
  const Json j = read_json_file(c.path + "/state.json");
  const std::string where = c.path + "/state.json";
  if (!j.contains("model") || j["model"] != model_fp) {
    std::string why = "no model fingerprint";
    if (j.contains("model") && j["model"].is_object()) {
      why = "its parameters differ";
      for (auto it = model_fp.begin(); it != model_fp.end(); ++it) {
        if (it.key() != "parameters" && j["model"].value(it.key(), Json()) != it.value()) {
          why = it.key() + " " + j["model"].value(it.key(), Json()).dump() + " instead of " + it.value().dump();
          break;
        }
      }
    }
    throw InputError("--resume: " + c.path + " is a checkpoint of another model (" + why +
                     "): choose the --out of this model's run, or another --out");
  }
  Json have = j.value("options", Json::object());
  if (!have.contains("precision")) have["precision"] = precision_name(TrainPrecision::kF32);  // written before --precision
  for (auto it = run_fp.begin(); it != run_fp.end(); ++it) {
    if (!have.contains(it.key()) || have[it.key()] != it.value()) {
      const std::string was = have.contains(it.key()) ? have[it.key()].dump() : "absent";
      std::string flag = it.key() == "data" ? "--data (its bytes)" : it.key() == "batch_size" ? "--global-batch" : "--" + it.key();
      std::replace(flag.begin(), flag.end(), '_', '-');  // micro_batch: --micro-batch
      throw InputError("--resume: " + c.path + " was written with " + it.key() + " " + was + ", this run has " +
                       it.value().dump() + ": resume with the same " + flag + " (the results depend on it)");
    }
  }
  c.progress.step = json_int(j, "step", where);
  c.progress.skipped_total = json_int_or(j, "skipped_total", 0, where);
  c.progress.skipped_consecutive = json_int_or(j, "skipped_consecutive", 0, where);
  const auto n = static_cast<std::size_t>(layout.total());
  c.params.resize(n);
  c.state.exp_avg.resize(n);
  c.state.exp_avg_sq.resize(n);
  c.state.step = json_int(j, "optimizer_step", where);
  read_params_safetensors(c.path + "/model.safetensors", layout, c.params);
  read_params_safetensors(c.path + "/exp_avg.safetensors", layout, c.state.exp_avg, "exp_avg.");
  read_params_safetensors(c.path + "/exp_avg_sq.safetensors", layout, c.state.exp_avg_sq, "exp_avg_sq.");
  return c;
}

}  // namespace plexus
