// KV-cache, activation and training-memory arithmetic.
#include "planner/memory_estimate.h"

#include <algorithm>

#include "core/checked.h"
#include "core/error.h"
#include "planner/moe_reads.h"
#include "planner/sized_tree.h"

namespace plexus {

int kv_bytes_per_element(WeightDType weights) { return weights == WeightDType::kF32 ? 4 : 2; }

std::int64_t kv_bytes_per_token_per_layer(const ModelConfig& c, WeightDType weights) {
  return 2 * c.kv_dim() * kv_bytes_per_element(weights);
}

std::int64_t kv_bytes_per_token(const ModelConfig& c, WeightDType weights) {
  return checked_mul(kv_bytes_per_token_per_layer(c, weights), c.num_layers, "the KV-cache bytes per token");
}

std::int64_t activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t chunk, std::int64_t context) {
  chunk = std::min(chunk, context);
  // config.json's sizes are bounded (model/config.cpp), so per_position fits; batch and context
  // come from flags and multiply it.
  const std::int64_t per_position = 2 * c.hidden_size + c.q_dim() + 2 * c.kv_dim() + c.q_dim() + 2 * c.intermediate_size;
  const std::string what = "the activation bytes (batch " + std::to_string(batch) + " x context " + std::to_string(context) + ")";
  const std::int64_t scores = checked_mul(c.num_heads, context, what);
  return checked_mul(checked_mul(checked_mul(batch, chunk, what), checked_add(per_position, scores, what), what), 4, what);
}

std::int64_t logits_bytes(const ModelConfig& c, std::int64_t batch) {
  return checked_mul(checked_mul(batch, c.vocab_size, "the logits bytes"), 4, "the logits bytes");
}

void check_plan_sizes(const ModelConfig& c, WeightDType dtype, std::int64_t weights_bytes, std::int64_t context,
                      std::int64_t batch, std::int64_t chunk) {
  const std::string kv_what = "the KV cache (--context " + std::to_string(context) + " x --max-sequences " + std::to_string(batch) + ")";
  const std::int64_t kv = context > 0 ? checked_mul(checked_mul(kv_bytes_per_token(c, dtype), context, kv_what), batch, kv_what) : 0;
  const std::int64_t act = context > 0 ? activation_bytes(c, batch, chunk, context) : 0;
  const std::int64_t logits = context > 0 ? logits_bytes(c, batch) : 0;
  const auto refuse = [](const std::string& what, std::int64_t bytes) {
    if (bytes > kMaxPlanPartBytes) {
      throw InputError(what + " needs " + std::to_string(bytes) + " bytes, more than the 1 EiB plexus plans for: lower --context/--max-sequences");
    }
  };
  refuse("the weights with " + kv_what, checked_add(weights_bytes, kv, "the weights with " + kv_what));
  refuse("the activation workspace", act);
  refuse("the logits", logits);
}

ModelEstimate estimate_model(const ModuleTree& tree, std::optional<QuantMix> quantize) {
  ModelEstimate e;
  for (const ParamInfo& p : tree.params()) {
    if (!p.tied_to) e.num_params = checked_add(e.num_params, p.numel(), "the parameter count");
  }
  e.active_params = active_parameters(tree);
  const ModelConfig& c = tree.config();
  struct Row {
    WeightDType dtype;
    std::optional<QuantMix> quantize;
    bool stored = false;  // the tree as it is (a quantised checkpoint's own bytes)
  };
  std::vector<Row> rows;
  for (WeightDType d : {WeightDType::kF32, WeightDType::kBF16, WeightDType::kF16, WeightDType::kInt8, WeightDType::kInt4}) {
    rows.push_back(Row{d, std::nullopt});
  }
  // The named mixes beside them (llama.cpp's per-tensor rules, model/quant_mix.h): every one, so
  // one table compares bf16, int8, int4 and Q8_0 ... Q2_K, or only --quantize's.
  if (quantize) {
    rows.push_back(Row{WeightDType::kBF16, quantize});
  } else {
    for (const QuantMixInfo& m : quant_mixes()) rows.push_back(Row{WeightDType::kBF16, m.mix});
  }
  // A quantised checkpoint (GGUF) is sized as stored whatever the dtype: the dtype rows size
  // the same model from its config alone, and one more row gives the file's own bytes.
  const bool quantised = tree.quantized();
  const ModuleTree plain = quantised ? ModuleTree::from_config(c) : tree;
  if (quantised) rows.push_back(Row{WeightDType::kBF16, std::nullopt, true});
  for (const Row& row : rows) {
    const WeightDType d = row.dtype;
    ModuleTree q = row.stored ? tree : plain;
    if (row.quantize) q.quantize_as(*row.quantize);
    const SizedTree t = SizedTree::build(q, d);
    DTypeEstimate de;
    de.dtype = d;
    const std::optional<DType> block = weight_block_format(d);
    de.name = row.stored ? std::string("stored")
              : row.quantize ? quant_mix_lower_name(*row.quantize)
                             : std::string(weight_dtype_name(d));
    de.format = row.stored ? std::string("stored")
                : row.quantize ? quant_mix_lower_name(*row.quantize)
                : block    ? std::string(dtype_torch_name(*block))
                           : std::string(weight_dtype_name(d));
    de.total_bytes = t.total_bytes();
    de.active_bytes = active_weight_bytes(t, c);
    // Units never split: the decoder layers and every top-level leaf module.
    for (const SizedNode& n : t.nodes()) {
      const bool unit = n.no_split || (!n.is_tensor && n.children.empty() && n.layer < 0 && !n.name.empty());
      if (unit && n.bytes > de.largest_layer_bytes) {
        de.largest_layer_bytes = n.bytes;
        de.largest_layer = n.name;
      }
    }
    de.training_adam_bytes = 4 * de.total_bytes;
    de.kv_bytes_per_token = kv_bytes_per_token(c, d);
    e.per_dtype.push_back(de);
  }
  std::vector<std::int64_t> contexts{2048, 4096, 8192, 32768};
  if (std::find(contexts.begin(), contexts.end(), c.max_position_embeddings) == contexts.end()) {
    contexts.push_back(c.max_position_embeddings);
  }
  std::sort(contexts.begin(), contexts.end());
  for (std::int64_t ctx : contexts) {
    for (std::int64_t b : {1, 8, 32}) {
      const std::string what = "the KV cache of " + std::to_string(b) + " x " + std::to_string(ctx) + " tokens";
      e.kv_table.push_back(KvCell{ctx, b, checked_mul(checked_mul(ctx, b, what), kv_bytes_per_token(c, WeightDType::kBF16), what)});
    }
  }
  return e;
}

}  // namespace plexus
