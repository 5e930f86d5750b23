// Tensor parallelism on virtual CPU devices against one device: TP = 2 and 4 (kv heads split,
// then replicated), TP × PP = 2 × 2, micro-batched, for Llama, Qwen2 (q/k/v biases), Qwen3
// (q/k norms) and the mixtures Mixtral, Qwen3-MoE and gpt-oss (every expert split; gpt-oss's
// sinks, o_proj bias and expert biases, sliding and full layers): per-token NLL within 1e-4 of
// one device on an f32 model (the ranks' partial sums are added in another order than one
// device's dot products: not bitwise), greedy ids equal, and the same bits from run to run;
// sizes that cannot split the model, or more ranks than devices, are refused before any weight
// is read. Expert parallelism (--ep 2 and 4, and 2 × pp 2) on the mixtures: each rank holds its
// experts whole and none of the others, and gives one device's NLL.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "comm/in_process_group.h"
#include "exec/model_run.h"
#include "exec/run_devices.h"
#include "exec/tensor_parallel_runner.h"
#include "model/make_model.h"
#include "runtime/engine.h"
#include "runtime/engine_runner.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::some_ids;
using testing::TempDir;

struct Reference {
  std::vector<double> nll;
  std::vector<std::int32_t> ids;
};

class TensorParallelTest : public ::testing::TestWithParam<Arch> {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>("tp_model");
    MakeModelOptions o;  // tiny: 4 heads, 2 kv heads, intermediate 176, 4 layers
    o.arch = GetParam();
    o.dtype = DType::kF32;
    o.seed = 5;
    o.std = 0.08;
    o.vocab_size = 2001;  // not a multiple of the ranks: the last rank's vocabulary slice is shorter
    write_random_model(dir_->path(), o);
    ids_ = some_ids(33, 2001, 7);
    EngineOptions eo;
    eo.max_batch_tokens = 16;
    eo.threads = 2;
    Engine engine(dir_->path(), eo);
    EngineRunner runner(engine);
    want_ = run(runner);
  }

  Reference run(Runner& r) const {
    Reference out;
    out.nll = perplexity(r, ids_).nll;
    GenerateOptions g;
    g.max_tokens = 8;
    out.ids = generate(r, std::span(ids_).first(9), g).ids;
    return out;
  }

  // ep > 1: --ep ep (a group of ep ranks holding whole experts) in place of --tp.
  std::unique_ptr<ModelRun> open(int tp, int pp, int micro_batches = 0, int ep = 1) const {
    RunInputs in;
    in.engine.threads = 2;
    in.engine.max_batch_tokens = 16;
    in.engine.max_context = 128;
    in.plan.context = 128;
    in.plan.tensor_parallel = ep > 1 ? 1 : tp;
    in.plan.expert_parallel = ep;
    in.plan.pipeline_parallel = pp;
    in.plan.virtual_devices = std::max(tp, ep) * pp;
    in.micro_batches = micro_batches;
    return open_model_run(in, dir_->path());
  }

  void expect_close(const Reference& got) const {
    ASSERT_EQ(got.nll.size(), want_.nll.size());
    for (std::size_t i = 0; i < got.nll.size(); ++i) {
      EXPECT_NEAR(got.nll[i], want_.nll[i], 1e-4) << "token " << i;
    }
    EXPECT_EQ(got.ids, want_.ids);
  }

  static void expect_same_bits(const Reference& a, const Reference& b) {
    ASSERT_EQ(a.nll.size(), b.nll.size());
    EXPECT_EQ(std::memcmp(a.nll.data(), b.nll.data(), a.nll.size() * sizeof(double)), 0);
    EXPECT_EQ(a.ids, b.ids);
  }

  std::unique_ptr<TempDir> dir_;
  std::vector<std::int32_t> ids_;
  Reference want_;
};

TEST_P(TensorParallelTest, TwoRanksMatchOneDevice) {
  auto r = open(2, 1);
  ASSERT_TRUE(r->tensor);
  const Reference got = run(*r->runner);
  expect_close(got);
  expect_same_bits(got, run(*open(2, 1)->runner));
  const ExecStats s = r->stats();
  EXPECT_EQ(s.comm_ranks, 2);
  EXPECT_GT(s.comm.all_reduce.calls, 0);
  EXPECT_GT(s.tokens, 0);
  int accelerators = 0;
  for (const DeviceRunStats& d : s.devices) accelerators += d.ordinal >= 0;
  EXPECT_EQ(accelerators, 2);
}

TEST_P(TensorParallelTest, FourRanksReplicateTheKvHeads) {
  auto r = open(4, 1);
  const Reference got = run(*r->runner);
  expect_close(got);
  expect_same_bits(got, run(*open(4, 1)->runner));
}

TEST_P(TensorParallelTest, TwoByTwoPipelineOfGroupsMicroBatched) {
  for (int micro : {1, 3}) {
    auto r = open(2, 2, micro);
    const Reference got = run(*r->runner);
    expect_close(got);
    expect_same_bits(got, run(*open(2, 2, micro)->runner));
    int accelerators = 0;
    for (const DeviceRunStats& d : r->stats().devices) accelerators += d.ordinal >= 0;
    EXPECT_EQ(accelerators, 4);
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, TensorParallelTest,
                         ::testing::Values(Arch::kLlama, Arch::kQwen2, Arch::kQwen3, Arch::kMixtral, Arch::kQwen3Moe,
                                           Arch::kGptOss, Arch::kGpt2),
                         [](const auto& info) {
                           std::string name(arch_name(info.param));  // "Qwen3MoeForCausalLM"
                           return name.substr(0, name.find("For"));
                         });

using ExpertParallelTest = TensorParallelTest;

// Rank r of `run` holds experts [r·E/n, (r+1)·E/n) of every mixture layer whole (the full
// expert width) and no weights of the others.
void expect_whole_experts(const ModelRun& run, int n) {
  ASSERT_TRUE(run.tensor);
  EXPECT_TRUE(run.tensor->expert_parallel());
  ASSERT_EQ(run.tensor->executors().size(), static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const LlamaFamilyModel& m = run.tensor->executors()[static_cast<std::size_t>(r)]->model();
    const ModelConfig& c = m.config();
    const std::int64_t E = c.moe.num_experts, per = E / n;
    int mixtures = 0;
    for (int l = 0; l < c.num_layers; ++l) {
      const LayerWeights& w = m.layer_weights(l);
      if (w.experts.empty()) continue;
      ++mixtures;
      ASSERT_EQ(static_cast<std::int64_t>(w.experts.size()), E);
      for (std::int64_t e = 0; e < E; ++e) {
        const ExpertWeights& x = w.experts[static_cast<std::size_t>(e)];
        const bool mine = e >= r * per && e < (r + 1) * per;
        EXPECT_EQ(x.held(), mine) << "rank " << r << " layer " << l << " expert " << e;
        if (!mine) continue;
        EXPECT_EQ(x.gate.rows, c.moe.expert_intermediate_size);
        EXPECT_EQ(x.down.cols, c.moe.expert_intermediate_size);
        EXPECT_TRUE(x.down.partial_sum);
      }
    }
    EXPECT_GT(mixtures, 0);
  }
}

TEST_P(ExpertParallelTest, TwoAndFourRanksHoldWholeExpertsAndMatchOneDevice) {
  for (int ep : {2, 4}) {
    SCOPED_TRACE("--ep " + std::to_string(ep));
    auto r = open(1, 1, 0, ep);
    expect_whole_experts(*r, ep);
    const Reference got = run(*r->runner);
    expect_close(got);
    expect_same_bits(got, run(*open(1, 1, 0, ep)->runner));
    const ExecStats s = r->stats();
    EXPECT_EQ(s.comm_ranks, ep);
    EXPECT_GT(s.comm.all_reduce.calls, 0);
    EXPECT_EQ(r->plan_json["expert_parallel"], ep);
    EXPECT_EQ(r->plan_json["tensor_parallel"], ep);
  }
}

TEST_P(ExpertParallelTest, TwoByTwoPipelineOfGroupsMicroBatched) {
  for (int micro : {1, 3}) {
    auto r = open(1, 2, micro, 2);
    expect_whole_experts(*r, 2);
    const Reference got = run(*r->runner);
    expect_close(got);
    int accelerators = 0;
    for (const DeviceRunStats& d : r->stats().devices) accelerators += d.ordinal >= 0;
    EXPECT_EQ(accelerators, 4);
  }
}

INSTANTIATE_TEST_SUITE_P(Mixtures, ExpertParallelTest, ::testing::Values(Arch::kMixtral, Arch::kQwen3Moe, Arch::kGptOss),
                         [](const auto& info) {
                           std::string name(arch_name(info.param));
                           return name.substr(0, name.find("For"));
                         });

TEST(TensorParallelInput, SizesThatCannotSplitTheModelAreRefusedNamingTheHeads) {
  TempDir dir("tp_bad");
  MakeModelOptions o;
  o.dtype = DType::kF32;
  write_random_model(dir.path(), o);
  RunInputs in;
  in.engine.threads = 2;
  in.plan.context = 64;
  in.plan.tensor_parallel = 3;
  try {
    open_model_run(in, dir.path());
    FAIL() << "--tp 3 accepted";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("4 attention heads, 2 kv heads"), std::string::npos) << m;
    EXPECT_NE(m.find("--tp 1, 2, 4 work"), std::string::npos) << m;
  }
  in.plan.tensor_parallel = 2;
  in.plan.virtual_devices = 1;
  try {
    open_model_run(in, dir.path());
    FAIL() << "--tp 2 on one device accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 2 devices but the run has 1"), std::string::npos) << e.what();
  }
}

// A rank whose work fails mid-forward, while the other waits for it in an all-reduce: the forward
// ends (no rank left waiting) with an error naming the failed rank.
TEST(TensorParallelFailure, ARankThatFailsReleasesTheOthersAndIsNamed) {
  TempDir dir("tp_fail");
  MakeModelOptions o;
  o.dtype = DType::kF32;
  write_random_model(dir.path(), o);
  Budgets caps;
  caps.set(DeviceId::accelerator(0), 256ull << 20);
  TensorParallelRunner::Parts parts;
  parts.tp = 2;
  std::vector<RankGroup*> groups;
  for (int d = 0; d < 2; ++d) {  // device 0 and the host
    parts.groups.push_back(std::make_unique<InProcessGroup>(2));
    groups.push_back(parts.groups.back().get());
  }
  parts.devices.reserve(2);
  for (int r = 0; r < 2; ++r) parts.devices.push_back(make_rank_devices(caps, 1, 256ull << 20));
  DeviceMap all;
  all.set("", DeviceId::accelerator(0));
  for (int r = 0; r < 2; ++r) {
    ExecutorOptions xo;
    xo.max_batch_tokens = 8;
    xo.max_context = 32;
    xo.tensor = ExecutorOptions::TensorRank{TensorSplit{r, 2},
                                            [groups, r](int d) -> Collective& { return groups[d < 0 ? 1 : 0]->rank(r); },
                                            /*fail_first_task=*/r == 1};
    parts.ranks.push_back(std::make_unique<Executor>(dir.path(), all, parts.devices[static_cast<std::size_t>(r)], xo));
  }
  TensorParallelRunner runner(std::move(parts));
  const std::vector<std::int32_t> ids = some_ids(5, 32000, 1);
  try {
    perplexity(runner, ids);
    FAIL() << "the failure was not reported";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor-parallel rank 1 failed: injected failure"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace plexus
