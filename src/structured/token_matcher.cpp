// The trie walk: from the current stacks, each trie edge is one byte step; a subtree is cut as
// soon as no stack survives, and every token ending at a surviving node is allowed.
#include "structured/token_matcher.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace plexus::structured {

TokenMatcher::TokenMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), bytes_(grammar_->grammar()) {
  scratch_.resize(grammar_->vocab().trie().max_depth() + 1);
}

void TokenMatcher::walk(std::uint32_t node, const std::vector<std::int32_t>& stacks, std::size_t depth, TokenMask& out) {
  const auto& nodes = grammar_->vocab().trie().nodes();
  const auto& ids = grammar_->vocab().trie().token_ids();
  std::vector<std::int32_t>& next = scratch_[depth];
  for (std::uint32_t c = node + 1; c < nodes[node].end; c = nodes[c].end) {
    const ByteMatcher::Mark m = bytes_.mark();
    bool complete = false;
    bytes_.step(stacks, nodes[c].byte, next, complete);
    if (!next.empty() || complete) {
      for (std::uint32_t t = nodes[c].tokens_begin; t < nodes[c].tokens_end; ++t) {
        const auto id = static_cast<std::uint32_t>(ids[t]);
        out[id >> 6] |= std::uint64_t{1} << (id & 63);
      }
      if (!next.empty()) walk(c, next, depth + 1, out);
    }
    bytes_.rollback(m);
  }
}

std::shared_ptr<const TokenMask> TokenMatcher::allowed() {
  const Vocabulary& v = grammar_->vocab();
  if (ended_) return std::make_shared<const TokenMask>((v.size() + 63) / 64, 0);
  const std::string key = bytes_.state_key();
  if (auto hit = grammar_->cached_mask(key)) return hit;
  auto mask = std::make_shared<TokenMask>((v.size() + 63) / 64, 0);
  if (bytes_.can_continue()) {
    const std::vector<std::int32_t> stacks = bytes_.stacks();
    bytes_.set_trial(true);
    walk(0, stacks, 0, *mask);
    bytes_.set_trial(false);
  }
  if (bytes_.complete()) {
    for (std::int32_t e : v.eos_ids()) {
      if (e >= 0 && e < v.size()) (*mask)[static_cast<std::size_t>(e) >> 6] |= std::uint64_t{1} << (e & 63);
    }
  }
  grammar_->store_mask(key, mask);
  return mask;
}

bool TokenMatcher::advance(std::int32_t id) {
  if (ended_) return false;
  const Vocabulary& v = grammar_->vocab();
  if (v.is_eos(id)) {
    if (!bytes_.complete()) return false;
    ended_ = true;
    return true;
  }
  const std::optional<std::string>& b = v.bytes(id);
  if (!b || b->empty()) return false;
  return bytes_.advance(*b);
}

bool TokenMatcher::mask(float* logits) {
  const std::shared_ptr<const TokenMask> allow = allowed();
  const std::int64_t n = grammar_->vocab().size();
  const float minus_inf = -std::numeric_limits<float>::infinity();
  bool any = false;
  for (std::int64_t w = 0; w < static_cast<std::int64_t>(allow->size()); ++w) {
    const std::uint64_t bits = (*allow)[static_cast<std::size_t>(w)];
    any = any || bits != 0;
    if (bits == ~std::uint64_t{0}) continue;
    const std::int64_t end = std::min(n, (w + 1) * 64);
    for (std::int64_t i = w * 64; i < end; ++i) {
      if (!((bits >> (i & 63)) & 1)) logits[i] = minus_inf;
    }
  }
  return any;
}

void TokenMatcher::accept(std::int32_t id) {
  if (!advance(id)) {
    throw RuntimeError("structured output: token id " + std::to_string(id) +
                       " was chosen although the grammar does not allow it here (a bug: please report it)");
  }
}

}  // namespace plexus::structured
