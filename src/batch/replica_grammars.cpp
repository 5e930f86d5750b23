// A replica's vocabulary and compiled grammars (batch/replica_grammars.h).
#include "batch/replica_grammars.h"

#include "core/error.h"
#include "structured/token_matcher.h"

namespace plexus::batch {

std::unique_ptr<TokenConstraint> ReplicaGrammars::constraint(const std::string& text, const std::string& source) {
  if (!vocab_) {
    if (!make_) throw InputError("structured output needs the model's tokenizer.json, and this replica has none");
    vocab_ = std::make_shared<const structured::Vocabulary>(make_());
  }
  return std::make_unique<structured::TokenMatcher>(cache_.get(text, vocab_, source));
}

}  // namespace plexus::batch
