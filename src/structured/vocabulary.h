// The model's vocabulary as structured output sees it: each token id's bytes (Tokenizer::
// token_bytes), the end-of-sequence ids, and a byte trie of every token a grammar may choose.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plexus {
class Tokenizer;
}

namespace plexus::structured {

// Tokens in a trie laid out in depth-first order: node i's children are i+1 .. end-1, each
// child's subtree ending where the next child starts. Node 0 is the root (the empty prefix).
class TokenTrie {
 public:
  struct Node {
    std::uint8_t byte = 0;          // the byte leading here from the parent
    std::uint32_t end = 0;          // one past the last node of this subtree
    std::uint32_t tokens_begin = 0, tokens_end = 0;  // ids (in token_ids()) whose bytes end here
  };
  // `bytes[id]`: the token's bytes; nullopt or empty leaves the id out.
  explicit TokenTrie(const std::vector<std::optional<std::string>>& bytes);
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<std::int32_t>& token_ids() const { return ids_; }
  std::size_t max_depth() const { return max_depth_; }

 private:
  std::vector<Node> nodes_;
  std::vector<std::int32_t> ids_;
  std::size_t max_depth_ = 0;
};

class Vocabulary {
 public:
  // size: the model's vocabulary (logit rows; may exceed the tokenizer's, those ids never
  // allowed); bytes[id] as Tokenizer::token_bytes (nullopt: special, never chosen by a grammar);
  // eos_ids: allowed exactly when the grammar is complete.
  Vocabulary(std::int64_t size, std::vector<std::optional<std::string>> bytes, std::vector<std::int32_t> eos_ids);

  std::int64_t size() const { return size_; }
  const std::optional<std::string>& bytes(std::int32_t id) const;
  bool is_eos(std::int32_t id) const;
  const std::vector<std::int32_t>& eos_ids() const { return eos_ids_; }
  const TokenTrie& trie() const { return trie_; }
  // A hash of every token's bytes, the end-of-sequence ids and the size: what compiled grammars
  // are cached under (equal for equal vocabularies, whatever object holds them).
  const std::string& key() const { return key_; }

 private:
  std::int64_t size_;
  std::vector<std::optional<std::string>> bytes_;
  std::vector<std::int32_t> eos_ids_;
  TokenTrie trie_;
  std::string key_;
};

// The vocabulary of a model with this tokenizer: `model_vocab` logits, end-of-sequence ids
// `eos_ids` (InputError when empty: a grammar needs one to end the output).
Vocabulary vocabulary_from_tokenizer(const Tokenizer& tok, std::int64_t model_vocab, const std::vector<std::int64_t>& eos_ids);

}  // namespace plexus::structured
