// The quantisation flags' values and the projections policy.
#include "model/quant_policy.h"

#include <cctype>
#include <vector>

#include "core/error.h"
#include "core/nearest_name.h"
#include "model/config.h"

namespace plexus {

bool quantised_by_policy(std::string_view name) {
  constexpr std::string_view kSuffixes[] = {
      ".self_attn.q_proj.weight", ".self_attn.k_proj.weight", ".self_attn.v_proj.weight",
      ".self_attn.o_proj.weight", ".mlp.gate_proj.weight",    ".mlp.up_proj.weight",
      ".mlp.down_proj.weight"};
  for (std::string_view s : kSuffixes) {
    if (name.size() > s.size() && name.substr(name.size() - s.size()) == s) return true;
  }
  return name.find(".experts.") != std::string_view::npos && name.ends_with(".weight");  // MoE experts' projections
}

QuantMix quantize_flag(std::string_view flag, std::string_view value) {
  if (const std::optional<QuantMix> m = parse_quant_mix(value)) return *m;
  std::vector<std::string> names;
  for (const QuantMixInfo& m : quant_mixes()) names.emplace_back(m.name);
  std::string up(value);
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  throw InputError(std::string(flag) + ": unknown quantisation mix '" + std::string(value) + "'" + did_you_mean(up, names) +
                   "; the mixes are " + quant_mix_list());
}

QuantModelFacts quant_model_facts(const ModelConfig& c) {
  QuantModelFacts f;
  f.n_layers = c.num_layers;
  f.n_heads = c.num_heads;
  f.n_kv_heads = c.num_kv_heads;
  f.tied_embeddings = c.tie_word_embeddings;
  f.n_experts = c.moe.num_experts;
  return f;
}

}  // namespace plexus
