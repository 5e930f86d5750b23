// Activation checkpointing (TrainActivations with checkpoint): the same loss, gradients and
// `ready` order bit for bit as keeping every layer's activations, on the oracle and the fast
// CPU ops, for every architecture's parts; and the size of what it keeps.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "test_util.h"
#include "train/cpu_train_ops.h"
#include "train/llama_train.h"
#include "train/ref_train_ops.h"
#include "train_model_util.h"

namespace plexus {
namespace {

struct Run {
  std::vector<double> losses;  // one per micro-batch
  std::vector<float> grads;    // accumulated over the micro-batches
  std::vector<int> ready;
};

// Two micro-batches of b sequences (the second reusing the activations) accumulated into one
// gradient buffer, then one of b − 1 sequences in activations sized for b.
Run run(TrainOps& ops, const LlamaTrainModel& model, std::vector<float>& weights, std::int64_t b, std::int64_t T,
        bool checkpoint) {
  const ModelConfig& c = model.config();
  Run r;
  r.grads.assign(weights.size(), 0.0f);
  TrainActivations acts(c, b, T, checkpoint);
  EXPECT_EQ(acts.checkpoint(), checkpoint);
  const ModelTensors w = view_tensors(c, model.layout(), weights.data());
  const ModelTensors g = view_tensors(c, model.layout(), r.grads.data());
  for (int salt = 0; salt < 3; ++salt) {
    const std::int64_t rows = salt == 2 ? b - 1 : b;
    const std::vector<std::int32_t> tokens = testing::random_tokens(rows, T, c.vocab_size, salt + 7);
    r.losses.push_back(model.forward_backward(ops, w, g, {tokens, rows, T}, 0.125f, acts,
                                              [&r](int layer) { r.ready.push_back(layer); }));
  }
  return r;
}

void expect_same_bits(const Run& got, const Run& want, const std::string& what) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  EXPECT_EQ(std::memcmp(got.losses.data(), want.losses.data(), want.losses.size() * sizeof(double)), 0)
      << what << ": loss " << got.losses[0] << " vs " << want.losses[0];
  EXPECT_EQ(got.ready, want.ready) << what;
  ASSERT_EQ(got.grads.size(), want.grads.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < want.grads.size(); ++i) {
    differ += std::memcmp(&got.grads[i], &want.grads[i], sizeof(float)) != 0 ? 1 : 0;
  }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << want.grads.size() << " gradients differ";
}

TEST(CheckpointActivations, SameBitsAsKeepingEveryLayerOnEveryArchitecture) {
  struct Case {
    Arch arch;
    bool tied;
  };
  for (const Case cs : {Case{Arch::kLlama, true}, Case{Arch::kLlama, false}, Case{Arch::kQwen2, true},
                        Case{Arch::kQwen3, false}, Case{Arch::kMistral, false}, Case{Arch::kGemma2, true}, Case{Arch::kGemma3, true},
                        Case{Arch::kPhi3, false}}) {
    ModelConfig c = testing::small_train_config(cs.arch, cs.tied);
    c.num_layers = 4;  // three layers recomputed (the last one's activations are still there)
    if (!c.sliding_layers.empty()) c.sliding_layers = {true, false, true, false};
    if (cs.arch == Arch::kLlama && !cs.tied) c.qkv_bias = c.o_bias = true;
    testing::TrainFixture f(c, 31);
    const std::string what = std::string(arch_name(cs.arch)) + (cs.tied ? " tied" : "");
    RefTrainOps ref;
    expect_same_bits(run(ref, f.model, f.weights, 3, 7, true), run(ref, f.model, f.weights, 3, 7, false), what + " ref");
    ThreadPool pool(2);
    CpuTrainOps cpu(pool);
    expect_same_bits(run(cpu, f.model, f.weights, 3, 7, true), run(cpu, f.model, f.weights, 3, 7, false), what + " cpu");
  }
}

// make-model's tiny shape on the fast kernels at sizes over their SIMD tiles.
TEST(CheckpointActivations, SameBitsOnTinyCheckpoints) {
  for (Arch arch : {Arch::kLlama, Arch::kQwen3, Arch::kGemma3, Arch::kPhi3}) {
    testing::TempDir dir("checkpoint_activations");
    testing::write_tiny_f32_model(dir.path(), arch);
    const LlamaTrainModel model(load_model_config(dir.path()));
    std::vector<float> weights(static_cast<std::size_t>(model.layout().total()));
    load_params(Checkpoint(dir.path()), model.layout(), weights);
    ThreadPool pool(2);
    CpuTrainOps cpu(pool);
    expect_same_bits(run(cpu, model, weights, 3, 37, true), run(cpu, model, weights, 3, 37, false),
                     std::string(arch_name(arch)) + " tiny");
  }
}

// Checkpointing keeps x(l) for every layer and the other kept buffers once: L − 1 layers'
// x_mid, q, k, v, attention output, lse, gate and up fewer (each buffer on a 64-byte line).
TEST(CheckpointActivations, KeepsTheLayerInputsAndOneLayer) {
  for (Arch arch : {Arch::kLlama, Arch::kQwen3}) {
    const ModelConfig c = preset_config("tiny", arch, 300);
    for (const auto& [b, T] : {std::pair<std::int64_t, std::int64_t>{1, 7}, {4, 33}, {16, 256}}) {
      const auto line = [](std::int64_t n) { return (n + 15) / 16 * 16; };
      const std::int64_t n = b * T, H = c.hidden_size, Q = c.q_dim(), KV = c.kv_dim(), I = c.intermediate_size;
      const std::int64_t layer = line(n * H) + 2 * line(n * Q) + 2 * line(n * KV) + line(b * c.num_heads * T) +
                                 2 * line(n * I);  // x_mid, q + att, k + v, lse, gate + up
      const std::int64_t kept = TrainActivations::bytes_for(c, b, T);
      const std::int64_t checkpointed = TrainActivations::bytes_for(c, b, T, true);
      EXPECT_EQ(kept - checkpointed, (c.num_layers - 1) * layer * 4) << b << " x " << T;
      EXPECT_EQ(checkpointed % 64, 0);
      const TrainActivations acts(c, b, T, true);  // allocates what bytes_for says
      EXPECT_TRUE(acts.checkpoint());
    }
  }
}

}  // namespace
}  // namespace plexus
