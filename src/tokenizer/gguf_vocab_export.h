// The tokenizer.ggml.* metadata of a GGUF file (what llama.cpp reads) made from a Hugging Face
// tokenizer.json + tokenizer_config.json, for the GGUF files `plexus quantize` writes.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/gguf_file.h"

namespace plexus {

// PATH is a model directory (tokenizer.json, tokenizer_config.json beside it when present) or a
// tokenizer.json file. Returns the key/values in the order llama.cpp's converter writes them:
// tokenizer.ggml.model ("gpt2" for byte-level BPE, "llama" for SentencePiece-style BPE with
// "▁" and byte fallback), .pre, .tokens (id order; gaps "[PAD<id>]" typed unused), .scores
// ("llama": -rank of the last merge making a piece, -id for pieces no merge makes), .token_type,
// .merges ("gpt2": "a b"), .bos/.eos/.unknown/.padding_token_id when known, .add_bos_token,
// .add_eos_token, .add_space_prefix ("llama"), tokenizer.chat_template when the config has one.
// Empty when a directory has no tokenizer.json. InputError naming the file for a tokenizer
// llama.cpp could not run the same way (not BPE, or a byte-level regex it has no name for).
std::vector<std::pair<std::string, GgufValue>> gguf_tokenizer_metadata(const std::string& path);

}  // namespace plexus
