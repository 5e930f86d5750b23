// Planning time for a 126-layer model (Llama-3.1-405B shape) on 8 accelerators + cpu, per
// strategy, including building the sized module tree. The goal is well under 50 ms per plan.
#include <benchmark/benchmark.h>

#include "model/config.h"
#include "model/module_tree.h"
#include "planner/planner.h"

namespace {

plexus::ModuleTree model_405b() {
  plexus::Json j{{"model_type", "llama"},    {"hidden_size", 16384},      {"num_hidden_layers", 126},
                 {"num_attention_heads", 128}, {"num_key_value_heads", 8}, {"intermediate_size", 53248},
                 {"vocab_size", 128256}};
  return plexus::ModuleTree::from_config(plexus::parse_model_config(j, "405b"));
}

void plan(benchmark::State& state, plexus::Strategy strategy, const char* budgets) {
  const plexus::ModuleTree tree = model_405b();
  plexus::PlanRequest r;
  r.strategy = strategy;
  r.dtype = plexus::WeightDType::kBF16;
  r.budgets = plexus::parse_max_memory(budgets);
  r.runtime.context = 8192;
  r.allow_disk = true;
  for (auto _ : state) {
    plexus::Plan p = plexus::plan_model(tree, r);
    benchmark::DoNotOptimize(p);
  }
  state.counters["layers"] = 126;
}

constexpr const char* kFits = "0=80GiB,1=80GiB,2=80GiB,3=80GiB,4=80GiB,5=80GiB,6=80GiB,7=80GiB,cpu=512GiB";
constexpr const char* kOffload = "0=40GiB,1=40GiB,2=40GiB,3=40GiB,4=40GiB,5=40GiB,6=40GiB,7=40GiB,cpu=256GiB";

}  // namespace

BENCHMARK_CAPTURE(plan, stages_fits, plexus::Strategy::kStages, kFits)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan, stages_offload, plexus::Strategy::kStages, kOffload)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan, sequential, plexus::Strategy::kSequential, kFits)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan, balanced, plexus::Strategy::kBalanced, kFits)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan, balanced_low_0, plexus::Strategy::kBalancedLow0, kFits)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan, auto_offload, plexus::Strategy::kAuto, kOffload)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
