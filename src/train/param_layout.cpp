// The flat parameter layout of training, its tensor views and the upcast load of a checkpoint.
#include "train/param_layout.h"

#include <algorithm>
#include <cassert>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "model/checkpoint.h"
#include "model/module_tree.h"

namespace plexus {

ParamLayout ParamLayout::of(const ModelConfig& config) {
  if (config.is_moe()) {
    throw InputError(std::string(arch_name(config.arch)) +
                     " is a mixture of experts: training runs dense Llama-family models only (the experts' backward is not built)");
  }
  if (config.arch == Arch::kGpt2) {
    throw InputError("GPT2LMHeadModel: training is not built for GPT-2 (its LayerNorm and GELU have no backward yet); "
                     "plexus train runs dense Llama-family models");
  }
  ParamLayout layout;
  const ModuleTree tree = ModuleTree::from_config(config);
  for (const ParamInfo& p : tree.params()) {
    if (p.tied_to) continue;
    layout.slots_.push_back({p.name, p.shape, 0, p.numel(), p.layer});
  }
  std::sort(layout.slots_.begin(), layout.slots_.end(),
            [](const ParamSlot& a, const ParamSlot& b) { return a.name < b.name; });
  layout.layer_ranges_.assign(static_cast<std::size_t>(config.num_layers), {-1, -1});
  std::int64_t offset = 0;
  for (ParamSlot& s : layout.slots_) {
    s.offset = offset;
    offset += (s.count + kParamAlign - 1) / kParamAlign * kParamAlign;
    layout.parameters_ += s.count;
    if (s.layer >= 0) {
      auto& r = layout.layer_ranges_[static_cast<std::size_t>(s.layer)];
      if (r.first < 0) r.first = s.offset;
      assert(r.second < 0 || r.second == s.offset);  // a layer's tensors are adjacent
      r.second = offset;
    }
  }
  layout.total_ = offset;
  return layout;
}

const ParamSlot* ParamLayout::find(const std::string& name) const {
  auto it = std::lower_bound(slots_.begin(), slots_.end(), name,
                             [](const ParamSlot& s, const std::string& n) { return s.name < n; });
  return it != slots_.end() && it->name == name ? &*it : nullptr;
}

const ParamSlot& ParamLayout::at(const std::string& name) const {
  const ParamSlot* s = find(name);
  assert(s != nullptr);
  return *s;
}

std::pair<std::int64_t, std::int64_t> ParamLayout::layer_range(int layer) const {
  return layer_ranges_.at(static_cast<std::size_t>(layer));
}

std::vector<std::pair<std::int64_t, std::int64_t>> ParamLayout::non_layer_ranges() const {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].layer >= 0) continue;
    const std::int64_t end = i + 1 < slots_.size() ? slots_[i + 1].offset : total_;
    if (!out.empty() && out.back().second == slots_[i].offset) {
      out.back().second = end;
    } else {
      out.emplace_back(slots_[i].offset, end);
    }
  }
  return out;
}

ModelTensors view_tensors(const ModelConfig& config, const ParamLayout& layout, float* base) {
  auto at = [&](const std::string& name) -> float* {
    const ParamSlot* s = layout.find(name);
    return s != nullptr ? base + s->offset : nullptr;
  };
  ModelTensors t;
  t.embed = at("model.embed_tokens.weight");
  t.lm_head = config.tie_word_embeddings ? t.embed : at("lm_head.weight");
  t.final_norm = at("model.norm.weight");
  for (int l = 0; l < config.num_layers; ++l) {
    const std::string p = ModuleTree::layer_prefix(l) + ".";
    LayerTensors w;
    if (config.fused_qkv_gate_up()) {  // Phi-3: row views of qkv_proj (q_dim + 2·kv_dim, H), gate_up_proj (2·I, H)
      const std::int64_t H = config.hidden_size, Q = config.q_dim(), KV = config.kv_dim();
      float* qkv = at(p + "self_attn.qkv_proj.weight");
      float* gate_up = at(p + "mlp.gate_up_proj.weight");
      w.q = qkv, w.k = qkv + Q * H, w.v = qkv + (Q + KV) * H;
      w.gate = gate_up, w.up = gate_up + config.intermediate_size * H;
    } else {
      w.q = at(p + "self_attn.q_proj.weight");
      w.k = at(p + "self_attn.k_proj.weight");
      w.v = at(p + "self_attn.v_proj.weight");
      w.gate = at(p + "mlp.gate_proj.weight");
      w.up = at(p + "mlp.up_proj.weight");
    }
    w.o = at(p + "self_attn.o_proj.weight");
    w.q_bias = at(p + "self_attn.q_proj.bias");
    w.k_bias = at(p + "self_attn.k_proj.bias");
    w.v_bias = at(p + "self_attn.v_proj.bias");
    w.o_bias = at(p + "self_attn.o_proj.bias");
    w.q_norm = at(p + "self_attn.q_norm.weight");
    w.k_norm = at(p + "self_attn.k_norm.weight");
    w.down = at(p + "mlp.down_proj.weight");
    w.input_norm = at(p + "input_layernorm.weight");
    w.post_attention_norm = at(p + "post_attention_layernorm.weight");
    w.pre_feedforward_norm = at(p + "pre_feedforward_layernorm.weight");
    w.post_feedforward_norm = at(p + "post_feedforward_layernorm.weight");
    t.layers.push_back(w);
  }
  return t;
}

void load_params(const Checkpoint& checkpoint, const ParamLayout& layout, std::span<float> out) {
  assert(static_cast<std::int64_t>(out.size()) == layout.total());
  std::fill(out.begin(), out.end(), 0.0f);
  for (const ParamSlot& s : layout.slots()) {
    const TensorRef t = checkpoint.get(s.name);
    if (t.info->shape != s.shape) {
      std::string want, got;
      for (auto d : s.shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      for (auto d : t.info->shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
      throw InputError(t.path() + ": tensor " + s.name + " has shape (" + got + "); config.json says (" + want + ")");
    }
    float* dst = out.data() + s.offset;
    switch (t.info->dtype) {
      case DType::kF32: {
        const auto* src = static_cast<const float*>(t.data);
        std::copy(src, src + s.count, dst);
        break;
      }
      case DType::kBF16: {
        const auto* src = static_cast<const std::uint16_t*>(t.data);
        for (std::int64_t i = 0; i < s.count; ++i) dst[i] = bf16_to_f32(src[i]);
        break;
      }
      case DType::kF16: {
        const auto* src = static_cast<const std::uint16_t*>(t.data);
        for (std::int64_t i = 0; i < s.count; ++i) dst[i] = f16_to_f32(src[i]);
        break;
      }
      default:  // a block format
        throw InputError(t.path() + ": tensor " + s.name + " is stored as " + std::string(dtype_name(t.info->dtype)) +
                         "; training starts from f32, bf16 or f16 weights (a Hugging Face checkpoint)");
    }
  }
}

}  // namespace plexus
