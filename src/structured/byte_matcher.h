// A grammar run over bytes as a set of stacks (a pushdown automaton that follows every
// alternative at once): each stack is a chain of frames "continue at this element, then return
// to the parent frame", its top frame waiting at a byte set. Frames are shared between stacks and
// interned (one node per (element, parent) pair), so equal stacks are the same node.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "structured/grammar.h"

namespace plexus::structured {

class ByteMatcher {
 public:
  // Starts at the beginning of g's root rule; g must outlive the matcher.
  explicit ByteMatcher(const Grammar& g);

  // Consumes one byte; false (and the state unchanged) when the grammar does not allow it here.
  bool advance(std::uint8_t byte);
  // Consumes all of `bytes`; false (state unchanged) when some byte is not allowed.
  bool advance(std::string_view bytes);
  bool complete() const { return complete_; }              // the root rule may end here
  bool can_continue() const { return !stacks_.empty(); }   // some byte may follow
  // The state as text (the element positions of every stack, sorted): equal keys allow the same
  // continuations, whatever matcher they come from.
  std::string state_key() const;

  // --- Used by the token mask's trie walk: trial steps from any stack set, undone by rollback.
  struct Mark {
    std::size_t nodes, log;
  };
  const std::vector<std::int32_t>& stacks() const { return stacks_; }
  // Successors of `from` on `byte` into `to` (cleared first); `complete`: the root may end after it.
  void step(const std::vector<std::int32_t>& from, std::uint8_t byte, std::vector<std::int32_t>& to, bool& complete);
  Mark mark() const { return {nodes_.size(), log_.size()}; }
  void rollback(const Mark& m);
  // Trial mode (the trie walk): frames made by step() are not interned, only stacks whose
  // top frames are equal are merged: cheaper, and undone by rollback all the same.
  void set_trial(bool on) { trial_ = on; }

 private:
  struct Node {
    std::uint32_t pos;    // element index: a kBytes or kRule element, never kEnd
    std::int32_t parent;  // node to return to; -1: the root rule ends
  };
  std::int32_t intern(std::uint32_t pos, std::int32_t parent);
  std::int32_t after(std::uint32_t pos, std::int32_t parent);  // the node continuing past elements[pos]
  void expand(std::int32_t node, std::vector<std::int32_t>& out, bool& complete);

  const Grammar& g_;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> seen_;  // (nodes_) the step that last expanded each node
  std::uint32_t epoch_ = 0;
  std::unordered_map<std::uint64_t, std::int32_t> ids_;  // (pos, parent) -> node
  std::vector<std::uint64_t> log_;                        // ids_ keys in insertion order, for rollback
  std::vector<std::int32_t> stacks_;                      // top nodes, each at a kBytes element
  bool complete_ = false;
  bool trial_ = false;
  std::vector<std::int32_t> scratch_;
};

// Whether all of `text` is a sentence of the grammar (its root rule matches it exactly).
bool grammar_accepts(const Grammar& g, std::string_view text);

}  // namespace plexus::structured
