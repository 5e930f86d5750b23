#include "serve/prefix_cache.h"

#include <algorithm>

namespace plexus {

namespace {

// splitmix64's finaliser: every input bit changes about half the output bits.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<std::uint64_t> PrefixCache::block_hashes(std::span<const std::int32_t> tokens, std::int64_t blocks) {
  std::vector<std::uint64_t> out;
  out.reserve(static_cast<std::size_t>(blocks));
  std::uint64_t h = 0x5ca1ab1e;
  for (std::int64_t b = 0; b < blocks; ++b) {
    for (std::int64_t i = b * kBlockTokens; i < (b + 1) * kBlockTokens; ++i) {
      h = mix(h ^ static_cast<std::uint32_t>(tokens[static_cast<std::size_t>(i)]));
    }
    out.push_back(h);
  }
  return out;
}

std::pair<PrefixCache::Lru::iterator, std::int64_t> PrefixCache::longest(std::span<const std::int32_t> tokens,
                                                                         std::int64_t blocks) const {
  const std::vector<std::uint64_t> hashes = block_hashes(tokens, blocks);
  // Deepest first: an evicted entry may have taken a shallower block's hash with it while a
  // deeper one is still held by another entry. Every hit is checked token by token.
  for (std::int64_t b = blocks; b >= 1; --b) {
    const auto it = index_.find(hashes[static_cast<std::size_t>(b - 1)]);
    if (it == index_.end()) continue;
    const Entry& e = *it->second;
    const std::size_t n = static_cast<std::size_t>(b * kBlockTokens);
    if (e.tokens.size() >= n && std::equal(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n), e.tokens.begin())) {
      return {it->second, b};
    }
  }
  return {entries_.end(), 0};
}

PrefixCache::Match PrefixCache::find(std::span<const std::int32_t> prompt) {
  const std::int64_t n = static_cast<std::int64_t>(prompt.size());
  const auto [it, blocks] = longest(prompt, n > 0 ? (n - 1) / kBlockTokens : 0);
  if (blocks == 0) return {};
  entries_.splice(entries_.begin(), entries_, it);  // the most recently used
  return {it->slot, blocks * kBlockTokens};
}

std::int64_t PrefixCache::cached_tokens(std::span<const std::int32_t> tokens) const {
  const std::int64_t n = static_cast<std::int64_t>(tokens.size());
  return longest(tokens, n > 0 ? (n - 1) / kBlockTokens : 0).second * kBlockTokens;
}

std::vector<int> PrefixCache::insert(int slot, std::vector<std::int32_t> tokens, std::int64_t reserved) {
  const std::int64_t blocks = static_cast<std::int64_t>(tokens.size()) / kBlockTokens;
  if (blocks == 0 || longest(tokens, blocks).second == blocks) return {slot};  // nothing new
  Entry e;
  e.id = next_id_++;
  e.slot = slot;
  e.hashes = block_hashes(tokens, blocks);
  e.tokens = std::move(tokens);
  e.reserved = reserved;
  entries_.push_front(std::move(e));
  for (std::uint64_t h : entries_.front().hashes) index_[h] = entries_.begin();
  reserved_ += reserved;
  return {};
}

int PrefixCache::evict() {
  if (entries_.empty()) return -1;
  const auto last = std::prev(entries_.end());
  for (std::uint64_t h : last->hashes) {
    const auto it = index_.find(h);
    if (it != index_.end() && it->second == last) index_.erase(it);  // a newer entry may hold it
  }
  const int slot = last->slot;
  reserved_ -= last->reserved;
  entries_.erase(last);
  ++evictions_;
  return slot;
}

}  // namespace plexus
