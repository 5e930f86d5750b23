// Compiled grammars kept for reuse, keyed by grammar text and vocabulary (Vocabulary::key), least
// recently used dropped first. One object, passed to whoever compiles (generate, later serve).
#pragma once
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "structured/compiled_grammar.h"

namespace plexus::structured {

class GrammarCache {
 public:
  explicit GrammarCache(std::size_t capacity = 64) : capacity_(capacity) {}
  // The grammar `text` (grammar_parser.h) bound to `vocab`: parsed once, then from the cache.
  // `source` names the text in InputErrors. Thread-safe.
  std::shared_ptr<const CompiledGrammar> get(const std::string& text, const std::shared_ptr<const Vocabulary>& vocab,
                                             const std::string& source = "grammar");
  std::size_t size() const;
  std::size_t hits() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CompiledGrammar>>;
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::size_t hits_ = 0;
};

}  // namespace plexus::structured
