// One sequence's grammar state over tokens: the mask of ids that may come next (from the
// vocabulary trie, walked once per new state and then cached in the CompiledGrammar), and the
// advance on the chosen id. End-of-sequence ids are allowed exactly when the grammar is
// complete; when nothing else can follow, they are all that is allowed.
#pragma once
#include <memory>

#include "runtime/token_constraint.h"
#include "structured/byte_matcher.h"
#include "structured/compiled_grammar.h"

namespace plexus::structured {

class TokenMatcher : public TokenConstraint {
 public:
  explicit TokenMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // The ids allowed next (bits over the vocabulary).
  std::shared_ptr<const TokenMask> allowed();
  // False (state unchanged) when `id` is not allowed here.
  bool advance(std::int32_t id);
  bool complete() const { return bytes_.complete(); }
  bool ended() const { return ended_; }  // an end-of-sequence id was accepted

  // TokenConstraint
  bool mask(float* logits) override;
  void accept(std::int32_t id) override;  // InputError-free: a disallowed id throws RuntimeError

 private:
  void walk(std::uint32_t node, const std::vector<std::int32_t>& stacks, std::size_t depth, TokenMask& out);

  std::shared_ptr<const CompiledGrammar> grammar_;
  ByteMatcher bytes_;
  bool ended_ = false;
  std::vector<std::vector<std::int32_t>> scratch_;  // (trie depth) stack sets of the walk
};

}  // namespace plexus::structured
