// Prediction error of the cost model on this machine, each prediction beside a run measured in
// the same process moments apart:
// 1. The README's cases, repeated (medians reported, with the load average): `plexus plan MODEL`
//    (no device flags: the host; its decode figure at a sequence's start) against `plexus generate
//    MODEL` (a 6-token prompt, 64 new tokens, one sequence), and `plexus bench CONFIG` (configs/demo.yaml: 4 virtual devices, stages, 8
//    requests in batches of 4) against what that bench measures (batch × 1000 / TPOT p50, as its
//    report compares). Each is predicted twice: from a calibration made in the same repeat (what
//    `plexus calibrate` measures) and without a calibration file (the brief measurement `plan`
//    and `bench` then make).
// 2. The grid: plans on 1, 2 and 4 virtual devices, weights resident or partly offloaded to cpu
//    memory, batch 1 and 8 — each planned, predicted and run through open_model_run, from the
//    calibration file in use (run `plexus calibrate` first).
// Usage: predict_bench MODEL_DIR [--repeats N] [--config FILE] [--no-grid] [--tokens N] [--prompt N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "bench/bench_runner.h"
#include "bench/config_loader.h"
#include "core/error.h"
#include "exec/calibrate.h"
#include "exec/model_run.h"
#include "exec/plan_facts.h"
#include "planner/sized_tree.h"
#include "runtime/generate.h"

namespace plexus {
namespace {

struct Args {
  std::string model;
  std::string config = "configs/demo.yaml";
  int repeats = 5;
  bool grid = true;
  int new_tokens = 48, prompt_tokens = 16;  // the grid's requests
};

std::optional<Args> parse_args(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: predict_bench MODEL_DIR [--repeats N] [--config FILE] [--no-grid] [--tokens N] [--prompt N]\n");
    return std::nullopt;
  }
  Args a;
  a.model = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--no-grid") {
      a.grid = false;
      continue;
    }
    if (i + 1 >= argc) throw InputError(flag + " needs a value");
    const std::string v = argv[++i];
    if (flag == "--repeats") a.repeats = std::max(1, std::atoi(v.c_str()));
    else if (flag == "--config") a.config = v;
    else if (flag == "--tokens") a.new_tokens = std::atoi(v.c_str());
    else if (flag == "--prompt") a.prompt_tokens = std::atoi(v.c_str());
    else throw InputError("unknown option " + flag);
  }
  return a;
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

// Where predictions take their facts from: $XDG_CACHE_HOME/plexus/calibration.json or none.
void use_cache_dir(const std::string& dir) { ::setenv("XDG_CACHE_HOME", dir.c_str(), 1); }

// `plexus plan MODEL` as printed (no device flags, every default): one sequence's decode at its
// start, the figure a short `generate` compares with (its other figure is 1024 tokens into a
// sequence, where the KV cache read per token adds about a fifth on models/small).
double plan_prediction(const std::string& model) {
  const ModuleTree tree = load_module_tree(model);
  const PlanOptions o = plan_options_from(PlanInputs{}, tree.config());
  const Plan plan = plan_model(tree, o.request);
  return predict_for_plan(tree, plan, o.request.budgets, 1, std::nullopt).predicted.decode_tokens_per_s_1_at_start;
}

// `plexus generate MODEL --prompt "The capital of France is" --max-tokens 64`: a 6-token prompt
// (twice the README's tokens: a steadier figure on a shared machine, still at a sequence's start).
double generate_measured(const std::string& model) {
  const std::unique_ptr<ModelRun> run = open_model_run(RunInputs{}, model);
  const std::vector<std::vector<std::int32_t>> prompt = {{1, 415, 5565, 302, 4843, 349}};
  GenerateOptions g;
  g.max_tokens = 4;
  generate_batch(*run->runner, prompt, g);  // warm-up
  g.max_tokens = 64;
  return generate_batch(*run->runner, prompt, g).decode_tokens_per_s;
}

// The q-quantile of `v` (linear between neighbours).
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const double at = q * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

// One `plexus bench` run of `config`: (predicted, measured) decode tokens/s of the batch.
std::pair<double, double> bench_run(const std::string& config, const std::string& model) {
  const bench::LoadedConfig loaded = bench::load_bench_config(config, {"model=" + model});
  const Json r = bench::run_point(loaded.points.front(), config, [](const std::string&) {});
  const double batch = r["config"]["scenario"]["batch_size"].get<double>();
  const double predicted = r["predicted"]["decode_tokens_per_s"]["batch_" + std::to_string(static_cast<long long>(batch))].get<double>();
  return {predicted, batch * 1000.0 / r["latency"]["tpot_ms"]["p50"].get<double>()};
}

void readme_cases(const Args& a) {
  namespace fs = std::filesystem;
  const fs::path scratch = fs::temp_directory_path() / ("predict_bench." + std::to_string(::getpid()));
  const std::string calibrated = (scratch / "calibrated").string(), none = (scratch / "none").string();
  fs::create_directories(none);
  const char* before = std::getenv("XDG_CACHE_HOME");
  const std::string restore = before ? before : "";
  std::printf("README cases: predicted beside measured decode tokens/s; each repeat calibrates first (as `plexus calibrate`),\n"
              "then predicts from that calibration and without a calibration file (a brief measurement); ratio = predicted / measured\n\n");
  std::printf("%-6s %-5s %-44s %-11s %10s %10s %7s\n", "repeat", "load", "case", "facts", "predicted", "measured", "ratio");
  std::map<std::string, std::vector<double>> ratios;
  double load_min = 1e9, load_max = 0;
  for (int rep = 1; rep <= a.repeats; ++rep) {
    const double load = load_average();
    load_min = std::min(load_min, load), load_max = std::max(load_max, load);
    CalibrateOptions co;
    co.scratch_dir = calibrated;
    save_calibration(calibrate_host(co), calibrated + "/plexus/calibration.json");
    auto row = [&](const std::string& name, const std::string& facts, double predicted, double measured) {
      const double ratio = predicted / measured;
      ratios[name + "|" + facts].push_back(ratio);
      std::printf("%-6d %-5.1f %-44s %-11s %10.1f %10.1f %7.2f\n", rep, load, name.c_str(), facts.c_str(), predicted, measured, ratio);
      std::fflush(stdout);
    };
    const std::string plan_case = "plan " + a.model + " (start) vs generate 64";
    const std::string bench_case = "bench " + a.config + " (its batch)";
    for (const std::string& facts : {std::string("calibrated"), std::string("brief")}) {
      use_cache_dir(facts == "calibrated" ? calibrated : none);
      const double predicted = plan_prediction(a.model);
      row(plan_case, facts, predicted, generate_measured(a.model));
      const auto [bp, bm] = bench_run(a.config, a.model);
      row(bench_case, facts, bp, bm);
    }
  }
  if (before) use_cache_dir(restore);
  else ::unsetenv("XDG_CACHE_HOME");
  fs::remove_all(scratch);
  std::printf("\nratio over %d repeat(s), load average %.1f-%.1f on %u hardware threads: median (quartiles), target 0.75-1.25\n",
              a.repeats, load_min, load_max, std::thread::hardware_concurrency());
  for (const auto& [key, v] : ratios) {
    const double m = quantile(v, 0.5);
    std::printf("  %-58s %5.2f (%4.2f-%4.2f)  %s\n", key.c_str(), m, quantile(v, 0.25), quantile(v, 0.75),
                std::abs(m - 1) <= 0.25 ? "within 25%" : "OUTSIDE 25%");
  }
  std::printf("\n");
}

struct Case {
  int devices;
  bool offload;
  int batch;
};

void grid(const Args& a) {
  const std::string& model = a.model;
  const int new_tokens = a.new_tokens, prompt_tokens = a.prompt_tokens;
  const ModuleTree tree = load_module_tree(model);
  const std::int64_t weights = SizedTree::build(tree, WeightDType::kBF16).total_bytes();
  std::printf("grid: decode tokens/s of all sequences, %d prompt + %d new tokens each; predicted by the cost model from\n"
              "the calibration in use; measured = best of two runs; ratio = predicted / measured (target: 0.80-1.20)\n\n",
              prompt_tokens, new_tokens);
  std::printf("%-9s %4s %5s %-9s %10s %10s %7s  %s\n", "weights", "devs", "batch", "strategy", "predicted", "measured", "ratio",
              "bottleneck");
  double worst = 0, sum_abs = 0;
  int n = 0;
  std::string facts;
  for (const bool offload : {false, true}) {
    for (const int devs : {1, 2, 4}) {
      for (const int batch : {1, 8}) {
        RunInputs in;
        in.engine.threads = 0;
        in.engine.max_batch_tokens = 64;
        PlanInputs& p = in.plan;
        p.context = prompt_tokens + new_tokens;
        p.batch = batch;
        // Resident: room for everything (stages spreads the layers). Offloaded: accelerate's
        // auto with max_memory for about half the weights, the rest in cpu memory.
        p.strategy = offload ? "auto" : "stages";
        const std::int64_t each = offload ? weights / 2 / devs : 2 * weights;
        std::string mem;
        for (int d = 0; d < devs; ++d) mem += (d ? "," : "") + std::to_string(d) + "=" + std::to_string(each);
        p.max_memory = mem + ",cpu=" + std::to_string(4 * weights);
        std::unique_ptr<ModelRun> run = open_model_run(in, model);
        std::vector<std::vector<std::int32_t>> prompts;
        for (int s = 0; s < batch; ++s) {
          std::vector<std::int32_t> q;
          for (int t = 0; t < prompt_tokens; ++t) q.push_back(static_cast<std::int32_t>((s * 977 + t * 131 + 7) % tree.config().vocab_size));
          prompts.push_back(q);
        }
        GenerateOptions g;
        g.max_tokens = new_tokens;
        generate_batch(*run->runner, std::vector<std::vector<std::int32_t>>(prompts.begin(), prompts.begin() + 1),
                       [&] { GenerateOptions w = g; w.max_tokens = 4; return w; }());  // warm-up
        // Best of two runs: the machine may be shared, and the model predicts an unloaded one.
        BatchGenerateResult r = generate_batch(*run->runner, prompts, g);
        const BatchGenerateResult again = generate_batch(*run->runner, prompts, g);
        if (again.decode_tokens_per_s > r.decode_tokens_per_s) r = again;
        const Json pred = predict_run(*run, model, prompt_tokens, prompt_tokens + new_tokens / 2.0, batch);
        const double predicted = pred["decode_tokens_per_s"]["batch_" + std::to_string(batch)].get<double>();
        const double ratio = predicted / r.decode_tokens_per_s;
        facts = pred["facts_source"].get<std::string>();
        worst = std::max(worst, std::abs(ratio - 1));
        sum_abs += std::abs(ratio - 1);
        ++n;
        std::printf("%-9s %4d %5d %-9s %10.1f %10.1f %7.2f  device %s, %s\n", offload ? "half-cpu" : "resident", devs, batch,
                    p.strategy.c_str(), predicted, r.decode_tokens_per_s, ratio, pred["bottleneck"]["device"].dump().c_str(),
                    pred["bottleneck"]["resource"].get<std::string>().c_str());
        std::fflush(stdout);
      }
    }
  }
  std::printf("\ndecode prediction error: mean |ratio - 1| = %.1f%%, worst %.1f%% over %d plans (facts: %s)\n",
              100 * sum_abs / n, 100 * worst, n, facts.c_str());
}

int main_impl(int argc, char** argv) {
  const std::optional<Args> args = parse_args(argc, argv);
  if (!args) return 2;
  readme_cases(*args);
  if (args->grid) grid(*args);
  return 0;
}

}  // namespace
}  // namespace plexus

int main(int argc, char** argv) {
  try {
    return plexus::main_impl(argc, argv);
  } catch (const plexus::Error& e) {
    std::fprintf(stderr, "predict_bench: %s\n", e.what());
    return static_cast<int>(e.code());
  }
}
