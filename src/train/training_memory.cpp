// Training memory arithmetic: the per-device state of a replica and the process's peak.
#include "train/training_memory.h"

#include <algorithm>

#include "core/units.h"
#include "train/llama_train.h"
#include "train/param_layout.h"

namespace plexus {

namespace {

constexpr std::int64_t kF32 = 4;

// The largest gradient bucket the all-reduce moves at once: a layer, or everything outside the
// layers (embedding, final norm, lm_head) — the in-process group's shared scratch is that big.
std::int64_t largest_bucket(const ParamLayout& layout, int num_layers) {
  std::int64_t most = 0;
  for (int l = 0; l < num_layers; ++l) {
    const auto [b, e] = layout.layer_range(l);
    most = std::max(most, e - b);
  }
  std::int64_t outside = 0;
  for (const auto& [b, e] : layout.non_layer_ranges()) outside += e - b;
  return std::max(most, outside);
}

// CpuTrainOps' own buffers (train/cpu_train_ops, kernels/cpu/train_gemm): the GEMM's packing of
// A (up to 1536 rows) and B (up to 2048 columns) over up to 1024 of k, kept by the calling thread
// at the size of the largest product (each linear's forward, input and weight gradients; the
// lm_head in chunks of 1024 rows); attention_backward's probabilities and their gradients of one
// kv head of one sequence (2 · group · T², kept); the attention's per-thread rows of scores.
std::int64_t kernel_scratch(const ModelConfig& c, const TrainingShape& shape) {
  const std::int64_t rows = shape.micro_batch * shape.seq_len;
  const std::int64_t q_dim = c.num_heads * c.head_dim, kv_dim = c.num_kv_heads * c.head_dim;
  auto pack = [](std::int64_t m, std::int64_t n, std::int64_t k) {
    return (std::min<std::int64_t>(m, 1536) + 64) * std::min<std::int64_t>(k, 1024) +
           (std::min<std::int64_t>(n, 2048) + 64) * std::min<std::int64_t>(k, 1024);
  };
  std::int64_t gemm = 0;
  const std::int64_t linears[][3] = {{c.hidden_size, q_dim, rows},      {c.hidden_size, kv_dim, rows},
                                     {q_dim, c.hidden_size, rows},      {c.hidden_size, c.intermediate_size, rows},
                                     {c.intermediate_size, c.hidden_size, rows},
                                     {c.hidden_size, c.vocab_size, std::min<std::int64_t>(rows, 1024)}};
  for (const auto& [in, out, n] : linears) {
    gemm = std::max({gemm, pack(n, out, in), pack(n, in, out), pack(out, in, n)});
  }
  const std::int64_t group = c.num_kv_heads > 0 ? c.num_heads / c.num_kv_heads : 1;
  const std::int64_t attention = 2 * group * shape.seq_len * shape.seq_len;
  const std::int64_t per_thread = 2 * 16 * shape.seq_len * std::max(shape.threads, 1);
  return (gemm + attention + per_thread) * kF32;
}

std::string row(const std::string& what, std::int64_t bytes, const std::string& note) {
  std::string s = what;
  s.resize(std::max<std::size_t>(s.size(), 14), ' ');
  std::string b = format_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(bytes, 0)));
  if (b.size() < 12) b.insert(0, 12 - b.size(), ' ');
  return s + b + (note.empty() ? "" : "  " + note) + "\n";
}

}  // namespace

TrainingMemory training_memory(const ModelConfig& config, const TrainingShape& shape) {
  const ParamLayout layout = ParamLayout::of(config);
  const std::int64_t replicas = std::max(shape.replicas, 1);
  // The replica pads the layout to `replicas` equal shards of whole 64-byte lines (ZeRO-1's
  // shards, the all-gather's rows); weights and gradients are that long, the moments one shard
  // each under ZeRO-1 (plus the shard's all-gather input), the whole padded length otherwise.
  const std::int64_t a = ParamLayout::kParamAlign;
  const std::int64_t shard = ((layout.total() + replicas - 1) / replicas + a - 1) / a * a;
  const std::int64_t padded = shard * replicas;
  const bool zero1 = shape.zero1 && replicas > 1;
  TrainingMemory m;
  m.parameters = layout.parameters();
  m.weights = padded * kF32;
  m.gradients = padded * kF32;
  m.optimizer = (zero1 ? 3 * shard : 2 * padded) * kF32;
  m.activations_kept = TrainActivations::bytes_for(config, shape.micro_batch, shape.seq_len, false);
  m.activations_checkpointed = TrainActivations::bytes_for(config, shape.micro_batch, shape.seq_len, true);
  m.activations = shape.checkpoint_activations ? m.activations_checkpointed : m.activations_kept;
  m.scratch = kernel_scratch(config, shape) + 2 * shape.micro_batch * shape.seq_len * 4;  // + tokens, targets
  // ReplicaTrainer::optimizer_state: both moments of the whole layout, on every replica.
  m.checkpoint = 2 * layout.total() * kF32;
  return m;
}

std::int64_t ProcessMemory::total() const { return std::max(devices + start + group_scratch, load_peak) + data; }

ProcessMemory process_memory(const ModelConfig& config, const TrainingShape& shape, int in_process_replicas,
                             std::int64_t checkpoint_bytes, std::int64_t data_bytes, bool resumed) {
  const ParamLayout layout = ParamLayout::of(config);
  const TrainingMemory m = training_memory(config, shape);
  ProcessMemory p;
  p.devices = m.device_total() * std::max(in_process_replicas, 1);
  if (in_process_replicas > 1) p.group_scratch = largest_bucket(layout, config.num_layers) * kF32;
  p.start = (resumed ? 3 : 1) * layout.total() * kF32;
  p.load_peak = checkpoint_bytes + layout.total() * kF32;
  p.data = data_bytes;
  return p;
}

std::string training_memory_table(const TrainingMemory& m, const TrainingShape& shape, std::int64_t global_batch) {
  std::string out = "training memory per device (f32, AdamW): " + std::to_string(m.parameters) + " parameters, " +
                    std::to_string(shape.replicas) + (shape.replicas == 1 ? " replica" : " replicas") +
                    ", micro-batch " + std::to_string(shape.micro_batch) + " x " + std::to_string(shape.seq_len) +
                    " tokens";
  if (global_batch > 0) out += ", global batch " + std::to_string(global_batch);
  out += "\n";
  out += row("weights", m.weights, "");
  out += row("gradients", m.gradients, "");
  out += row("optimizer", m.optimizer,
             shape.zero1 && shape.replicas > 1 ? "two moments, ZeRO-1 shard 1/" + std::to_string(shape.replicas)
                                               : "two moments");
  const bool on = shape.checkpoint_activations;
  out += row("activations", m.activations,
             on ? "checkpointed (--checkpoint-activations): each layer's input, one layer's activations, scratch"
                : "every layer's kept for the backward + scratch of one micro-batch");
  out += row("checkpoint", m.checkpoint, "both moments gathered while a checkpoint is written");
  out += row("other", m.scratch, "kernel scratch, token buffers");
  out += row("total", m.device_total(), "");
  // The other way of keeping activations, for comparison.
  out += std::string(on ? "without --checkpoint-activations" : "with --checkpoint-activations") + ": activations " +
         format_bytes(static_cast<std::uint64_t>(on ? m.activations_kept : m.activations_checkpointed)) + ", total " +
         format_bytes(static_cast<std::uint64_t>(m.device_total_if(!on))) + "\n";
  return out;
}

Json training_memory_json(const TrainingMemory& m, const TrainingShape& shape, std::int64_t global_batch) {
  Json j;
  j["parameters"] = m.parameters;
  j["replicas"] = shape.replicas;
  j["zero"] = shape.zero1 ? 1 : 0;
  j["micro_batch"] = shape.micro_batch;
  j["seq_len"] = shape.seq_len;
  j["checkpoint_activations"] = shape.checkpoint_activations;
  if (global_batch > 0) j["global_batch"] = global_batch;
  Json d;
  d["weights_bytes"] = m.weights;
  d["gradients_bytes"] = m.gradients;
  d["optimizer_bytes"] = m.optimizer;
  d["activations_bytes"] = m.activations;
  d["activations_kept_bytes"] = m.activations_kept;
  d["activations_checkpointed_bytes"] = m.activations_checkpointed;
  d["checkpoint_bytes"] = m.checkpoint;
  d["other_bytes"] = m.scratch;
  d["total_bytes"] = m.device_total();
  d["total_kept_bytes"] = m.device_total_if(false);
  d["total_checkpointed_bytes"] = m.device_total_if(true);
  j["per_device"] = d;
  return j;
}

}  // namespace plexus
