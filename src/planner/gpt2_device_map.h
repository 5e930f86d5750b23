// GPT2LMHeadModel as accelerate sees it, in Hugging Face's module names (transformer.wte,
// transformer.wpe, transformer.drop, transformer.h.N, transformer.ln_f, lm_head), and device maps
// in those names translated to the engine's (model/checkpoint_gpt2.cpp's renames).
#pragma once
#include <string>
#include <vector>

#include "model/module_tree.h"
#include "planner/device_map.h"
#include "planner/sized_tree.h"

namespace plexus {

// GPT2LMHeadModel's parameters in named_parameters order (c_attn fused, each Conv1D weight given
// (out, in) so that a block format sizes it as the engine's views), dtypes as the engine tree's
// counterparts; lm_head.weight tied to transformer.wte.weight.
ModuleTree gpt2_hf_module_tree(const ModuleTree& engine);
// SizedTree options for that tree: GPT2Block ("transformer.h.N") never split, and the
// parameterless transformer.drop between transformer.wpe and transformer.h.
SizedTreeOptions gpt2_hf_sized_options();

// Whether a map names GPT-2's modules as Hugging Face does (an entry "transformer" or "transformer.…").
bool gpt2_hf_named(const DeviceMap& map);

// The engine's map for a map in Hugging Face names (cleaned as accelerate's clean_device_map):
// transformer → model, transformer.wte → model.embed_tokens.weight, transformer.wpe →
// model.embed_tokens.positions, transformer.h[.N] → model.layers[.N], transformer.ln_f →
// model.norm; transformer.drop holds nothing. The engine adds the positions with the token
// embedding, so wpe placed apart from wte runs on wte's device: a note says so. InputError for an
// entry naming no module of GPT2LMHeadModel, or a part of a GPT2Block.
DeviceMap gpt2_engine_device_map(const DeviceMap& hf, const ModelConfig& config, std::vector<std::string>* notes);

}  // namespace plexus
