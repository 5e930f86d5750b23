// Multi-device runs against one device: identical token ids and bitwise-identical NLL for any
// number of virtual devices, any strategy, embedding/head on their own devices, cpu and disk
// offload, micro-batched or not; and budgets that are too small fail with a clear error.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "exec/executor.h"
#include "exec/run_devices.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "model/module_tree.h"
#include "planner/planner.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::some_ids;
using testing::TempDir;

constexpr std::uint64_t kMiB = 1 << 20;

// A tiny model (4 layers) written once for the suite, with its one-device results.
class ExecutorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("exec_model");
    MakeModelOptions o;
    o.arch = Arch::kQwen2;  // q/k/v biases: the small vectors are placed on every computing device too
    o.dtype = DType::kBF16;
    o.seed = 11;
    o.std = 0.08;
    o.vocab_size = 2000;
    write_random_model(dir_->path(), o);
    ids_ = new std::vector<std::int32_t>(some_ids(40, 2000, 3));
    EngineOptions eo;
    eo.max_batch_tokens = 16;
    eo.threads = 2;
    Engine engine(dir_->path(), eo);
    want_nll_ = new std::vector<double>(perplexity(engine, *ids_).nll);
    GenerateOptions g;
    g.max_tokens = 6;
    want_ids_ = new std::vector<std::int32_t>(generate(engine, std::span(*ids_).first(9), g).ids);
  }
  static void TearDownTestSuite() {
    delete dir_, delete ids_, delete want_nll_, delete want_ids_;
  }

  static DeviceMap map_of(const Json& j) { return DeviceMap::from_json(j, "test map"); }

  static DeviceMap planned(Strategy strategy, int n_devices) {
    const Checkpoint ck(dir_->path());
    const ModuleTree tree = ModuleTree::from_checkpoint(load_model_config(dir_->path()), ck);
    PlanRequest r;
    r.strategy = strategy;
    r.dtype = WeightDType::kBF16;
    r.runtime.context = 64;
    r.runtime.prefill_chunk = 16;
    r.allow_disk = true;
    // Budgets that force a split: about 1.4 / n of the weights each (for stages, whose budgets
    // also hold the run buffers, plus room for those).
    std::uint64_t weights = 0;
    for (const ParamInfo& p : tree.params())
      if (!p.tied_to) weights += static_cast<std::uint64_t>(p.numel()) * 2;
    const std::uint64_t buffers = strategy == Strategy::kStages ? 600 * 1024 : 0;
    for (int i = 0; i < n_devices; ++i) {
      r.budgets.set(DeviceId::accelerator(i), weights * 14 / 10 / static_cast<std::uint64_t>(n_devices) + buffers);
    }
    const Plan plan = plan_model(tree, r);
    bool split = false;
    for (const DeviceMap::Entry& e : plan.device_map.entries()) split |= !(e.second == DeviceId::accelerator(0));
    EXPECT_TRUE(split) << "budgets too loose: everything on device 0";
    return plan.device_map;
  }

  // Scores and generates with `map` on n virtual devices of `budget` bytes each; expects the
  // one-device results bit for bit.
  static void expect_same(const DeviceMap& map, int n_devices, int micro_batches = 0, std::uint64_t budget = 256 * kMiB) {
    Budgets b;
    for (int i = 0; i < n_devices; ++i) b.set(DeviceId::accelerator(i), budget);
    DeviceRegistry devices = make_run_devices(b, 2, 256 * kMiB);
    ExecutorOptions o;
    o.max_batch_tokens = 16;
    o.max_context = 128;
    o.micro_batches = micro_batches;
    Executor x(dir_->path(), map, devices, o);
    const PerplexityResult p = perplexity(x, *ids_);
    ASSERT_EQ(p.nll.size(), want_nll_->size());
    for (std::size_t i = 0; i < p.nll.size(); ++i) {
      EXPECT_EQ(std::memcmp(&p.nll[i], &(*want_nll_)[i], sizeof(double)), 0) << "token " << i << ": " << p.nll[i] << " vs " << (*want_nll_)[i];
    }
    GenerateOptions g;
    g.max_tokens = 6;
    EXPECT_EQ(generate(x, std::span(*ids_).first(9), g).ids, *want_ids_);
    const ExecStats s = x.stats();
    for (const DeviceRunStats& d : s.devices) EXPECT_LE(static_cast<std::uint64_t>(d.peak_bytes), d.budget_bytes) << d.name;
  }

  static TempDir* dir_;
  static std::vector<std::int32_t>* ids_;
  static std::vector<double>* want_nll_;
  static std::vector<std::int32_t>* want_ids_;
};

TempDir* ExecutorTest::dir_ = nullptr;
std::vector<std::int32_t>* ExecutorTest::ids_ = nullptr;
std::vector<double>* ExecutorTest::want_nll_ = nullptr;
std::vector<std::int32_t>* ExecutorTest::want_ids_ = nullptr;

TEST_F(ExecutorTest, OneVirtualDevice) { expect_same(map_of({{"", 0}}), 1); }

TEST_F(ExecutorTest, OneLayerPerDevice) {
  expect_same(map_of({{"model.embed_tokens", 0}, {"model.layers.0", 0}, {"model.layers.1", 1}, {"model.layers.2", 2},
                      {"model.layers.3", 3}, {"model.norm", 3}, {"lm_head", 3}}),
              4);
}

TEST_F(ExecutorTest, EmbeddingAloneHeadOnAnother) {
  expect_same(map_of({{"model.embed_tokens", 0}, {"model.layers", 1}, {"model.norm", 2}, {"lm_head", 2}}), 3);
}

TEST_F(ExecutorTest, StagesReturnToAnEarlierDevice) {
  expect_same(map_of({{"model.embed_tokens", 1}, {"model.layers.0", 0}, {"model.layers.1", 1}, {"model.layers.2", 0},
                      {"model.layers.3", 1}, {"model.norm", 0}, {"lm_head", 0}}),
              2);
}

TEST_F(ExecutorTest, PlannedByEveryStrategy) {
  for (Strategy s : {Strategy::kSequential, Strategy::kBalanced, Strategy::kBalancedLow0, Strategy::kAuto, Strategy::kStages}) {
    for (int n : {2, 4}) {
      SCOPED_TRACE(std::string(strategy_name(s)) + " on " + std::to_string(n) + " devices");
      expect_same(planned(s, n), n);
    }
  }
}

TEST_F(ExecutorTest, EverythingOffloadedToCpu) { expect_same(map_of({{"", "cpu"}}), 1); }

TEST_F(ExecutorTest, EverythingOffloadedToDisk) { expect_same(map_of({{"", "disk"}}), 2); }

TEST_F(ExecutorTest, MixedResidentCpuAndDisk) {
  expect_same(map_of({{"model.embed_tokens", "disk"}, {"model.layers.0", 0}, {"model.layers.1", "cpu"},
                      {"model.layers.2", "disk"}, {"model.layers.3", 1}, {"model.norm", "cpu"}, {"lm_head", "cpu"}}),
              2);
}

TEST_F(ExecutorTest, NoAcceleratorsComputesOnTheHost) {
  const DeviceMap map = map_of({{"", "cpu"}});
  DeviceRegistry devices = make_run_devices(Budgets(), 2, 256 * kMiB);
  ExecutorOptions o;
  o.max_batch_tokens = 16;
  o.max_context = 128;
  Executor x(dir_->path(), map, devices, o);
  EXPECT_EQ(x.layout().stages.size(), 1u);
  EXPECT_EQ(x.layout().stages[0].device, kHostDevice);
  const PerplexityResult p = perplexity(x, *ids_);
  EXPECT_EQ(std::memcmp(p.nll.data(), want_nll_->data(), p.nll.size() * sizeof(double)), 0);
}

TEST_F(ExecutorTest, MicroBatchedEqualsUnbatched) {
  const DeviceMap map = map_of({{"model.embed_tokens", 0}, {"model.layers.0", 0}, {"model.layers.1", 1}, {"model.layers.2", 1},
                                {"model.layers.3", 2}, {"model.norm", 2}, {"lm_head", 2}});
  for (int m : {1, 2, 3, 7, 16}) {
    SCOPED_TRACE("micro-batches " + std::to_string(m));
    expect_same(map, 3, m);
  }
}

TEST_F(ExecutorTest, BatchedGenerationEqualsOneByOne) {
  Budgets b;
  for (int i = 0; i < 2; ++i) b.set(DeviceId::accelerator(i), 256 * kMiB);
  DeviceRegistry devices = make_run_devices(b, 2, 256 * kMiB);
  ExecutorOptions o;
  o.max_batch_tokens = 16;
  o.max_context = 128;
  Executor x(dir_->path(), map_of({{"model.embed_tokens", 0}, {"model.layers.0", 0}, {"model.layers.1", 0}, {"model", 1}, {"lm_head", 1}}), devices, o);
  std::vector<std::vector<std::int32_t>> prompts;
  for (int s = 0; s < 5; ++s) prompts.push_back(some_ids(3 + 2 * s, 2000, 20 + s));
  GenerateOptions g;
  g.max_tokens = 5;
  const BatchGenerateResult r = generate_batch(x, prompts, g);
  ASSERT_EQ(r.sequences.size(), prompts.size());
  EngineOptions eo;
  eo.max_batch_tokens = 16;
  Engine engine(dir_->path(), eo);
  for (std::size_t s = 0; s < prompts.size(); ++s) EXPECT_EQ(r.sequences[s].ids, generate(engine, prompts[s], g).ids) << "sequence " << s;
  const ExecStats st = x.stats();
  EXPECT_EQ(st.stages, 2);
  EXPECT_GT(st.devices[0].busy_s, 0);
  EXPECT_GT(st.devices[1].busy_s, 0);
}

TEST_F(ExecutorTest, StreamingIsMeasured) {
  Budgets b;
  b.set(DeviceId::accelerator(0), 256 * kMiB);
  DeviceRegistry devices = make_run_devices(b, 2, 256 * kMiB);
  ExecutorOptions o;
  o.max_batch_tokens = 16;
  o.max_context = 128;
  Executor x(dir_->path(), map_of({{"model.embed_tokens", 0}, {"model.layers", "cpu"}, {"model.norm", 0}, {"lm_head", 0}}), devices, o);
  perplexity(x, *ids_);
  const ExecStats s = x.stats();
  EXPECT_GT(s.streamed_bytes, 0);
  EXPECT_GE(s.stream_copy_s, 0);
  EXPECT_GT(s.devices.back().peak_bytes, 0) << "the host holds the offloaded layers";
}

TEST_F(ExecutorTest, WeightsOverBudgetFailWithTheNumbers) {
  Budgets b;
  b.set(DeviceId::accelerator(0), 100 * 1024);  // the embedding alone is 250 KiB of bf16
  DeviceRegistry devices = make_run_devices(b, 2, 256 * kMiB);
  ExecutorOptions o;
  o.max_context = 128;
  try {
    Executor x(dir_->path(), map_of({{"", 0}}), devices, o);
    FAIL() << "expected a budget error";
  } catch (const RuntimeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cannot place weights of model.embed_tokens"), std::string::npos) << m;
    EXPECT_NE(m.find("virtual:0"), std::string::npos) << m;
    EXPECT_NE(m.find("budget"), std::string::npos) << m;
  }
}

// The executor sizes its buffers with the planner's function before it runs anything: a budget
// that holds the weights and scratch but not the KV cache of a max_context sequence is refused
// at construction, naming the KV cache; one that holds it runs, within its budget.
TEST_F(ExecutorTest, KvCacheOverBudgetIsRefusedBeforeTheRun) {
  ExecutorOptions o;
  o.max_batch_tokens = 16;
  o.max_context = 2048;
  std::int64_t placed = 0;  // weights + scratch + the KV cache of one 2048-token sequence
  {
    Budgets roomy;
    roomy.set(DeviceId::accelerator(0), 256 * kMiB);
    DeviceRegistry devices = make_run_devices(roomy, 2, 256 * kMiB);
    Executor x(dir_->path(), map_of({{"", 0}}), devices, o);
    placed = x.stats().devices[0].peak_bytes + x.buffers().devices[0].kv_cache;
  }
  {
    Budgets b;  // 512 KiB short of it
    b.set(DeviceId::accelerator(0), static_cast<std::uint64_t>(placed) - 512 * 1024);
    DeviceRegistry devices = make_run_devices(b, 2, 256 * kMiB);
    try {
      Executor x(dir_->path(), map_of({{"", 0}}), devices, o);
      FAIL() << "expected a budget error";
    } catch (const RuntimeError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("the plan does not fit at run time"), std::string::npos) << m;
      EXPECT_NE(m.find("KV cache 2.00 MiB"), std::string::npos) << m;
      EXPECT_NE(m.find("virtual:0"), std::string::npos) << m;
    }
  }
  Budgets b;
  b.set(DeviceId::accelerator(0), static_cast<std::uint64_t>(placed));
  DeviceRegistry devices = make_run_devices(b, 2, 256 * kMiB);
  Executor x(dir_->path(), map_of({{"", 0}}), devices, o);
  EXPECT_NO_THROW(x.close_sequence(x.open_sequence(2048)));
  EXPECT_THROW(x.open_sequence(2049), InputError);
  const ExecStats s = x.stats();
  EXPECT_EQ(s.devices[0].peak_bytes, placed);
  EXPECT_LE(static_cast<std::uint64_t>(s.devices[0].peak_bytes), s.devices[0].budget_bytes);
}

TEST_F(ExecutorTest, MapErrorsAreInputErrors) {
  Budgets b;
  b.set(DeviceId::accelerator(0), 256 * kMiB);
  DeviceRegistry devices = make_run_devices(b, 2, 256 * kMiB);
  EXPECT_THROW(Executor(dir_->path(), map_of({{"", 1}}), devices, ExecutorOptions()), InputError);
  EXPECT_THROW(Executor(dir_->path(), map_of({{"", 0}, {"model.layers.1.mlp", "cpu"}}), devices, ExecutorOptions()), InputError);
}

}  // namespace
}  // namespace plexus
