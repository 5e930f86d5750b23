// The numbers of a deployment that vLLM, TGI or TEI serves, sized from config.json and the
// safetensors headers alone (checkpoint_facts.h), so any architecture those engines serve gets its
// files, whether or not plexus can run it. Rules: docs/deploy.md "Sizing for vLLM, TGI and TEI".
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "deploy/checkpoint_facts.h"
#include "deploy/deploy_plan.h"

namespace plexus::deploy {

// What one GPU (or, on CPUs, the host) holds for vLLM / TGI with `tp` tensor-parallel ranks and
// `pp` pipeline stages: an even share of the weights, the KV cache of its layers and KV heads for
// every sequence's whole context, and one forward pass's activations.
struct EngineMemory {
  std::int64_t weights = 0;      // weights / (tp × pp)
  std::int64_t kv_cache = 0;     // 2 × ceil(layers / pp) × ceil(KV heads / tp) × head_dim × 2 bytes × context × sequences
  std::int64_t activations = 0;  // batch tokens × (4 × vocab + 32 × hidden): float32 logits, 16 hidden-sized 2-byte buffers
  std::int64_t total() const { return weights + kv_cache + activations; }
};

EngineMemory engine_memory(std::int64_t weight_bytes, const AttentionShape& attention, int tp, int pp, std::int64_t context,
                           int sequences, std::int64_t batch_tokens);

// Fills out.devices, out.numbers and out.sizing for req.api_type vLLM, TGI or TEI (InputError for
// every bad input, as plan_deployment). `gpus` are the inventory's.
void plan_for_engine(const DeployRequest& req, const Inventory& inventory, const std::vector<SelectedGpu>& gpus, DeployPlan& out);

}  // namespace plexus::deploy
