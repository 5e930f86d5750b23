// SentencePiece vocabularies as llama.cpp runs them from GGUF ("llama" tokenizer model): pieces
// with scores and token types, encoded by score-ordered merging with <0xXX> byte fallback.
//
// Algorithm (llama.cpp's SPM tokenizer, written from its description): the text (spaces already
// replaced by U+2581 "▁") is split into UTF-8 characters, one symbol each. Every adjacent pair
// whose concatenation is a vocabulary piece is a candidate; the candidate whose piece has the
// highest score is merged first (ties: the leftmost), and the new symbol's neighbours become
// candidates. When no candidate is left, each symbol is its piece's id, or — for a character
// not in the vocabulary — the ids of its bytes' "<0xXX>" pieces (the unknown id if none).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_model.h"

namespace plexus {

// GGUF tokenizer.ggml.token_type values.
enum class GgufTokenType : std::int32_t {
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6
};

class SpmModel {
 public:
  // tokens[i] / scores[i] / types[i] describe id i (all three the same length).
  SpmModel(std::vector<std::string> tokens, std::vector<float> scores, std::vector<GgufTokenType> types,
           std::optional<std::int32_t> unk_id);

  // Appends the ids of `text` (valid UTF-8 whose spaces are already "▁").
  void tokenize(std::string_view text, std::vector<std::int32_t>& out) const;

  std::optional<std::int32_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(std::int32_t id) const;  // nullptr when out of range
  GgufTokenType type(std::int32_t id) const { return types_[static_cast<std::size_t>(id)]; }
  std::int32_t size() const { return static_cast<std::int32_t>(tokens_.size()); }
  // The text id stands for when decoding: "▁" -> " " for normal pieces, the byte for <0xXX>.
  std::string piece_text(std::int32_t id) const;

 private:
  void push_char(std::string_view ch, std::vector<std::int32_t>& out) const;

  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<GgufTokenType> types_;
  StringMap<std::int32_t> vocab_;
  std::optional<std::int32_t> unk_id_;
  std::int32_t byte_id_[256];  // id of "<0xXX>", -1 if none
};

}  // namespace plexus
