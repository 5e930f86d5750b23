// Stack-set stepping with interned frames: a byte moves every stack whose top byte set holds it
// one element on, then expands rule references (each alternative a new stack) and pops finished
// alternatives, until every stack waits at a byte set again or the root has ended.
#include "structured/byte_matcher.h"

#include <algorithm>

namespace plexus::structured {

ByteMatcher::ByteMatcher(const Grammar& g) : g_(g) {
  ++epoch_;
  for (std::uint32_t alt : g_.rules[g_.root]) {
    if (g_.elements[alt].kind == ElementKind::kEnd) {
      complete_ = true;
    } else {
      expand(intern(alt, -1), stacks_, complete_);
    }
  }
}

std::int32_t ByteMatcher::intern(std::uint32_t pos, std::int32_t parent) {
  if (trial_) {
    nodes_.push_back({pos, parent});
    seen_.push_back(0);
    return static_cast<std::int32_t>(nodes_.size() - 1);
  }
  const std::uint64_t key = (std::uint64_t{pos} << 32) | static_cast<std::uint32_t>(parent + 1);
  auto [it, fresh] = ids_.try_emplace(key, static_cast<std::int32_t>(nodes_.size()));
  if (fresh) {
    nodes_.push_back({pos, parent});
    seen_.push_back(0);
    log_.push_back(key);
  }
  return it->second;
}

std::int32_t ByteMatcher::after(std::uint32_t pos, std::int32_t parent) {
  return g_.elements[pos + 1].kind == ElementKind::kEnd ? parent : intern(pos + 1, parent);
}

void ByteMatcher::expand(std::int32_t node, std::vector<std::int32_t>& out, bool& complete) {
  if (node < 0) {
    complete = true;
    return;
  }
  if (seen_[static_cast<std::size_t>(node)] == epoch_) return;  // expanded already in this step
  seen_[static_cast<std::size_t>(node)] = epoch_;
  const Node n = nodes_[static_cast<std::size_t>(node)];
  const Element e = g_.elements[n.pos];
  if (e.kind == ElementKind::kBytes) {
    if (trial_) {  // frames are not interned: merge stacks by their top frame's contents
      for (std::int32_t o : out) {
        const Node& m = nodes_[static_cast<std::size_t>(o)];
        if (m.pos == n.pos && m.parent == n.parent) return;
      }
    }
    out.push_back(node);
    return;
  }
  const std::int32_t ret = after(n.pos, n.parent);
  for (std::uint32_t alt : g_.rules[e.value]) {
    if (g_.elements[alt].kind == ElementKind::kEnd) {
      expand(ret, out, complete);  // an empty alternative
    } else {
      expand(intern(alt, ret), out, complete);
    }
  }
}

void ByteMatcher::step(const std::vector<std::int32_t>& from, std::uint8_t byte, std::vector<std::int32_t>& to,
                       bool& complete) {
  ++epoch_;
  to.clear();
  complete = false;
  for (std::int32_t s : from) {
    const Node n = nodes_[static_cast<std::size_t>(s)];
    if (g_.byte_sets[g_.elements[n.pos].value].test(byte)) expand(after(n.pos, n.parent), to, complete);
  }
}

void ByteMatcher::rollback(const Mark& m) {
  while (log_.size() > m.log) {
    ids_.erase(log_.back());
    log_.pop_back();
  }
  nodes_.resize(m.nodes);
  seen_.resize(m.nodes);
}

bool ByteMatcher::advance(std::uint8_t byte) {
  const Mark m = mark();
  bool complete = false;
  step(stacks_, byte, scratch_, complete);
  if (scratch_.empty() && !complete) {
    rollback(m);
    return false;
  }
  stacks_.swap(scratch_);
  complete_ = complete;
  return true;
}

bool ByteMatcher::advance(std::string_view bytes) {
  const Mark m = mark();
  std::vector<std::int32_t> saved = stacks_;
  const bool saved_complete = complete_;
  for (char c : bytes) {
    if (!advance(static_cast<std::uint8_t>(c))) {
      stacks_.swap(saved);
      complete_ = saved_complete;
      rollback(m);
      return false;
    }
  }
  return true;
}

std::string ByteMatcher::state_key() const {
  std::vector<std::string> parts;
  parts.reserve(stacks_.size());
  for (std::int32_t s : stacks_) {
    std::string p;
    for (std::int32_t n = s; n >= 0; n = nodes_[static_cast<std::size_t>(n)].parent) {
      const std::uint32_t pos = nodes_[static_cast<std::size_t>(n)].pos;
      p.append(reinterpret_cast<const char*>(&pos), sizeof pos);
    }
    parts.push_back(std::move(p));
  }
  std::sort(parts.begin(), parts.end());
  std::string key(1, complete_ ? 'c' : 'o');
  for (const std::string& p : parts) {
    const std::uint32_t len = static_cast<std::uint32_t>(p.size());
    key.append(reinterpret_cast<const char*>(&len), sizeof len).append(p);
  }
  return key;
}

bool grammar_accepts(const Grammar& g, std::string_view text) {
  ByteMatcher m(g);
  return m.advance(text) && m.complete();
}

}  // namespace plexus::structured
