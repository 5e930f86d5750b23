// What a mixture-of-experts model reads per token (pure arithmetic over its ModuleTree): the
// active parameters, the experts a batch of tokens reads together, and which tensors are experts.
#pragma once
#include <cstdint>
#include <string>

#include "model/module_tree.h"

namespace plexus {

class SizedTree;

// Whether parameter `p` is a weight of one expert of a mixture-of-experts layer (not its router).
bool is_expert_param(const ModelConfig& config, const ParamInfo& p);
// The module holding layer l's experts ("model.layers.3.block_sparse_moe.experts"), for device
// maps; layer l must be a mixture-of-experts layer.
std::string experts_module(const ModelConfig& config, int layer);

// The parameters one token reads: every parameter once (tied ones once), less the E − k experts it
// does not run in each mixture-of-experts layer (the experts of a layer are all the same size).
// The total for a dense model.
std::int64_t active_parameters(const ModuleTree& tree);

// The expected number of distinct experts of one layer that `tokens` tokens read, each routed to
// k of E experts: E·(1 − (1 − k/E)^tokens), as if each token picked its k uniformly and
// independently (a router balanced over a batch; real routers are a little more concentrated,
// so this is an upper estimate of the bytes). 1 token: k; many tokens: E.
double expected_experts_read(std::int64_t experts, std::int64_t top_k, double tokens);

// Bytes of layer l's expert matrices as `sized` sizes them (0 for a dense layer).
std::int64_t layer_expert_bytes(const SizedTree& sized, const ModelConfig& config, int layer);

// Bytes of the weights one token reads: sized.total_bytes() less, per mixture-of-experts layer,
// the (E − k)/E share of its experts' bytes.
std::int64_t active_weight_bytes(const SizedTree& sized, const ModelConfig& config);

}  // namespace plexus
