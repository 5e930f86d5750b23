// The per-rank training loop: data slices, steps, skipped-step accounting, checkpoints, output.
#include "train/trainer.h"

#include <csignal>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "train/train_output.h"

namespace plexus {

TrainFaults parse_train_faults(const std::string& spec) {
  TrainFaults f;
  std::size_t begin = 0;
  while (begin < spec.size()) {
    std::size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(begin, end - begin);
    begin = end + 1;
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const auto number = [&](const std::string& text) -> std::int64_t {
      if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 12) {
        throw InputError("PLEXUS_TRAIN_FAIL: '" + item + "' needs a step number (from 1)");
      }
      return std::stoll(text);
    };
    if (key == "kill_at_step") {
      f.kill_at_step = number(value);
    } else if (key == "sigint_at_step") {
      f.sigint_at_step = number(value);
    } else if (key == "kill_in_checkpoint") {
      f.kill_in_checkpoint = number(value);
    } else if (key == "nan_steps") {
      const std::size_t dash = value.find('-');
      f.nan_first = number(value.substr(0, dash));
      f.nan_last = dash == std::string::npos ? f.nan_first : number(value.substr(dash + 1));
    } else {
      throw InputError("PLEXUS_TRAIN_FAIL: unknown item '" + item +
                       "' (known: kill_at_step=N, kill_in_checkpoint=N, nan_steps=A-B, sigint_at_step=N)");
    }
  }
  return f;
}

namespace {

[[noreturn]] void kill_self() {
  std::raise(SIGKILL);
  std::abort();
}

}  // namespace

TrainReport train_rank(const TrainSetup& setup, TrainReplica& replica, Collective& comm,
                       const std::function<void(const StepRecord&)>& on_step) {
  const TrainOptions& o = setup.options;
  const TrainData& data = *setup.data;
  const bool root = comm.rank() == 0;
  TrainReport report;
  TrainProgress p = setup.start;
  RankTotals mine;
  std::vector<std::int32_t> tokens;
  const Json config_json = root ? trained_config_json(setup.model_dir, setup.config) : Json();
  std::int64_t checkpointed = o.resume ? setup.start.step : -1;  // a resumed run starts from its checkpoint

  const auto checkpoint = [&] {
    OptimizerState state = replica.optimizer_state();  // collective under ZeRO-1
    if (root) {
      const std::int64_t step = p.step;
      const auto hook = [&setup, step] {
        if (setup.faults.kill_in_checkpoint == step) kill_self();
      };
      write_checkpoint(o.out, p, setup.model_fingerprint, setup.run_fingerprint, setup.layout, replica.params(), state,
                       config_json, setup.model_dir, hook);
      report.last_checkpoint = checkpoint_dir(o.out, p.step);
    }
    checkpointed = p.step;
    comm.barrier();
  };

  while (p.step < o.steps) {
    const std::int64_t number = p.step + 1;
    step_sequences(data, p.step, o.batch.global_batch, comm.rank(), comm.size(), tokens);
    const bool poison = setup.faults.nan_first > 0 && number >= setup.faults.nan_first && number <= setup.faults.nan_last;
    std::vector<float> saved;
    if (poison) {  // test hook: a NaN in the final norm's weight makes every gradient non-finite
      saved.assign(replica.params().begin(), replica.params().begin() + setup.layout.total());
      std::vector<float> bad = saved;
      bad[static_cast<std::size_t>(setup.layout.at("model.norm.weight").offset)] = std::numeric_limits<float>::quiet_NaN();
      replica.restore(bad, replica.optimizer_state());
    }
    const StepResult r = replica.step(tokens, data.T);
    if (poison) replica.restore(saved, replica.optimizer_state());
    ++p.step;
    if (r.skipped) {
      ++p.skipped_total;
      ++p.skipped_consecutive;
    } else {
      p.skipped_consecutive = 0;
    }
    mine.step_seconds += r.seconds;
    mine.compute_seconds += r.compute_seconds;
    mine.comm_seconds += r.comm_seconds;
    StepRecord rec;
    rec.step = number;
    rec.loss = r.loss;
    rec.grad_norm = r.grad_norm;
    rec.lr = o.optimizer.lr;
    rec.seconds = r.seconds;
    rec.tokens_per_s = r.seconds > 0 ? static_cast<double>(r.tokens) / r.seconds : 0;
    rec.skipped = r.skipped;
    report.steps.push_back(rec);
    if (root && on_step) on_step(rec);
    if (root && setup.faults.kill_at_step == number) kill_self();
    if (root && setup.faults.sigint_at_step == number) std::raise(SIGINT);
    if (o.max_skipped > 0 && p.skipped_consecutive >= o.max_skipped) {
      report.stopped_for_skips = true;
      break;
    }
    if (setup.stop_requested) {
      std::uint8_t stop = root && setup.stop_requested() ? 1 : 0;
      if (comm.size() > 1) comm.broadcast(&stop, 1, 0);  // every rank stops at the same step
      if (stop != 0 && p.step < o.steps) {
        report.interrupted = true;
        break;
      }
    }
    if (o.checkpoint_every > 0 && p.step % o.checkpoint_every == 0 && p.step < o.steps) checkpoint();
  }
  if (checkpointed != p.step) checkpoint();
  if (!report.stopped_for_skips && !report.interrupted && root) {
    write_trained_model(o.out, setup.model_dir, setup.config, setup.layout, replica.params());
  }
  report.end = p;

  // Every rank's totals to rank 0 (the all-gather itself is not counted).
  const CommStats cs = replica.comm_stats();
  mine.comm_mib = static_cast<double>(cs.bytes()) / (1024.0 * 1024.0);
  const float row[4] = {static_cast<float>(mine.step_seconds), static_cast<float>(mine.compute_seconds),
                        static_cast<float>(mine.comm_seconds), static_cast<float>(mine.comm_mib)};
  std::vector<float> all(static_cast<std::size_t>(4 * comm.size()));
  comm.all_gather(row, 4, all.data());
  for (int i = 0; i < comm.size(); ++i) {
    const float* a = all.data() + 4 * i;
    report.ranks.push_back({a[0], a[1], a[2], a[3]});
  }
  return report;
}

Json train_report_to_json(const TrainReport& report) {
  Json steps = Json::array();
  for (const StepRecord& s : report.steps) {
    const auto num = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
    steps.push_back({{"step", s.step},
                     {"loss", num(s.loss)},
                     {"grad_norm", num(s.grad_norm)},
                     {"lr", s.lr},
                     {"tokens_per_s", s.tokens_per_s},
                     {"skipped", s.skipped}});
  }
  Json ranks = Json::array();
  for (std::size_t r = 0; r < report.ranks.size(); ++r) {
    const RankTotals& t = report.ranks[r];
    ranks.push_back({{"rank", r},
                     {"step_s", t.step_seconds},
                     {"compute_s", t.compute_seconds},
                     {"comm_s", t.comm_seconds},
                     {"comm_mib", t.comm_mib}});
  }
  return {{"steps", steps},
          {"skipped_steps", report.end.skipped_total},
          {"stopped_for_skips", report.stopped_for_skips},
          {"interrupted", report.interrupted},
          {"ranks", ranks}};
}

}  // namespace plexus
