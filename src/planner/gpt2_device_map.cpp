// GPT2LMHeadModel's Hugging Face module tree for accelerate's strategies, and the map translation.
#include "planner/gpt2_device_map.h"

#include "core/error.h"
#include "planner/accelerate_planner.h"

namespace plexus {
namespace {

const char* const kGpt2Layers = "transformer.h.";

// The engine parameter whose dtype a Hugging Face GPT-2 parameter takes ("" for the layer's own).
std::string gpt2_engine_counterpart(const std::string& layer_part, const std::string& engine_layer) {
  if (layer_part == "attn.c_attn.weight") return engine_layer + ".self_attn.q_proj.weight";
  if (layer_part == "attn.c_attn.bias") return engine_layer + ".self_attn.q_proj.bias";
  if (layer_part == "attn.c_proj.weight") return engine_layer + ".self_attn.o_proj.weight";
  if (layer_part == "attn.c_proj.bias") return engine_layer + ".self_attn.o_proj.bias";
  if (layer_part == "ln_1.weight") return engine_layer + ".input_layernorm.weight";
  if (layer_part == "ln_1.bias") return engine_layer + ".input_layernorm.bias";
  if (layer_part == "ln_2.weight") return engine_layer + ".post_attention_layernorm.weight";
  if (layer_part == "ln_2.bias") return engine_layer + ".post_attention_layernorm.bias";
  if (layer_part == "mlp.c_fc.weight") return engine_layer + ".mlp.up_proj.weight";
  if (layer_part == "mlp.c_fc.bias") return engine_layer + ".mlp.up_proj.bias";
  if (layer_part == "mlp.c_proj.weight") return engine_layer + ".mlp.down_proj.weight";
  return engine_layer + ".mlp.down_proj.bias";  // mlp.c_proj.bias
}

// "transformer.h.12" -> 12; -1 for another name or an index outside the model.
int gpt2_layer_of(const std::string& name, std::int64_t layers) {
  const std::string p = kGpt2Layers;
  if (name.rfind(p, 0) != 0) return -1;
  const std::string index = name.substr(p.size());
  if (index.empty() || index.size() >= 10 || index.find_first_not_of("0123456789") != std::string::npos) return -1;
  const std::int64_t n = std::stoll(index);
  return n < layers ? static_cast<int>(n) : -1;
}

}  // namespace

ModuleTree gpt2_hf_module_tree(const ModuleTree& engine) {
  const ModelConfig& c = engine.config();
  const std::int64_t H = c.hidden_size, I = c.intermediate_size;
  std::vector<ParamInfo> params;
  auto add = [&](const std::string& module, const std::string& leaf, std::vector<std::int64_t> shape, int layer,
                 const std::string& counterpart) {
    const ParamInfo* e = engine.find(counterpart);
    params.push_back(ParamInfo{module + "." + leaf, module, std::move(shape), layer, std::nullopt, e ? e->dtype : std::nullopt});
  };
  add("transformer.wte", "weight", {c.vocab_size, H}, -1, "model.embed_tokens.weight");
  add("transformer.wpe", "weight", {c.max_position_embeddings, H}, -1, "model.embed_tokens.positions");
  for (int l = 0; l < c.num_layers; ++l) {  // GPT2Block: ln_1, attn (c_attn, c_proj), ln_2, mlp (c_fc, c_proj)
    const std::string p = kGpt2Layers + std::to_string(l), e = ModuleTree::layer_prefix(l);
    const struct {
      const char* module;
      std::vector<std::int64_t> weight, bias;
    } parts[] = {{"ln_1", {H}, {H}}, {"attn.c_attn", {3 * H, H}, {3 * H}}, {"attn.c_proj", {H, H}, {H}},
                 {"ln_2", {H}, {H}},  {"mlp.c_fc", {I, H}, {I}},          {"mlp.c_proj", {H, I}, {H}}};
    for (const auto& part : parts) {
      const std::string m = std::string(part.module);
      add(p + "." + m, "weight", part.weight, l, gpt2_engine_counterpart(m + ".weight", e));
      add(p + "." + m, "bias", part.bias, l, gpt2_engine_counterpart(m + ".bias", e));
    }
  }
  add("transformer.ln_f", "weight", {H}, -1, "model.norm.weight");
  add("transformer.ln_f", "bias", {H}, -1, "model.norm.bias");
  add("lm_head", "weight", {c.vocab_size, H}, -1, "model.embed_tokens.weight");
  params.back().tied_to = "transformer.wte.weight";
  return ModuleTree::from_params(c, std::move(params));
}

SizedTreeOptions gpt2_hf_sized_options() {
  SizedTreeOptions o;
  o.layer_prefix = kGpt2Layers;
  o.empty_modules = {{"transformer.drop", "transformer.h"}};
  return o;
}

bool gpt2_hf_named(const DeviceMap& map) {
  for (const auto& e : map.entries()) {
    if (prefix_covers("transformer", e.first) && !e.first.empty()) return true;
  }
  return false;
}

DeviceMap gpt2_engine_device_map(const DeviceMap& hf, const ModelConfig& c, std::vector<std::string>* notes) {
  DeviceMap out;
  for (const auto& [key, device] : hf.entries()) {
    std::string engine;
    if (key.empty() || key == "lm_head" || key == "lm_head.weight") {
      engine = key;
    } else if (key == "transformer") {
      engine = "model";
    } else if (key == "transformer.wte" || key == "transformer.wte.weight") {
      engine = "model.embed_tokens.weight";
    } else if (key == "transformer.wpe" || key == "transformer.wpe.weight") {
      engine = "model.embed_tokens.positions";
    } else if (key == "transformer.drop") {
      continue;  // dropout: no parameters
    } else if (key == "transformer.h") {
      engine = "model.layers";
    } else if (key == "transformer.ln_f") {
      engine = "model.norm";
    } else if (key == "transformer.ln_f.weight" || key == "transformer.ln_f.bias") {
      engine = "model.norm" + key.substr(std::string("transformer.ln_f").size());
    } else if (const int l = gpt2_layer_of(key, c.num_layers); l >= 0) {
      engine = ModuleTree::layer_prefix(l);
    } else if (const std::size_t dot = key.find('.', std::string(kGpt2Layers).size());
               dot != std::string::npos && gpt2_layer_of(key.substr(0, dot), c.num_layers) >= 0) {
      throw InputError("device map entry '" + key + "': GPT2Block is never split (accelerate's no_split_module_classes); map '" +
                       key.substr(0, dot) + "' whole");
    } else {
      throw InputError("device map entry '" + key + "' names no module of GPT2LMHeadModel (transformer, transformer.wte, "
                       "transformer.wpe, transformer.drop, transformer.h, transformer.h.0 … transformer.h." +
                       std::to_string(c.num_layers - 1) + ", transformer.ln_f, lm_head)");
    }
    out.set(engine, device);
  }
  const std::optional<DeviceId> wte = out.device_of("model.embed_tokens.weight"), wpe = out.device_of("model.embed_tokens.positions");
  if (wte && wpe && !(*wte == *wpe)) {
    out.set("model.embed_tokens.positions", *wte);
    if (notes) {
      notes->push_back("the map puts transformer.wpe on " + wpe->to_string() + " and transformer.wte on " + wte->to_string() +
                       ": plexus adds the positions with the token embedding, so it runs wpe on " + wte->to_string());
    }
  }
  return accelerate_clean_device_map(out);
}

}  // namespace plexus
