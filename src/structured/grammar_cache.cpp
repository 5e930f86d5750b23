// LRU of compiled grammars.
#include "structured/grammar_cache.h"

#include "structured/grammar_parser.h"

namespace plexus::structured {

std::shared_ptr<const CompiledGrammar> GrammarCache::get(const std::string& text, const std::shared_ptr<const Vocabulary>& vocab,
                                                         const std::string& source) {
  const std::string key = vocab->key() + '\n' + text;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      ++hits_;
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  auto compiled = std::make_shared<const CompiledGrammar>(parse_grammar(text, source), vocab);
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ == 0 || index_.count(key)) return compiled;
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

std::size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

std::size_t GrammarCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

}  // namespace plexus::structured
