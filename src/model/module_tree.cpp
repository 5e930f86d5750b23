// Builds the parameter list of Llama / Mistral / Qwen2 / Qwen3 checkpoints.
#include "model/module_tree.h"

#include <algorithm>
#include <set>

#include "core/checked.h"
#include "core/error.h"
#include "model/checkpoint.h"
#include "model/gpt_oss_mxfp4.h"
#include "model/quant_policy.h"

namespace plexus {

std::int64_t ParamInfo::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) throw_overflow("the element count of '" + name + "'");  // the message only when needed
  }
  return n;
}

MoeNames moe_names(Arch arch) {
  if (arch == Arch::kMixtral) return {".block_sparse_moe.gate", ".block_sparse_moe.experts.", "w1", "w3", "w2", {"w1", "w2", "w3"}};
  if (arch == Arch::kGptOss) return {".mlp.router", ".mlp.experts.", "gate_proj", "up_proj", "down_proj", {"gate_proj", "up_proj", "down_proj"}};
  return {".mlp.gate", ".mlp.experts.", "gate_proj", "up_proj", "down_proj", {"gate_proj", "up_proj", "down_proj"}};
}

std::int64_t expert_index(const std::string& name, const MoeNames& n) {
  const std::string_view marker = n.experts;  // ".block_sparse_moe.experts." | ".mlp.experts."
  const std::size_t at = name.find(marker);
  if (at == std::string::npos) return -1;
  const std::size_t begin = at + marker.size(), end = name.find('.', begin);
  const std::string index = name.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  if (index.empty() || index.size() >= 10 || index.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(index);
}

std::vector<std::string> layer_matrix_names(const ModelConfig& c, int layer) {
  const std::string p = ModuleTree::layer_prefix(layer);
  std::vector<std::string> out;
  if (c.fused_qkv_gate_up()) {  // Phi-3: packed as q k v o gate up down, views of these four
    for (const char* m : {".self_attn.qkv_proj", ".self_attn.o_proj", ".mlp.gate_up_proj", ".mlp.down_proj"}) {
      out.push_back(p + m + ".weight");
    }
    return out;
  }
  for (const char* m : {".self_attn.q_proj", ".self_attn.k_proj", ".self_attn.v_proj", ".self_attn.o_proj"}) out.push_back(p + m + ".weight");
  if (!c.moe_layer(layer)) {
    for (const char* m : {".mlp.gate_proj", ".mlp.up_proj", ".mlp.down_proj"}) {
      if (c.arch != Arch::kGpt2 || std::string_view(m) != ".mlp.gate_proj") out.push_back(p + m + ".weight");  // GPT-2: no gate
    }
    return out;
  }
  if (c.arch == Arch::kGptOss && !c.moe.split_experts) {  // the experts fused: (E, H, 2·Ie) and (E, Ie, H)
    for (const char* m : {".mlp.router.weight", ".mlp.experts.gate_up_proj", ".mlp.experts.down_proj"}) out.push_back(p + m);
    return out;
  }
  const MoeNames n = moe_names(c.arch);
  out.push_back(p + n.router + ".weight");
  for (std::int64_t e = 0; e < c.moe.num_experts; ++e) {
    const std::string x = p + n.experts + std::to_string(e) + ".";
    for (const char* m : {n.gate, n.up, n.down}) out.push_back(x + m + ".weight");
  }
  return out;
}

std::vector<std::int64_t> fused_row_parts(const ModelConfig& c, const std::string& name) {
  if (!c.fused_qkv_gate_up()) return {};
  if (name.ends_with(".self_attn.qkv_proj.weight")) return {c.q_dim(), c.kv_dim(), c.kv_dim()};
  if (name.ends_with(".mlp.gate_up_proj.weight")) return {c.intermediate_size, c.intermediate_size};
  return {};
}

std::string ModuleTree::layer_prefix(int layer) { return "model.layers." + std::to_string(layer); }

ModuleTree ModuleTree::from_params(const ModelConfig& config, std::vector<ParamInfo> params) {
  ModuleTree t;
  t.config_ = config;
  t.params_ = std::move(params);
  t.index_names();
  return t;
}

ModuleTree ModuleTree::from_config(const ModelConfig& c) {
  ModuleTree t;
  t.config_ = c;
  auto add = [&](const std::string& module, const std::string& leaf, std::vector<std::int64_t> shape, int layer) {
    t.params_.push_back(ParamInfo{module + "." + leaf, module, std::move(shape), layer, std::nullopt, std::nullopt});
  };
  const std::int64_t H = c.hidden_size, Q = c.q_dim(), KV = c.kv_dim(), I = c.intermediate_size;
  add("model.embed_tokens", "weight", {c.vocab_size, H}, -1);
  // GPT-2's learned absolute positions (checkpoint_gpt2.cpp: wpe.weight), computed with the embedding.
  if (c.arch == Arch::kGpt2) add("model.embed_tokens", "positions", {c.max_position_embeddings, H}, -1);
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = layer_prefix(l);
    if (c.fused_qkv_gate_up()) {  // Phi3DecoderLayer, in its modules' declaration order
      add(p + ".self_attn.o_proj", "weight", {H, Q}, l);
      add(p + ".self_attn.qkv_proj", "weight", {Q + 2 * KV, H}, l);
      add(p + ".mlp.gate_up_proj", "weight", {2 * I, H}, l);
      add(p + ".mlp.down_proj", "weight", {H, I}, l);
      add(p + ".input_layernorm", "weight", {H}, l);
      add(p + ".post_attention_layernorm", "weight", {H}, l);
      continue;
    }
    add(p + ".self_attn.q_proj", "weight", {Q, H}, l);
    if (c.qkv_bias) add(p + ".self_attn.q_proj", "bias", {Q}, l);
    add(p + ".self_attn.k_proj", "weight", {KV, H}, l);
    if (c.qkv_bias) add(p + ".self_attn.k_proj", "bias", {KV}, l);
    add(p + ".self_attn.v_proj", "weight", {KV, H}, l);
    if (c.qkv_bias) add(p + ".self_attn.v_proj", "bias", {KV}, l);
    add(p + ".self_attn.o_proj", "weight", {H, Q}, l);
    if (c.o_bias) add(p + ".self_attn.o_proj", "bias", {H}, l);
    if (c.qk_norm) {
      add(p + ".self_attn.q_norm", "weight", {c.head_dim}, l);
      add(p + ".self_attn.k_norm", "weight", {c.head_dim}, l);
    }
    if (c.attention_sinks) add(p + ".self_attn", "sinks", {c.num_heads}, l);
    if (c.arch == Arch::kGptOss && !c.moe.split_experts) {  // GptOssMLP: router (weight, bias), experts fused over E
      const std::int64_t E = c.moe.num_experts, Ie = c.moe.expert_intermediate_size;
      add(p + ".mlp.router", "weight", {E, H}, l);
      add(p + ".mlp.router", "bias", {E}, l);
      add(p + ".mlp.experts", "gate_up_proj", {E, H, 2 * Ie}, l);
      add(p + ".mlp.experts", "gate_up_proj_bias", {E, 2 * Ie}, l);
      add(p + ".mlp.experts", "down_proj", {E, Ie, H}, l);
      add(p + ".mlp.experts", "down_proj_bias", {E, H}, l);
    } else if (c.moe_layer(l)) {
      const MoeNames n = moe_names(c.arch);
      const std::int64_t E = c.moe.num_experts, Ie = c.moe.expert_intermediate_size;
      add(p + n.router, "weight", {E, H}, l);
      for (std::int64_t e = 0; e < E; ++e) {
        const std::string x = p + n.experts + std::to_string(e);
        // In each architecture's module order (Mixtral: w1 w2 w3; Qwen3-MoE: gate up down).
        for (const char* part : n.order) {
          const std::string_view pv(part);
          add(x + "." + part, "weight", pv == n.down ? std::vector<std::int64_t>{H, Ie} : std::vector<std::int64_t>{Ie, H}, l);
        }
      }
      if (c.moe.biases) {  // gpt-oss from GGUF (MoeConfig::split_experts): the router's and experts' biases
        add(p + n.router, "bias", {E}, l);
        add(p + ".mlp.experts", "gate_proj_bias", {E, Ie}, l);
        add(p + ".mlp.experts", "up_proj_bias", {E, Ie}, l);
        add(p + ".mlp.experts", "down_proj_bias", {E, H}, l);
      }
    } else if (c.arch == Arch::kGpt2) {  // GPT2MLP: c_fc and c_proj with biases, no gate
      add(p + ".mlp.up_proj", "weight", {I, H}, l);
      add(p + ".mlp.up_proj", "bias", {I}, l);
      add(p + ".mlp.down_proj", "weight", {H, I}, l);
      add(p + ".mlp.down_proj", "bias", {H}, l);
    } else {
      add(p + ".mlp.gate_proj", "weight", {I, H}, l);
      add(p + ".mlp.up_proj", "weight", {I, H}, l);
      add(p + ".mlp.down_proj", "weight", {H, I}, l);
    }
    add(p + ".input_layernorm", "weight", {H}, l);
    if (c.arch == Arch::kGpt2) add(p + ".input_layernorm", "bias", {H}, l);  // LayerNorm
    add(p + ".post_attention_layernorm", "weight", {H}, l);
    if (c.arch == Arch::kGpt2) add(p + ".post_attention_layernorm", "bias", {H}, l);
    if (c.gemma) {  // Gemma's norms around the MLP
      add(p + ".pre_feedforward_layernorm", "weight", {H}, l);
      add(p + ".post_feedforward_layernorm", "weight", {H}, l);
    }
  }
  add("model.norm", "weight", {H}, -1);
  if (c.arch == Arch::kGpt2) add("model.norm", "bias", {H}, -1);
  add("lm_head", "weight", {c.vocab_size, H}, -1);
  if (c.tie_word_embeddings) t.params_.back().tied_to = "model.embed_tokens.weight";
  t.index_names();
  return t;
}

namespace {

// Tensors that checkpoints carry beside the model's parameters and that loading may ignore:
// rotary inverse frequencies (recomputed from config.json) and a stored copy of a tied lm_head.
bool ignorable_extra_tensor(const std::string& name, const ModelConfig& c) {
  const std::string inv_freq = "rotary_emb.inv_freq";
  if (name.size() >= inv_freq.size() && name.compare(name.size() - inv_freq.size(), inv_freq.size(), inv_freq) == 0) return true;
  return c.tie_word_embeddings && name == "lm_head.weight";
}

// config.json's name for the expert count.
std::string expert_count_key(const ModelConfig& c) { return c.arch == Arch::kMixtral ? "num_local_experts" : "num_experts"; }

// The experts a MoE checkpoint holds per layer: 1 + the largest index E of "….experts.E.…" (0 for
// a dense config).
std::int64_t experts_held(const Checkpoint& ck, const ModelConfig& c) {
  if (!c.is_moe()) return 0;
  const MoeNames n = moe_names(c.arch);
  std::int64_t held = 0;
  for (const std::string& name : ck.names()) held = std::max(held, expert_index(name, n) + 1);
  return held;
}

// A checkpoint holding tensors config.json does not describe (more layers than
// num_hidden_layers, another architecture's weights) was written for another config.json:
// running it would silently ignore weights.
void check_no_unexpected_tensors(const ModuleTree& t, const ModelConfig& c, const Checkpoint& ck) {
  std::set<std::string> expected;
  for (const ParamInfo& p : t.params()) {
    if (c.arch == Arch::kGptOss && !c.moe.split_experts && p.dtype == DType::kMXFP4) {  // HF's MXFP4 experts: two parts
      expected.insert(p.name + kMxfp4BlocksSuffix);
      expected.insert(p.name + kMxfp4ScalesSuffix);
    } else {
      expected.insert(p.name);
    }
  }
  std::int64_t max_layer = -1;
  std::vector<std::string> unexpected;
  const std::string layer_prefix = "model.layers.";
  for (const std::string& name : ck.names()) {
    if (expected.count(name) || ignorable_extra_tensor(name, c)) continue;
    unexpected.push_back(name);
    if (name.rfind(layer_prefix, 0) == 0) {
      const std::size_t end = name.find('.', layer_prefix.size());
      const std::string index = name.substr(layer_prefix.size(), end - layer_prefix.size());
      if (!index.empty() && index.size() < 10 && index.find_first_not_of("0123456789") == std::string::npos) {
        max_layer = std::max<std::int64_t>(max_layer, std::stoll(index));
      }
    }
  }
  if (unexpected.empty()) return;
  if (max_layer >= c.num_layers) {
    throw InputError(ck.dir() + ": the checkpoint holds " + std::to_string(max_layer + 1) +
                     " decoder layers (up to '" + layer_prefix + std::to_string(max_layer) +
                     "') but config.json says num_hidden_layers " + std::to_string(c.num_layers) +
                     ": is config.json for this checkpoint?");
  }
  throw InputError(ck.dir() + ": the checkpoint holds " + std::to_string(unexpected.size()) + " tensor(s) that config.json (" +
                   std::string(arch_name(c.arch)) + ") does not describe, e.g. '" + unexpected.front() +
                   "': is config.json for this checkpoint?");
}

}  // namespace

ModuleTree ModuleTree::from_checkpoint(const ModelConfig& c, const Checkpoint& ck) {
  if (const std::int64_t held = experts_held(ck, c); held > 0 && held != c.moe.num_experts) {
    throw InputError(ck.dir() + ": the checkpoint holds " + std::to_string(held) + " experts per layer but config.json says " +
                     expert_count_key(c) + " " + std::to_string(c.moe.num_experts) + ": is config.json for this checkpoint?");
  }
  ModuleTree t = from_config(c);
  for (ParamInfo& p : t.params_) {
    if (p.tied_to) {  // Hugging Face ties these even when the file also stores lm_head
      p.dtype = ck.get(*p.tied_to).info->dtype;
      continue;
    }
    if (c.arch == Arch::kGptOss && p.shape.size() == 3 && p.name.ends_with("_proj")) {
      if (const std::optional<Mxfp4Experts> m = gpt_oss_mxfp4_experts(ck, c, p.name)) {  // checked there
        p.shape = {m->experts, m->rows, m->cols};  // as stored: outputs first, blocks along the inputs
        p.dtype = DType::kMXFP4;
        continue;
      }
    }
    if (!ck.contains(p.name)) {
      throw InputError(ck.dir() + ": checkpoint lacks tensor '" + p.name + "' that config.json (" +
                       std::string(arch_name(c.arch)) + ") requires");
    }
    const TensorRef r = ck.get(p.name);
    if (r.info->shape != p.shape) {
      std::string got, want;
      for (auto d : r.info->shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
      for (auto d : p.shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      // A renamed tensor (GPT-2's, checkpoint_gpt2.cpp) is named as the file names it too.
      const std::string stored = r.info->name != p.name ? " (from the file's '" + r.info->name + "')" : "";
      throw InputError(r.path() + ": tensor '" + p.name + "'" + stored + " has shape [" + got + "] but config.json implies [" +
                       want + "]");
    }
    if (!r.info->dtype_supported) {
      std::string read = "F32, BF16, F16";
      for (DType t : kBlockFormats) read += ", " + std::string(dtype_name(t));
      read += "; and, converted to Q8_0 as the file opens, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S";
      throw InputError(r.path() + ": tensor '" + p.name + "' has dtype " + r.info->dtype_name + "; supported: " + read);
    }
    p.dtype = r.info->dtype;
  }
  check_no_unexpected_tensors(t, c, ck);
  return t;
}

void ModuleTree::quantize_as(QuantMix mix) {
  const QuantModelFacts facts = quant_model_facts(config_);
  for (ParamInfo& p : params_) {
    if (p.tied_to || p.shape.size() != 2) continue;
    const std::optional<DType> t = quant_mix_type(mix, p.name, p.shape, facts);
    if (!t || (p.dtype && *p.dtype == *t)) continue;
    if (p.dtype && dtype_is_block(*p.dtype)) {
      throw InputError("tensor '" + p.name + "' is already quantised (" + std::string(dtype_name(*p.dtype)) +
                       "); --quantize converts f32/bf16/f16 checkpoints: run the file as stored, without --quantize");
    }
    p.dtype = *t;
  }
}

bool ModuleTree::quantized() const {
  for (const ParamInfo& p : params_) {
    if (p.dtype && dtype_is_block(*p.dtype)) return true;
  }
  return false;
}

void ModuleTree::index_names() {
  by_name_.clear();
  by_name_.reserve(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) by_name_.emplace(params_[i].name, i);  // the first of a repeated name
}

const ParamInfo* ModuleTree::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &params_[it->second];
}

}  // namespace plexus
