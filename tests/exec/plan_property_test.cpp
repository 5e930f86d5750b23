// The planner's promise, checked on random inputs: a plan that `plexus plan` accepts runs under
// the same flags (random budgets × strategies × 1–4 virtual devices × cpu/disk offload × batch,
// context and tokens per forward), giving one device's NLL bit for bit and staying within every
// device's budget; a refusal is bad input (exit 2), never a failure at run time.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "core/error.h"
#include "exec/model_run.h"
#include "model/make_model.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::some_ids;
using testing::TempDir;

TEST(PlanProperty, AcceptedPlansRunWithOneDevicesResults) {
  // Hypothetical devices rehearsed on the CPU: on a GPU machine --max-memory would name real GPUs.
  // (Each test is a process of its own, and this comes before the CUDA runtime starts.)
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  TempDir dir("plan_property");
  MakeModelOptions mo;
  mo.arch = Arch::kLlama;
  mo.dtype = DType::kBF16;
  mo.seed = 3;
  mo.std = 0.08;
  mo.vocab_size = 1000;
  write_random_model(dir.path(), mo);
  const std::vector<std::int32_t> ids = some_ids(48, 1000, 9);
  EngineOptions one;
  one.threads = 2;
  one.max_batch_tokens = 16;
  Engine engine(dir.path(), one);
  const std::vector<double> want = perplexity(engine, ids).nll;  // (47) NLL of tokens 1..47

  const ModuleTree tree = load_module_tree(dir.path());
  const char* strategies[] = {"stages", "sequential", "balanced", "balanced_low_0", "auto"};
  std::mt19937 rng(20261126);
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int accepted = 0, refused = 0, spread = 0;
  for (int trial = 0; trial < 240; ++trial) {
    RunInputs in;
    in.engine.threads = 2;
    in.engine.max_batch_tokens = std::array<int, 3>{4, 16, 32}[static_cast<std::size_t>(pick(0, 2))];
    PlanInputs& p = in.plan;
    p.strategy = strategies[pick(0, 4)];
    // 512 and 2048: the KV cache (0.5 and 2 MiB) outweighs the layers, as long contexts do on real models.
    p.context = std::array<int, 5>{16, 32, 48, 512, 2048}[static_cast<std::size_t>(pick(0, 4))];
    p.batch = pick(1, 3);
    const int n = pick(1, 4);
    std::string mem;
    for (int d = 0; d < n; ++d) mem += (d ? "," : "") + std::to_string(d) + "=" + std::to_string(pick(20, 1400)) + "KiB";
    const int offload = pick(0, 2);  // none, cpu, disk
    if (offload == 1) mem += ",cpu=" + std::to_string(pick(200, 3000)) + "KiB";
    p.max_memory = mem;
    p.offload_disk = offload == 2;
    const std::string what = "trial " + std::to_string(trial) + ": --strategy " + p.strategy + " --max-memory " + mem +
                             (p.offload_disk ? " --offload-disk" : "") + " --context " + std::to_string(p.context) +
                             " --batch " + std::to_string(p.batch) + " --batch-tokens " +
                             std::to_string(in.engine.max_batch_tokens);
    SCOPED_TRACE(what);
    // What `plexus plan` does with these flags.
    PlanInputs planned = p;
    planned.batch_tokens = in.engine.max_batch_tokens;
    planned.threads = in.engine.threads;
    try {
      const Plan plan = plan_model(tree, plan_options_from(planned, tree.config()).request);
      for (const std::string& n : plan.notes) spread += n.find("one segment of layers") != std::string::npos;
    } catch (const InputError&) {
      ++refused;
      EXPECT_THROW(open_model_run(in, dir.path()), InputError) << "the run must refuse what the plan refuses";
      continue;
    }
    ++accepted;
    // What `plexus perplexity` and `plexus generate --batch B` do with the same flags.
    std::unique_ptr<ModelRun> run;
    ASSERT_NO_THROW(run = open_model_run(in, dir.path()));
    const std::size_t tokens = std::min<std::size_t>(static_cast<std::size_t>(p.context), ids.size());
    PerplexityResult r;
    ASSERT_NO_THROW(r = perplexity(*run->runner, std::span(ids).first(tokens)));
    ASSERT_EQ(r.nll.size(), tokens - 1);
    EXPECT_EQ(std::memcmp(r.nll.data(), want.data(), r.nll.size() * sizeof(double)), 0);
    std::vector<std::vector<std::int32_t>> prompts;
    const int prompt = static_cast<int>(tokens / 2);
    for (long long s = 0; s < p.batch; ++s) prompts.push_back(some_ids(prompt, 1000, 30 + static_cast<int>(s)));
    GenerateOptions g;
    g.max_tokens = static_cast<int>(tokens) - prompt;
    ASSERT_NO_THROW(generate_batch(*run->runner, prompts, g));
    for (const DeviceRunStats& d : run->executor->stats().devices) {
      EXPECT_LE(static_cast<std::uint64_t>(d.peak_bytes), d.budget_bytes) << d.name;
    }
  }
  // Both outcomes occur, so neither half of the property is vacuous.
  EXPECT_GE(accepted, 20);
  EXPECT_GE(refused, 3);
  EXPECT_GE(spread, 1) << "no case reached the stages' spread-out fallback";
  std::printf("plan property: %d accepted and run (%d with layer segments spread for the KV cache), %d refused at plan time\n",
              accepted, spread, refused);
}

}  // namespace
}  // namespace plexus
