// tokenizer.json "decoder": turns token strings back into text (ByteLevel, ByteFallback,
// Metaspace, Replace, Fuse, Strip, Sequence), plus transformers' clean_up_tokenization_spaces.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the token list in place (HF's decode_chain); the result is joined with no separator.
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // The bytes one token adds to a text it does not begin (structured output's vocabulary):
  // `piece` rewritten in place, byte-level and <0xHH> spellings as raw bytes, invalid UTF-8 kept.
  virtual void piece_bytes(std::string& piece) const = 0;
};

// Builds the decoder in `spec` (null gives nullptr: tokens are then joined with spaces).
std::unique_ptr<Decoder> make_decoder(const Json& spec, const std::string& where);

// transformers' clean_up_tokenization: " ." -> ".", " n't" -> "n't", " 's" -> "'s", etc.
std::string clean_up_tokenization_spaces(std::string text);

}  // namespace plexus
