// The Llama-family training step (train/llama_train) on CudaTrainOps, its weights, gradients and
// activations in device memory, against the same step on CpuTrainOps: every architecture's parts
// (Llama tied and untied, Qwen2 biases, Qwen3 q/k norms, Mistral's window), then a model with
// 64-channel heads over three optimizer steps (clip, AdamW on CudaOptimizer vs the CPU's). Label
// gpu: skipped, with the reason, without one.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "cuda_test_util.h"
#include "train/adamw.h"
#include "train/cpu_train_ops.h"
#include "train/cuda/cuda_optimizer.h"
#include "train/cuda/cuda_train_ops.h"
#include "train/grad_clip.h"
#include "train/llama_train.h"
#include "train_model_util.h"

namespace plexus::cuda {
namespace {

using test::DeviceBuffer;

struct Step {
  double loss = 0;
  std::vector<float> grads;
};

// One forward_backward on the CPU (host buffers) and one on the GPU (device copies).
Step cpu_step(const LlamaTrainModel& model, std::vector<float>& weights, const std::vector<std::int32_t>& tokens,
              std::int64_t b, std::int64_t T) {
  const ModelConfig& c = model.config();
  ThreadPool pool(2);
  CpuTrainOps ops(pool);
  Step s;
  s.grads.assign(weights.size(), 0.0f);
  TrainActivations acts(c, b, T);
  s.loss = model.forward_backward(ops, view_tensors(c, model.layout(), weights.data()),
                                  view_tensors(c, model.layout(), s.grads.data()), {tokens, b, T}, 0.25f, acts);
  return s;
}

Step gpu_step(CudaTrainOps& ops, const LlamaTrainModel& model, DeviceBuffer<float>& weights,
              const std::vector<std::int32_t>& tokens, std::int64_t b, std::int64_t T) {
  const ModelConfig& c = model.config();
  DeviceBuffer<float> grads(std::vector<float>(weights.size(), 0.0f));
  DeviceBuffer<float> memory(static_cast<std::size_t>(TrainActivations::bytes_for(c, b, T)) / sizeof(float));
  memory.poison();  // every activation the step reads, it must have written
  TrainActivations acts(c, b, T, memory.get());
  Step s;
  s.loss = model.forward_backward(ops, view_tensors(c, model.layout(), weights.get()),
                                  view_tensors(c, model.layout(), grads.get()), {tokens, b, T}, 0.25f, acts);
  s.grads = grads.download();
  return s;
}

// Every tensor's gradient within 1e-4 of the CPU's relative to that tensor's 2-norm (the bound
// CpuTrainOps meets against the double-accumulating oracle: f32 sums of a few hundred terms).
void expect_close(const LlamaTrainModel& model, const Step& got, const Step& want, const std::string& what) {
  EXPECT_NEAR(got.loss, want.loss, 1e-5 * want.loss) << what;
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

TEST(CudaTrainStep, SmallModelsMatchTheCpu) {
  std::string why;
  if (!test::gpu_present(&why)) GTEST_SKIP() << why;
  struct Case {
    Arch arch;
    bool tied;
  };
  for (const Case cs : {Case{Arch::kLlama, true}, Case{Arch::kLlama, false}, Case{Arch::kQwen2, true},
                        Case{Arch::kQwen3, false}, Case{Arch::kMistral, false}}) {
    const std::string what = std::string(arch_name(cs.arch)) + (cs.tied ? " tied" : "");
    testing::TrainFixture f(testing::small_train_config(cs.arch, cs.tied), 21);
    const std::int64_t b = 2, T = 9;
    const auto tokens = testing::random_tokens(b, T, f.model.config().vocab_size, 3);
    const Step want = cpu_step(f.model, f.weights, tokens, b, T);
    CudaTrainOps ops;
    DeviceBuffer<float> w(f.weights);
    expect_close(f.model, gpu_step(ops, f.model, w, tokens, b, T), want, what);
  }
}

// Three steps of training (forward_backward, the clipped gradient norm, AdamW) on the GPU and on
// the CPU from the same weights: the first loss within 1e-5 relative; the later ones within the
// issue's f32 bound against PyTorch, 1e-4 (AdamW's first steps move a weight by about lr whatever
// its gradient's size, so a gradient at the level of rounding noise may move it either way);
// the gradient norms within 1e-3.
TEST(CudaTrainStep, ThreeOptimizerStepsFollowTheCpu) {
  std::string why;
  if (!test::gpu_present(&why)) GTEST_SKIP() << why;
  ModelConfig c = testing::small_train_config(Arch::kLlama, false);
  c.hidden_size = 96;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.intermediate_size = 160;
  c.vocab_size = 300;
  testing::TrainFixture f(c, 22);
  const LlamaTrainModel& model = f.model;
  const std::int64_t b = 2, T = 45, n = model.layout().total();
  OptimizerOptions o;
  o.lr = 1e-2;
  o.weight_decay = 0.1;
  o.max_grad_norm = 0.5;
  std::vector<float> cw = f.weights, cm(static_cast<std::size_t>(n), 0.0f), cv = cm;
  CudaTrainOps ops;
  CudaOptimizer opt(ops.stream());
  DeviceBuffer<float> gw(f.weights), gm(cm), gv(cv);
  for (std::int64_t step = 1; step <= 3; ++step) {
    const auto tokens = testing::random_tokens(b, T, c.vocab_size, static_cast<int>(step));
    const Step want = cpu_step(model, cw, tokens, b, T);
    const Step got = gpu_step(ops, model, gw, tokens, b, T);
    EXPECT_NEAR(got.loss, want.loss, (step == 1 ? 1e-5 : 1e-4) * want.loss) << "step " << step;
    const double cpu_norm = grad_norm(model.layout(), want.grads.data());
    DeviceBuffer<float> gg(got.grads);
    const double gpu_norm = opt.grad_norm(model.layout().slots(), gg.get());
    EXPECT_NEAR(gpu_norm, cpu_norm, 1e-3 * cpu_norm) << "step " << step;
    adamw_update(o, step, static_cast<float>(clip_coefficient(cpu_norm, o.max_grad_norm)), cw.data(),
                 want.grads.data(), cm.data(), cv.data(), n);
    opt.adamw_update(o, step, static_cast<float>(clip_coefficient(gpu_norm, o.max_grad_norm)), gw.get(), gg.get(),
                     gm.get(), gv.get(), n);
  }
}

}  // namespace
}  // namespace plexus::cuda
