// Sizing a run's buffers per computing device from its stage layout.
#include "planner/run_buffers.h"

#include <algorithm>

#include "compute/kv_cache.h"
#include "core/units.h"
#include "model/llama_family.h"
#include "planner/moe_reads.h"

namespace plexus {

namespace {

constexpr std::int64_t kLogitsChunkBytes = 4 << 20;
constexpr std::int64_t kLine = 64;
std::int64_t round_line(std::int64_t b) { return (b + kLine - 1) / kLine * kLine; }

// The small vectors (biases, norms): the run keeps them as f32 on the device that computes.
const char* const kLayerVectors[] = {".self_attn.q_proj.bias",   ".self_attn.k_proj.bias",  ".self_attn.v_proj.bias",
                                     ".self_attn.o_proj.bias",   ".self_attn.q_norm.weight", ".self_attn.k_norm.weight",
                                     ".input_layernorm.weight", ".post_attention_layernorm.weight", ".self_attn.sinks",
                                     ".mlp.router.bias", ".mlp.experts.gate_up_proj_bias", ".mlp.experts.down_proj_bias",
                                     ".mlp.experts.gate_proj_bias", ".mlp.experts.up_proj_bias",
                                     ".pre_feedforward_layernorm.weight", ".post_feedforward_layernorm.weight"};

// Bytes of layer l's small vectors as the weights count them (0 for the absent ones).
std::int64_t stored_vector_bytes(const SizedTree& sized, int layer) {
  std::int64_t b = 0;
  for (const char* v : kLayerVectors) b += sized.size_of(ModuleTree::layer_prefix(layer) + v);
  return b;
}

// Layer l's matrices the layer's device holds: all, or without its experts when the host keeps
// and computes them (ModulePlace::host_experts).
std::vector<std::string> device_matrix_names(const ModelConfig& c, int layer, bool with_experts) {
  std::vector<std::string> names = layer_matrix_names(c, layer);
  if (with_experts || !c.moe_layer(layer)) return names;
  const std::string experts = experts_module(c, layer) + ".";
  std::erase_if(names, [&experts](const std::string& n) { return n.rfind(experts, 0) == 0; });
  return names;
}

std::int64_t raw_layer_bytes(const SizedTree& sized, const ModelConfig& c, int layer, bool with_experts) {
  std::int64_t b = 0;
  for (const std::string& m : device_matrix_names(c, layer, with_experts)) b += sized.size_of(m);
  return b;
}

}  // namespace

std::int64_t logits_chunk_rows(std::int64_t vocab, std::int64_t batch_tokens) {
  const std::int64_t rows = kLogitsChunkBytes / std::max<std::int64_t>(1, vocab * 4);
  return std::clamp<std::int64_t>(rows, 1, std::max<std::int64_t>(1, batch_tokens));
}

int threads_per_accelerator(int total_threads, int n_accelerators) {
  return std::max(1, total_threads / std::max(1, n_accelerators));
}

std::int64_t packed_layer_bytes(const SizedTree& sized, const ModelConfig& c, int layer, bool with_experts) {
  std::int64_t b = 0;
  for (const std::string& m : device_matrix_names(c, layer, with_experts)) {
    if (const std::vector<std::int64_t> rows = fused_row_parts(c, m); !rows.empty()) {  // Phi-3: q k v, gate up
      std::int64_t total = 0;
      for (const std::int64_t r : rows) total += r;
      for (const std::int64_t r : rows) b += round_line(sized.size_of(m) / total * r);
      continue;
    }
    // gpt-oss's fused experts are packed as E transposed matrices (gate and up: 2 per expert).
    const std::int64_t parts = !m.ends_with("_proj") ? 1 : m.ends_with("gate_up_proj") ? 2 * c.moe.num_experts : c.moe.num_experts;
    b += parts * round_line(sized.size_of(m) / parts);
  }
  return b;
}

std::int64_t head_matrix_bytes(const SizedTree& sized) {
  const std::int64_t own = sized.size_of("lm_head.weight");
  return own > 0 ? own : sized.size_of("model.embed_tokens.weight");  // tied: counted at the embedding
}

const DeviceBuffers* RunBuffers::find(int device) const {
  for (const DeviceBuffers& d : devices)
    if (d.device == device) return &d;
  return nullptr;
}

std::int64_t RunBuffers::total_on(int device) const {
  const DeviceBuffers* d = find(device);
  return d ? d->total() : 0;
}

RunBuffers size_run_buffers(const ModelConfig& c, const SizedTree& sized, const StageLayout& layout, const RunShape& shape) {
  RunBuffers out;
  out.shape = shape;
  const std::int64_t tokens = std::max<std::int64_t>(1, shape.batch_tokens);
  out.logits_rows = logits_chunk_rows(c.vocab_size, tokens);
  auto at = [&out](int device) -> DeviceBuffers& {
    for (DeviceBuffers& d : out.devices)
      if (d.device == device) return d;
    DeviceBuffers d;
    d.device = device;
    out.devices.push_back(d);
    return out.devices.back();
  };
  for (const Stage& s : layout.stages) {
    DeviceBuffers& d = at(s.device);
    if (d.stages == 0) {
      const int threads = s.device == kHostDevice ? shape.host_threads : shape.accelerator_threads;
      d.workspace = Workspace::bytes_for(c.layer_shape(), tokens, shape.context, std::max(1, threads)) +
                    (s.device == kHostDevice ? 0 : shape.accelerator_kernel_scratch);
    }
    ++d.stages;
    d.activations += tokens * c.hidden_size * 4;
    if (s.n_layers() > 0) {
      d.kv_cache += shape.batch * KvCache::bytes_for(s.n_layers(), c.num_kv_heads, c.head_dim, shape.context);
    }
    for (int l = s.first_layer; l < s.end_layer; ++l) {
      d.padding += layer_vector_bytes(c);  // resident here even when the matrices stream
      if (layout.layers[static_cast<std::size_t>(l)].residence == Residence::kDevice) {
        const bool experts = !layout.layers[static_cast<std::size_t>(l)].host_experts;
        d.padding += packed_layer_bytes(sized, c, l, experts) - raw_layer_bytes(sized, c, l, experts) - stored_vector_bytes(sized, l);
      } else {
        d.layer_slot = std::max(d.layer_slot, packed_layer_bytes(sized, c, l));
        d.layer_slots = 2;
      }
    }
    if (s.head) {
      // The final norm's f32 copy; model.norm's stored bytes are not taken off, since a map may
      // place them on another device than lm_head's.
      d.padding += final_norm_bytes(c);
      d.head = out.logits_rows * (c.hidden_size + c.vocab_size) * 4;
      if (layout.head.residence != Residence::kDevice) d.head_slot = head_matrix_bytes(sized);
    }
  }
  return out;
}

std::vector<int> fit_streaming_slots(RunBuffers* buffers, const std::function<std::int64_t(int device)>& room) {
  std::vector<int> one;
  for (DeviceBuffers& d : buffers->devices) {
    const std::int64_t r = room(d.device);
    if (d.layer_slots == 2 && r >= 0 && d.total() > r) {
      d.layer_slots = 1;
      one.push_back(d.device);
    }
  }
  return one;
}

std::string describe_buffers(const DeviceBuffers& b) {
  auto fb = [](std::int64_t x) { return format_bytes(static_cast<std::uint64_t>(x)); };
  std::string s = "KV cache " + fb(b.kv_cache) + ", workspace and activations " + fb(b.workspace + b.activations + b.padding);
  if (b.head > 0) s += ", logits " + fb(b.head);
  if (b.layer_slots > 0) {
    s += ", " + std::to_string(b.layer_slots) + " streaming slot" + (b.layer_slots > 1 ? "s" : "") + " of " + fb(b.layer_slot);
  }
  if (b.head_slot > 0) s += ", lm_head slot " + fb(b.head_slot);
  return s;
}

}  // namespace plexus
