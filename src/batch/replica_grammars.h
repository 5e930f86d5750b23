// What a replica needs to run structured requests: the model's vocabulary as grammars see it
// (every token's bytes in a trie: built once per replica, on the first request that needs it)
// and the grammars it compiled (kept for reuse by text, as serve's GrammarCache).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "runtime/token_constraint.h"
#include "structured/grammar_cache.h"
#include "structured/vocabulary.h"

namespace plexus::batch {

class ReplicaGrammars {
 public:
  using VocabularyFactory = std::function<structured::Vocabulary()>;
  // `make`: builds the vocabulary (may throw InputError: e.g. no tokenizer or end-of-sequence id).
  explicit ReplicaGrammars(VocabularyFactory make) : make_(std::move(make)) {}

  // A new matcher of the grammar `text` (`source` names it in messages): one per choice. Throws
  // InputError when the vocabulary cannot be built or the grammar does not compile.
  std::unique_ptr<TokenConstraint> constraint(const std::string& text, const std::string& source);
  bool vocabulary_built() const { return vocab_ != nullptr; }
  const structured::GrammarCache& cache() const { return cache_; }

 private:
  VocabularyFactory make_;
  std::shared_ptr<const structured::Vocabulary> vocab_;  // null until a request needs it
  structured::GrammarCache cache_;
};

}  // namespace plexus::batch
