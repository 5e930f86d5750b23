// Module trees of real model shapes for planner tests (config fields as in the golden file).
#pragma once
#include "model/config.h"
#include "model/module_tree.h"

namespace plexus::testing {

inline ModuleTree tree_of(const char* model_type, long long hidden, long long layers, long long heads, long long kv_heads,
                          long long head_dim, long long inter, long long vocab, bool tied) {
  Json j{{"model_type", model_type}, {"hidden_size", hidden},     {"num_hidden_layers", layers},
         {"num_attention_heads", heads}, {"num_key_value_heads", kv_heads}, {"head_dim", head_dim},
         {"intermediate_size", inter}, {"vocab_size", vocab},     {"tie_word_embeddings", tied}};
  return ModuleTree::from_config(parse_model_config(j, "test config"));
}
inline ModuleTree llama3_8b() { return tree_of("llama", 4096, 32, 32, 8, 128, 14336, 128256, false); }
inline ModuleTree llama3_70b() { return tree_of("llama", 8192, 80, 64, 8, 128, 28672, 128256, false); }
inline ModuleTree smollm_135m() { return tree_of("llama", 576, 30, 9, 3, 64, 1536, 49152, true); }
inline ModuleTree qwen2_05b() { return tree_of("qwen2", 896, 24, 14, 2, 64, 4864, 151936, true); }
inline ModuleTree tiny_llama() { return tree_of("llama", 64, 4, 4, 2, 16, 176, 32000, false); }
// A 126-layer model shaped like Llama-3.1-405B.
inline ModuleTree llama_405b() { return tree_of("llama", 16384, 126, 128, 8, 128, 53248, 128256, false); }

}  // namespace plexus::testing
