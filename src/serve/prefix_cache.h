// Automatic prefix caching: the KV caches of finished requests are kept, open in the runner,
// and indexed by the hashes of their token prefixes in blocks of kBlockTokens tokens, so that a
// later request starting with the same tokens (a shared system prompt, the earlier turns of a
// chat) copies those positions' KV instead of running them. Entries are evicted least recently
// used when the KV budget or the runner's memory needs their room. Bookkeeping only: the
// scheduler opens, copies and closes the runner's sequences.
#pragma once
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace plexus {

class PrefixCache {
 public:
  static constexpr std::int64_t kBlockTokens = 16;

  struct Match {
    int slot = -1;            // the cached sequence to copy from
    std::int64_t tokens = 0;  // positions [0, tokens) of its KV equal the prompt's; 0: none
  };

  // The longest cached prefix of `prompt` in whole blocks, leaving at least one prompt token to
  // run (its logits give the first output token). The entry found becomes the most recently used.
  Match find(std::span<const std::int32_t> prompt);
  // As find(), without touching: the prefix `tokens` would reuse.
  std::int64_t cached_tokens(std::span<const std::int32_t> tokens) const;

  // Keeps sequence `slot`, whose KV holds the positions of `tokens`, reserving `reserved` tokens
  // of the KV budget (its capacity). Returns the slots to close now: `slot` itself when it adds
  // no whole block that is not cached already.
  std::vector<int> insert(int slot, std::vector<std::int32_t> tokens, std::int64_t reserved);
  // Removes the least recently used entry; returns its slot to close (-1 when empty).
  int evict();

  bool empty() const { return entries_.empty(); }
  int entries() const { return static_cast<int>(entries_.size()); }
  std::int64_t reserved_tokens() const { return reserved_; }
  std::int64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    std::uint64_t id = 0;
    int slot = -1;
    std::vector<std::int32_t> tokens;
    std::int64_t reserved = 0;
    std::vector<std::uint64_t> hashes;  // of its whole blocks, in order
  };
  using Lru = std::list<Entry>;  // front: the most recently used

  // Chained block hashes of tokens[0, blocks × kBlockTokens): hash i covers blocks 0..i.
  static std::vector<std::uint64_t> block_hashes(std::span<const std::int32_t> tokens, std::int64_t blocks);
  // The deepest block count b <= blocks with an entry whose first b blocks equal tokens'.
  std::pair<Lru::iterator, std::int64_t> longest(std::span<const std::int32_t> tokens, std::int64_t blocks) const;

  mutable Lru entries_;
  std::unordered_map<std::uint64_t, Lru::iterator> index_;  // block hash → the newest entry holding it
  std::uint64_t next_id_ = 1;
  std::int64_t reserved_ = 0;
  std::int64_t evictions_ = 0;
};

}  // namespace plexus
