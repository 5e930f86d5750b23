// GGUF models as the rest of plexus sees them: the hyper-parameters from the file's metadata (as
// a ModelConfig) and the Hugging Face name of each tensor llama.cpp's converter renamed.
#pragma once
#include <optional>
#include <span>
#include <string>

#include "core/gguf_file.h"
#include "model/config.h"

namespace plexus {

// Whether PATH names a GGUF model: a regular file that starts with the GGUF magic.
bool is_gguf_model_path(const std::string& path);

// The config of a GGUF model (general.architecture llama | qwen2 | qwen3): sizes from
// `<arch>.*` keys, vocab from the embedding tensor or the token list, tied embeddings when there
// is no output.weight, bos/eos from tokenizer.ggml.*; rope_interleaved for llama (its q/k rows
// were permuted by llama.cpp's converter); llama3-style rope factors from rope_freqs.weight.
// InputError naming the file and key otherwise.
ModelConfig gguf_model_config(const GgufFile& file);

// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight", "token_embd.weight" ->
// "model.embed_tokens.weight", ...; nullopt for tensors with no Hugging Face counterpart.
std::optional<std::string> hf_name_of_gguf_tensor(const std::string& name);

// The names llama.cpp and Hugging Face give one tensor: whole names outside the layers
// ("token_embd.weight" ↔ "model.embed_tokens.weight"), and the part of decoder layer N between
// the layer and ".weight"/".bias" ("attn_q" ↔ "self_attn.q_proj"). One table for both directions.
struct GgufNamePair {
  const char* gguf;
  const char* hf;
};
std::span<const GgufNamePair> gguf_top_level_names();
std::span<const GgufNamePair> gguf_layer_part_names();

}  // namespace plexus
