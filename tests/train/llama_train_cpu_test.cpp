// The training step on the fast CpuTrainOps against the RefTrainOps oracle, for every
// architecture's parts, and bitwise independent of the thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/checkpoint.h"
#include "test_util.h"
#include "train/cpu_train_ops.h"
#include "train/llama_train.h"
#include "train/ref_train_ops.h"
#include "train_model_util.h"

namespace plexus {
namespace {

struct StepRun {
  double loss = 0;
  std::vector<float> grads;
  std::vector<int> ready;
};

StepRun run_step(TrainOps& ops, const LlamaTrainModel& model, std::vector<float>& weights,
             const std::vector<std::int32_t>& tokens, std::int64_t b, std::int64_t T) {
  const ModelConfig& c = model.config();
  StepRun r;
  r.grads.assign(weights.size(), 0.0f);
  TrainActivations acts(c, b, T);
  r.loss = model.forward_backward(ops, view_tensors(c, model.layout(), weights.data()),
                                  view_tensors(c, model.layout(), r.grads.data()), {tokens, b, T}, 0.25f, acts,
                                  [&r](int layer) { r.ready.push_back(layer); });
  return r;
}

// Every tensor's gradient within 1e-4 of the oracle's, relative to that tensor's 2-norm.
void expect_close(const LlamaTrainModel& model, const StepRun& got, const StepRun& want, const std::string& what) {
  EXPECT_NEAR(got.loss, want.loss, 1e-5 * want.loss) << what;
  EXPECT_EQ(got.ready, want.ready) << what;
  for (const ParamSlot& s : model.layout().slots()) {
    double diff = 0, norm = 0;
    for (std::int64_t i = s.offset; i < s.offset + s.count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      diff += std::pow(static_cast<double>(got.grads[k]) - want.grads[k], 2);
      norm += std::pow(static_cast<double>(want.grads[k]), 2);
    }
    EXPECT_GT(norm, 0.0) << what << " " << s.name;
    EXPECT_LE(std::sqrt(diff), 1e-4 * std::sqrt(norm)) << what << " " << s.name;
  }
}

TEST(LlamaTrainCpu, SmallModelsMatchTheOracle) {
  struct Case {
    Arch arch;
    bool tied;
  };
  for (const Case cs : {Case{Arch::kLlama, true}, Case{Arch::kLlama, false}, Case{Arch::kQwen2, true},
                        Case{Arch::kQwen3, false}, Case{Arch::kMistral, false}, Case{Arch::kGemma2, true}, Case{Arch::kGemma3, true},
                        Case{Arch::kPhi3, false}}) {
    ModelConfig c = testing::small_train_config(cs.arch, cs.tied);
    if (cs.arch == Arch::kLlama && !cs.tied) c.qkv_bias = c.o_bias = true;
    testing::TrainFixture f(c, 21);
    const std::int64_t b = 3, T = 7;
    const std::vector<std::int32_t> tokens = testing::random_tokens(b, T, c.vocab_size, 3);
    RefTrainOps ref;
    ThreadPool pool(2);
    CpuTrainOps cpu(pool);
    expect_close(f.model, run_step(cpu, f.model, f.weights, tokens, b, T),
                 run_step(ref, f.model, f.weights, tokens, b, T), std::string(arch_name(cs.arch)));
  }
}

// Tiny checkpoints (hidden 64, head_dim 16, I 176, vocab 300) at odd sizes: the kernels' SIMD
// tiles and their edges. Then 1 and 3 threads give the same bits.
TEST(LlamaTrainCpu, TinyCheckpointsMatchTheOracleAndIgnoreThreads) {
  for (Arch arch : {Arch::kLlama, Arch::kQwen3, Arch::kGemma2, Arch::kGemma3, Arch::kPhi3}) {
    testing::TempDir dir("llama_train_cpu");
    testing::write_tiny_f32_model(dir.path(), arch);
    const ModelConfig c = load_model_config(dir.path());
    const LlamaTrainModel model(c);
    std::vector<float> weights(static_cast<std::size_t>(model.layout().total()));
    load_params(Checkpoint(dir.path()), model.layout(), weights);
    const std::int64_t b = 3, T = 21;
    const std::vector<std::int32_t> tokens = testing::random_tokens(b, T, c.vocab_size, 6);
    RefTrainOps ref;
    ThreadPool one(1), three(3);
    CpuTrainOps cpu1(one), cpu3(three);
    const StepRun r1 = run_step(cpu1, model, weights, tokens, b, T);
    expect_close(model, r1, run_step(ref, model, weights, tokens, b, T), std::string(arch_name(arch)));
    const StepRun r3 = run_step(cpu3, model, weights, tokens, b, T);
    EXPECT_EQ(r3.loss, r1.loss);
    EXPECT_EQ(r3.grads, r1.grads);
  }
}

// Activations in the caller's memory (as a GPU's TrainOps takes them, in device memory), filled
// with NaN first: the same bits as in the step's own, zeroed, allocation — the step reads only
// what it wrote.
TEST(LlamaTrainCpu, ActivationsInTheCallersMemoryGiveTheSameBits) {
  const ModelConfig c = testing::small_train_config(Arch::kQwen3, false);
  testing::TrainFixture f(c, 23);
  const std::int64_t b = 2, T = 9;
  const std::vector<std::int32_t> tokens = testing::random_tokens(b, T, c.vocab_size, 4);
  ThreadPool pool(2);
  CpuTrainOps cpu(pool);
  const StepRun own = run_step(cpu, f.model, f.weights, tokens, b, T);
  std::vector<float> memory(static_cast<std::size_t>(TrainActivations::bytes_for(c, b, T)) / sizeof(float),
                            std::numeric_limits<float>::quiet_NaN());
  TrainActivations acts(c, b, T, memory.data());
  EXPECT_EQ(acts.data(), memory.data());
  std::vector<float> grads(f.weights.size(), 0.0f);
  const double loss = f.model.forward_backward(cpu, view_tensors(c, f.model.layout(), f.weights.data()),
                                               view_tensors(c, f.model.layout(), grads.data()), {tokens, b, T}, 0.25f,
                                               acts);
  EXPECT_EQ(loss, own.loss);
  EXPECT_EQ(grads, own.grads);
}

}  // namespace
}  // namespace plexus
