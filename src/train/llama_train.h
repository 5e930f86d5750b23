// The training step of the Llama family (Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2 and Gemma 3:
// the dense architectures of model/llama_family but GPT-2): the forward of a micro-batch keeping its activations, the mean next-token
// cross-entropy, and the backward into the parameter gradients. Knows nothing of devices, ranks
// or optimizers: it computes through a device's TrainOps (train/train_ops.h) on the weights and
// gradients it is given, laid out by train/param_layout.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "compute/compute_ops.h"
#include "model/config.h"
#include "train/param_layout.h"
#include "train/train_ops.h"

namespace plexus {

// b sequences of T tokens each (host memory): the model predicts tokens (b, 1..T-1) from the
// tokens before them, b·(T−1) predictions.
struct MicroBatch {
  std::span<const std::int32_t> tokens;  // (b, T)
  std::int64_t b = 0, T = 0;
};

// What a micro-batch's forward keeps for its backward, and the scratch of both, for up to b
// sequences of T tokens: allocated once, reused every micro-batch. bytes_for() is the exact size
// of the allocation (the training memory estimate, train/training_memory, is built on it).
// `checkpoint` (activation checkpointing, `plexus train --checkpoint-activations`): the forward
// keeps only each layer's input, the backward recomputes a layer's forward before its backward;
// room for the layer inputs plus one layer's activations, the same losses and gradients bit for bit.
class TrainActivations {
 public:
  TrainActivations(const ModelConfig& config, std::int64_t b, std::int64_t T, bool checkpoint = false);
  // In memory the caller owns and keeps alive (bytes_for(config, b, T, checkpoint) bytes): a
  // device's, for a TrainOps that computes there (train/cuda/cuda_train_ops).
  TrainActivations(const ModelConfig& config, std::int64_t b, std::int64_t T, float* memory, bool checkpoint = false);
  TrainActivations(const TrainActivations&) = delete;
  TrainActivations& operator=(const TrainActivations&) = delete;
  static std::int64_t bytes_for(const ModelConfig& config, std::int64_t b, std::int64_t T, bool checkpoint = false);
  std::int64_t max_b() const { return b_; }
  std::int64_t T() const { return T_; }
  bool checkpoint() const { return checkpoint_; }
  float* data() { return external_ != nullptr ? external_ : memory_.data(); }

 private:
  std::int64_t b_, T_;
  bool checkpoint_;
  std::vector<float> memory_;  // when the memory is ours
  float* external_ = nullptr;  // when it is the caller's
};

// Called when the gradients of a part of the model are final for this micro-batch: layer l
// (L−1 down to 0), then -1 for everything outside the layers (embedding, final norm, lm_head:
// ParamLayout::non_layer_ranges), last since a tied embedding gets its second part there. The
// data-parallel step starts the all-reduce of that part while the backward goes on.
using GradientsReady = std::function<void(int layer)>;

// The rope frequencies a training step makes its tables of (model/llama_family's rope_inv_freq).
struct RopeFreqs {
  std::vector<double> global;        // (head_dim / 2) rope scaling applied (LongRoPE: the short factors)
  std::vector<double> local;         // (head_dim / 2) Gemma 3's sliding layers (rope_local_theta); else empty
  std::vector<double> long_context;  // (head_dim / 2) LongRoPE's long factors; else empty
};

class LlamaTrainModel {
 public:
  // InputError naming the feature for a model training does not support (interleaved rope of
  // a GGUF file, rope frequency factors).
  explicit LlamaTrainModel(const ModelConfig& config);
  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }

  // Forward and backward of one micro-batch: returns the sum over its b·(T−1) predictions of the
  // next-token cross-entropy (double), and adds ∂(that sum · grad_scale)/∂θ into `grads`
  // (weights `w` unchanged). acts sized for at least mb.b sequences of exactly mb.T tokens; with
  // acts.checkpoint() each layer's forward runs again before its backward (the same calls on the
  // same inputs: the same bits).
  double forward_backward(TrainOps& ops, const ModelTensors& w, const ModelTensors& grads, const MicroBatch& mb,
                          float grad_scale, TrainActivations& acts, const GradientsReady& ready = {}) const;
  // Both throw InputError when the model needs ops `ops` lacks (TrainOps::family_ops: Gemma's
  // GeGLU, scales and soft-capping, a partial rotary's rope) — a CudaTrainOps today.
  // The forward alone: the same loss sum, no gradients.
  double forward_loss(TrainOps& ops, const ModelTensors& w, const MicroBatch& mb, TrainActivations& acts) const;

 private:
  ModelConfig config_;
  ParamLayout layout_;
  RopeFreqs rope_;
  AttentionShape attention_;  // the window is each layer's (ModelConfig::layer_window)
  float embed_scale_ = 1;     // Gemma: √hidden_size in f32 (the dtype training computes in); 1 otherwise
  bool family_ops_ = false;   // the step calls TrainOps' Gemma / Phi-3 ops (Gemma, partial rotary)
  void check_ops(const TrainOps& ops) const;
};

}  // namespace plexus
