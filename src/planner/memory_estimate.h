// Memory a model needs besides its placed weights: KV cache per token and per layer, activation
// workspace for a forward pass, Adam training state; and the `plexus estimate` summary.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/module_tree.h"
#include "model/quant_mix.h"
#include "planner/weight_dtype.h"

namespace plexus {

// The KV cache is kept in 16-bit floats unless the weights are float32.
int kv_bytes_per_element(WeightDType weights);
// K and V of one decoder layer for one token: 2 × kv_heads × head_dim elements.
std::int64_t kv_bytes_per_token_per_layer(const ModelConfig& c, WeightDType weights);
std::int64_t kv_bytes_per_token(const ModelConfig& c, WeightDType weights);  // all layers

// Transient float32 workspace of one decoder layer's forward over `batch` × `chunk` new positions
// attending to `context` positions: hidden state and residual, q/k/v, attention output, gate and
// up projections, and the attention scores (chunk × context per head).
std::int64_t activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t chunk, std::int64_t context);
// float32 logits for the last position of each sequence (batch × vocab).
std::int64_t logits_bytes(const ModelConfig& c, std::int64_t batch);

// What a plan adds up stays below 2^62 when each part is at most this (1 EiB): weights + the
// KV cache of every layer, the activations, the logits.
inline constexpr std::int64_t kMaxPlanPartBytes = std::int64_t{1} << 60;
// InputError (exit 2) naming the part when `weights_bytes` + the KV cache of `context` × `batch`
// tokens in every layer, the activations or the logits exceed kMaxPlanPartBytes — checked before
// planning, so that no sum a planner forms can overflow.
void check_plan_sizes(const ModelConfig& c, WeightDType dtype, std::int64_t weights_bytes, std::int64_t context,
                      std::int64_t batch, std::int64_t chunk);

struct DTypeEstimate {
  WeightDType dtype;                     // what the non-projection tensors take (int8/int4: 16-bit)
  std::string name;                      // float32 ... int8, int4 | --quantize's mix (q4_k_m) | stored
  std::string format;                    // the projections' storage: float32 ... | q8_0 (int8) | q4_k (int4) | the mix | stored
  std::int64_t total_bytes = 0;          // every parameter once (tied storage once)
  std::int64_t active_bytes = 0;         // what one token reads (planner/moe_reads.h); total_bytes when dense
  std::int64_t largest_layer_bytes = 0;  // the largest unit that is never split
  std::string largest_layer;             // its module name
  std::int64_t training_adam_bytes = 0;  // weights + gradients + two Adam moments, same dtype
  std::int64_t kv_bytes_per_token = 0;
};

struct KvCell {
  std::int64_t context = 0, batch = 0, bytes = 0;
};

struct ModelEstimate {
  std::int64_t num_params = 0;  // unique parameters
  std::int64_t active_params = 0;  // those one token reads (mixtures of experts: k of E experts); num_params when dense
  // float32, bfloat16, float16, int8, int4, then every named mix (q8_0 ... q2_k) or only
  // --quantize's [, stored: a quantised checkpoint's own bytes, tensor by tensor]
  std::vector<DTypeEstimate> per_dtype;
  std::vector<KvCell> kv_table;          // 16-bit KV cache for a few contexts × batch sizes
};

// A named mix's row (quantise on load, or `plexus quantize`): each weight matrix in the type the
// mix gives it and the rest as the checkpoint stores them (at 16 bits for a tree from config.json
// alone). `quantize`: that mix's row alone instead of all of them.
ModelEstimate estimate_model(const ModuleTree& tree, std::optional<QuantMix> quantize = std::nullopt);

}  // namespace plexus
