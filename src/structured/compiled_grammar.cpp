// The per-state mask cache (least recently used out first).
#include "structured/compiled_grammar.h"

namespace plexus::structured {

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const Vocabulary> vocab, std::size_t max_cached_masks)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), max_masks_(max_cached_masks) {}

std::shared_ptr<const TokenMask> CompiledGrammar::cached_mask(const std::string& state) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(state);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void CompiledGrammar::store_mask(const std::string& state, std::shared_ptr<const TokenMask> mask) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (max_masks_ == 0 || index_.count(state)) return;
  lru_.emplace_front(state, std::move(mask));
  index_[state] = lru_.begin();
  while (lru_.size() > max_masks_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

std::size_t CompiledGrammar::cached_masks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

}  // namespace plexus::structured
