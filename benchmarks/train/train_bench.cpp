// Training throughput: tokens/s of full training steps (forward, backward, clipping, AdamW) of
// one replica on this CPU, and the fraction of the fp32 FMA peak measured in the same run
// (benchmarks/engine/ceilings: fma_peak), counting 6 FLOP per parameter per token. Default shape:
// make-model's `small` preset with SmolLM-135M's vocabulary (134.5M parameters) at sequence length 256. --profile: seconds per
// TrainOps operation (which kernel dominates).
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "../engine/ceilings.h"
#include "comm/in_process_group.h"
#include "core/args.h"
#include "core/error.h"
#include "core/json.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "timing_train_ops.h"
#include "train/cpu_train_ops.h"
#include "train/replica_trainer.h"

using namespace plexus;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Weights as make-model draws them (normal, std 0.02; norm weights 1), from a fixed seed.
std::vector<float> random_params(const ModelConfig& c, const ParamLayout& layout) {
  std::vector<float> p(static_cast<std::size_t>(layout.total()), 0.0f);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (const ParamSlot& s : layout.slots()) {
    const bool norm = s.shape.size() == 1 && s.name.find("norm") != std::string::npos;
    for (std::int64_t i = 0; i < s.count; ++i) p[static_cast<std::size_t>(s.offset + i)] = norm ? 1.0f : normal(rng);
  }
  (void)c;
  return p;
}

int run(int argc, char** argv) {
  Args args("train_bench", "Training tokens/s of one CPU replica and its fraction of the fp32 FMA peak "
                           "(6 FLOP per parameter per token), both measured in this run.");
  args.option("--model", "DIR", "a checkpoint to train (default: the `small` preset's shape, random weights)");
  args.option("--preset", "NAME", "make-model preset of the shape when no --model", "small");
  args.option("--vocab", "N", "vocabulary of the preset's shape (49152: SmolLM-135M's, 134.5M parameters)", "49152");
  args.option("--seq-len", "T", "tokens per sequence", "256");
  args.option("--micro-batch", "B", "sequences per step", "1");
  args.option("--steps", "N", "timed steps (the median is reported)", "5");
  args.option("--warmup", "N", "untimed steps first", "1");
  args.option("--threads", "N", "compute threads (0: every hardware thread)", "0");
  args.option("--precision", "P", "f32, or bf16 (the products' inputs rounded to bf16: plexus train --precision)", "f32");
  args.flag("--profile", "also time every TrainOps operation and print the seconds of each");
  args.flag("--json", "print the result as JSON");
  if (!args.parse(argc - 1, argv + 1)) return 0;
  const std::int64_t T = args.get_int_in("--seq-len", 2, 1 << 20);
  const std::int64_t B = args.get_int_in("--micro-batch", 1, 1 << 20);
  const int steps = static_cast<int>(args.get_int_in("--steps", 1, 1000));
  const int warmup = static_cast<int>(args.get_int_in("--warmup", 0, 1000));
  ThreadPool pool(static_cast<int>(args.get_int_in("--threads", 0, 4096)));

  ModelConfig config;
  std::vector<float> params;
  std::string shape;
  if (auto dir = args.get_optional("--model")) {
    config = load_model_config(*dir);
    const Checkpoint checkpoint(*dir);
    const ParamLayout layout = ParamLayout::of(config);
    params.resize(static_cast<std::size_t>(layout.total()));
    load_params(checkpoint, layout, params);
    shape = *dir;
  } else {
    config = preset_config(args.get("--preset"), Arch::kLlama, args.get_int_in("--vocab", 2, 1 << 24));
    params = random_params(config, ParamLayout::of(config));
    shape = "preset " + args.get("--preset");
  }
  const LlamaTrainModel model(config);
  const std::int64_t n_params = model.layout().parameters();

  const bool bf16 = args.get_choice("--precision", {"f32", "bf16"}) == "bf16";
  CpuTrainOps cpu(pool, bf16 ? TrainPrecision::kBf16 : TrainPrecision::kF32);
  bench::TimingTrainOps timed(cpu);
  TrainOps& ops = args.get_flag("--profile") ? static_cast<TrainOps&>(timed) : cpu;
  InProcessGroup group(1);
  BatchLayout batch;
  batch.global_batch = B;
  batch.micro_batch = B;
  batch.accumulation = 1;
  batch.replicas = 1;
  OptimizerOptions opt;
  opt.lr = 1e-4;
  ReplicaTrainer trainer(model, std::move(params), opt, batch, false, group.rank(0), ops, &pool);

  std::vector<std::int32_t> tokens(static_cast<std::size_t>(B * T));
  std::mt19937 rng(11);
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng() % static_cast<std::uint32_t>(config.vocab_size));

  // The ceiling before and after the steps; the larger counts (a shared machine's load lowers
  // either one, never raises it).
  const double peak_before = bench::fma_peak(pool, 5);
  std::vector<double> rates, losses;
  double timed_seconds = 0;
  for (int s = -warmup; s < steps; ++s) {
    if (s == 0) timed.clear();
    Timer t;
    const StepResult r = trainer.step(tokens, T);
    const double sec = t.seconds();
    if (s >= 0) {
      rates.push_back(static_cast<double>(B * T) / sec);
      timed_seconds += sec;
      losses.push_back(r.loss);
    }
  }
  const double tokens_per_s = median(rates);
  const double flops = 6.0 * static_cast<double>(n_params) * tokens_per_s;
  const double peak_after = bench::fma_peak(pool, 5);
  const double peak = std::max(peak_before, peak_after);
  const double fraction = peak > 0 ? flops / peak : 0;
  if (args.get_flag("--json")) {
    Json j;
    j["shape"] = shape;
    j["parameters"] = n_params;
    j["seq_len"] = T;
    j["micro_batch"] = B;
    j["threads"] = pool.size();
    j["precision"] = bf16 ? "bf16" : "f32";
    j["tokens_per_s_median"] = tokens_per_s;
    j["tokens_per_s"] = rates;
    j["train_gflops"] = flops / 1e9;
    j["fma_peak_gflops"] = peak / 1e9;
    j["fma_peak_before_after_gflops"] = {peak_before / 1e9, peak_after / 1e9};
    j["fma_peak_isa"] = bench::fma_peak_isa();
    j["fraction_of_fma_peak"] = fraction;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("train_bench: %s, %lld parameters, %lld x %lld tokens per step, %d threads, %s\n", shape.c_str(),
                static_cast<long long>(n_params), static_cast<long long>(B), static_cast<long long>(T), pool.size(),
                bf16 ? "bf16" : "f32");
    std::printf("  tokens/s (median of %d steps): %.1f   [", steps, tokens_per_s);
    for (double r : rates) std::printf(" %.1f", r);
    std::printf(" ]\n  training: %.1f GFLOP/s (6 x params x tokens/s)\n", flops / 1e9);
    std::printf("  fp32 FMA peak (%s, this run; the larger of before %.1f and after %.1f): %.1f GFLOP/s\n",
                bench::fma_peak_isa(), peak_before / 1e9, peak_after / 1e9, peak / 1e9);
    std::printf("  fraction of the FMA peak: %.1f%%\n", 100 * fraction);
    std::printf("  loss: first %.4f last %.4f\n", losses.front(), losses.back());
  }
  if (args.get_flag("--profile")) {
    double sum = 0;
    for (const auto& [name, sec] : timed.totals()) sum += sec;
    std::printf("  per operation over the %d timed steps (%.2f s in TrainOps):\n", steps, sum);
    for (const auto& [name, sec] : timed.totals()) {
      std::printf("    %-24s %8.3f s  %5.1f%%\n", name.c_str(), sec, 100 * sec / std::max(sum, 1e-12));
    }
    std::printf("  outside TrainOps (AdamW, gradient norm and clipping, zeroing, buckets): %.3f s, %.1f%% of the steps\n",
                timed_seconds - sum, 100 * (timed_seconds - sum) / std::max(timed_seconds, 1e-12));
  }
  return 0;
}

}  // namespace

namespace plexus::bench {

std::vector<std::pair<std::string, double>> TimingTrainOps::totals() const {
  std::vector<std::pair<std::string, double>> out;
  for (int i = 0; i < kOps; ++i) {
    if (seconds_[static_cast<std::size_t>(i)] > 0) out.emplace_back(kNames[static_cast<std::size_t>(i)], seconds_[static_cast<std::size_t>(i)]);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace plexus::bench

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
