// Active parameters and expert reads of mixture-of-experts models.
#include "planner/moe_reads.h"

#include <cmath>

#include "core/checked.h"
#include "planner/sized_tree.h"

namespace plexus {

bool is_expert_param(const ModelConfig& c, const ParamInfo& p) {
  if (p.layer < 0 || !c.moe_layer(p.layer)) return false;
  return p.name.rfind(experts_module(c, p.layer) + ".", 0) == 0;
}

std::string experts_module(const ModelConfig& c, int layer) {
  std::string experts = moe_names(c.arch).experts;  // ".mlp.experts."
  experts.pop_back();
  return ModuleTree::layer_prefix(layer) + experts;
}

std::int64_t active_parameters(const ModuleTree& tree) {
  const ModelConfig& c = tree.config();
  std::int64_t total = 0;
  std::vector<std::int64_t> experts(static_cast<std::size_t>(c.num_layers), 0);  // (n_layer) expert parameters
  for (const ParamInfo& p : tree.params()) {
    if (p.tied_to) continue;
    total = checked_add(total, p.numel(), "the parameter count");
    if (is_expert_param(c, p)) experts[static_cast<std::size_t>(p.layer)] += p.numel();
  }
  for (const std::int64_t e : experts) {
    if (e > 0) total -= e - e / c.moe.num_experts * c.moe.experts_per_token;
  }
  return total;
}

double expected_experts_read(std::int64_t experts, std::int64_t top_k, double tokens) {
  const double E = static_cast<double>(experts), k = static_cast<double>(top_k);
  if (tokens <= 1) return k;
  return E * (1.0 - std::pow(1.0 - k / E, tokens));
}

std::int64_t layer_expert_bytes(const SizedTree& sized, const ModelConfig& c, int layer) {
  return c.moe_layer(layer) ? sized.size_of(experts_module(c, layer)) : 0;
}

std::int64_t active_weight_bytes(const SizedTree& sized, const ModelConfig& c) {
  std::int64_t b = sized.total_bytes();
  for (int l = 0; l < c.num_layers; ++l) {
    const std::int64_t e = layer_expert_bytes(sized, c, l);
    if (e > 0) b -= e - e / c.moe.num_experts * c.moe.experts_per_token;
  }
  return b;
}

}  // namespace plexus
