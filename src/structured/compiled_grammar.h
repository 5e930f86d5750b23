// A grammar bound to a vocabulary, with the token masks of the states it has met: what
// GrammarCache keeps, shared by every sequence constrained by the same grammar and model.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "structured/grammar.h"
#include "structured/vocabulary.h"

namespace plexus::structured {

// Allowed ids as bits: bit i of word i/64 set when id i may come next.
using TokenMask = std::vector<std::uint64_t>;

class CompiledGrammar {
 public:
  // max_cached_masks: masks kept (least recently used dropped first).
  CompiledGrammar(Grammar grammar, std::shared_ptr<const Vocabulary> vocab, std::size_t max_cached_masks = 2048);
  const Grammar& grammar() const { return grammar_; }
  const Vocabulary& vocab() const { return *vocab_; }

  // The mask cached for a matcher state key (ByteMatcher::state_key), or null. Thread-safe.
  std::shared_ptr<const TokenMask> cached_mask(const std::string& state) const;
  void store_mask(const std::string& state, std::shared_ptr<const TokenMask> mask) const;
  std::size_t cached_masks() const;

 private:
  Grammar grammar_;
  std::shared_ptr<const Vocabulary> vocab_;
  std::size_t max_masks_;
  // State key -> mask, most recently used first.
  using Entry = std::pair<std::string, std::shared_ptr<const TokenMask>>;
  mutable std::mutex mutex_;
  mutable std::list<Entry> lru_;
  mutable std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace plexus::structured
