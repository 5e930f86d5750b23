// Small Llama-family models for the training-step tests: configs made in code, random f32
// parameters in a ParamLayout buffer, and the loss / gradients of one micro-batch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "train/llama_train.h"
#include "train/param_layout.h"
#include "train/train_ops.h"

namespace plexus::testing {

// hidden 16, 2 layers, 4 heads / 2 kv heads (head_dim 4), I 24, vocab 40; the architecture's
// extras: Qwen2 q/k/v biases, Qwen3 q/k norms, Mistral a sliding window of 3 tokens, Gemma 3's
// (GeGLU, (1 + w) norms and post-norms, q/k norms, window 3 on layer 0 with the local rope base),
// Phi-3's (fused projections, rope on 2 of 4 dims, LongRoPE from 4 positions), Gemma 2's (Gemma
// 3's without q/k norms and local rope base; scores soft-capped at 1, logits at 1.5).
ModelConfig small_train_config(Arch arch, bool tied);

// A model with its parameters (random: matrices N(0, 0.3²), norms 1 + N(0, 0.1²), biases
// N(0, 0.1²)) and a gradient buffer, both laid out by model.layout().
struct TrainFixture {
  TrainFixture(const ModelConfig& config, std::uint64_t seed);
  LlamaTrainModel model;
  std::vector<float> weights, grads;  // (layout.total())
  ModelTensors w, g;
};

// make-model's tiny checkpoint (hidden 64, 4 layers, head_dim 16, I 176) in f32 with vocab 300 and
// matrices N(0, 0.1²), written into dir.
void write_tiny_f32_model(const std::string& dir, Arch arch);

// b sequences of T ids in [0, vocab), deterministic per salt.
std::vector<std::int32_t> random_tokens(std::int64_t b, std::int64_t T, std::int64_t vocab, int salt);

}  // namespace plexus::testing
