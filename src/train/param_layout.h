// Every trainable tensor of a model in one flat f32 buffer: the checkpoint's Hugging Face names
// in sorted order (the order of ref_train.py's parameter list), tied weights once, each tensor
// starting on a 64-byte line. Weights, gradients and both AdamW moments share this layout, so an
// element range (a layer's gradient bucket, a ZeRO shard) means the same tensors in each buffer.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/config.h"

namespace plexus {

class Checkpoint;
class ThreadPool;

struct ParamSlot {
  std::string name;                 // e.g. "model.layers.3.self_attn.q_proj.weight"
  std::vector<std::int64_t> shape;  // as stored: (out, in) for linear weights
  std::int64_t offset = 0;          // first element in the flat buffer (a multiple of kParamAlign)
  std::int64_t count = 0;           // elements (the product of shape)
  int layer = -1;                   // decoder layer; -1 outside the layers
};

class ParamLayout {
 public:
  static constexpr std::int64_t kParamAlign = 16;  // elements (64 bytes)

  // The config's parameters (model/module_tree.h), the tied lm_head left out, sorted by name.
  static ParamLayout of(const ModelConfig& config);

  const std::vector<ParamSlot>& slots() const { return slots_; }
  // Elements of the flat buffer, alignment padding included (padding stays zero in every buffer).
  std::int64_t total() const { return total_; }
  // Elements of the tensors themselves (the model's parameter count).
  std::int64_t parameters() const { return parameters_; }
  const ParamSlot* find(const std::string& name) const;
  const ParamSlot& at(const std::string& name) const;  // asserts the name is present
  // [begin, end) elements holding layer l's tensors: contiguous, since they share the prefix
  // "model.layers.l." and the names are sorted.
  std::pair<std::int64_t, std::int64_t> layer_range(int layer) const;
  // The ranges outside every layer (embedding, final norm, an untied lm_head), in buffer order.
  std::vector<std::pair<std::int64_t, std::int64_t>> non_layer_ranges() const;

 private:
  std::vector<ParamSlot> slots_;
  std::vector<std::pair<std::int64_t, std::int64_t>> layer_ranges_;  // (num_layers)
  std::int64_t total_ = 0, parameters_ = 0;
};

// Pointers to every tensor of one buffer laid out by a ParamLayout (weights or gradients).
// Absent tensors (biases, q/k norms of other architectures) are null. Phi-3's fused
// self_attn.qkv_proj and mlp.gate_up_proj are viewed as their row ranges (q, k, v and gate, up
// point into them), so gradients land in the fused tensors. Gemma's norms are stored as w and
// used as (1 + w) (train/llama_train adds the 1).
struct LayerTensors {
  float *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;        // (q_dim, H) (kv_dim, H) (kv_dim, H) (H, q_dim)
  float *gate = nullptr, *up = nullptr, *down = nullptr;               // (I, H) (I, H) (H, I)
  float *q_bias = nullptr, *k_bias = nullptr, *v_bias = nullptr, *o_bias = nullptr;  // (q_dim) (kv_dim) (kv_dim) (H)
  float *q_norm = nullptr, *k_norm = nullptr;                          // (head_dim); Qwen3, Gemma 3
  float *input_norm = nullptr, *post_attention_norm = nullptr;         // (H)
  // Gemma (null otherwise): the norms around the MLP; post_attention_norm is then the norm of the
  // attention's output.
  float *pre_feedforward_norm = nullptr, *post_feedforward_norm = nullptr;  // (H)
};
struct ModelTensors {
  float* embed = nullptr;       // (vocab, H)
  float* lm_head = nullptr;     // (vocab, H); == embed with tied embeddings (gradients add up there)
  float* final_norm = nullptr;  // (H)
  std::vector<LayerTensors> layers;  // (num_layers)
};
ModelTensors view_tensors(const ModelConfig& config, const ParamLayout& layout, float* base);

// out (layout.total()) = the checkpoint's tensors as f32 (bf16/f16 upcast exactly), padding
// zero. InputError naming the tensor and file when one is missing, has another shape, or is
// stored in a format training cannot start from (a block-quantised GGUF tensor).
void load_params(const Checkpoint& checkpoint, const ParamLayout& layout, std::span<float> out);

}  // namespace plexus
