// The pieces a Tokenizer is assembled from (tokenizer.json or GGUF metadata); internal to
// src/tokenizer.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_vocab.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/spm_model.h"

namespace plexus {

struct TokenizerParts {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<BpeModel> model;  // null when `spm` is set
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  AddedVocab added;
  std::vector<int> added_by_id;  // id -> index into added.tokens(), -1 for model tokens
  bool has_normalized_added = false;
  bool clean_up_spaces = false;
  std::optional<std::int32_t> bos, eos;
  std::int32_t vocab_size = 0;
  std::optional<std::string> chat_template;
  // GGUF "llama" vocabularies: llama.cpp's SentencePiece tokenizer instead of normalizer /
  // pre-tokenizer / BPE; text after the start or an added token gets a "▁" when add_space_prefix.
  std::unique_ptr<SpmModel> spm;
  bool add_space_prefix = false;
};

}  // namespace plexus
