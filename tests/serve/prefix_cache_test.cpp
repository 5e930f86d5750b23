// PrefixCache's bookkeeping: whole-block prefixes found token-exactly, at least one prompt token
// left to run, LRU eviction, hashes shared between entries.
#include "serve/prefix_cache.h"

#include <gtest/gtest.h>

#include <numeric>

namespace plexus {
namespace {

constexpr std::int64_t B = PrefixCache::kBlockTokens;

std::vector<std::int32_t> iota_tokens(std::int64_t n, std::int32_t first = 0) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(PrefixCache, FindsTheLongestWholeBlockPrefixAndLeavesOneTokenToRun) {
  PrefixCache cache;
  EXPECT_TRUE(cache.insert(7, iota_tokens(3 * B + 5), 100).empty());
  EXPECT_EQ(cache.reserved_tokens(), 100);

  // A longer prompt with the same start: the three whole blocks.
  std::vector<std::int32_t> p = iota_tokens(3 * B + 5);
  p.push_back(999);
  PrefixCache::Match m = cache.find(p);
  EXPECT_EQ(m.slot, 7);
  EXPECT_EQ(m.tokens, 3 * B);

  // Exactly three blocks long: the last block must run (its last token's logits), so two.
  m = cache.find(iota_tokens(3 * B));
  EXPECT_EQ(m.tokens, 2 * B);

  // Different from token B+3 on: only the first block.
  p = iota_tokens(4 * B);
  p[static_cast<std::size_t>(B + 3)] = -5;
  m = cache.find(p);
  EXPECT_EQ(m.tokens, B);

  // A different first token: nothing.
  p[0] = 12345;
  m = cache.find(p);
  EXPECT_EQ(m.tokens, 0);
  EXPECT_EQ(m.slot, -1);

}

TEST(PrefixCache, ASequenceAddingNoNewBlockIsClosedAtOnce) {
  PrefixCache cache;
  EXPECT_TRUE(cache.insert(1, iota_tokens(2 * B + 1), 10).empty());
  // Shorter than one block, or its blocks all cached already: handed back to close.
  EXPECT_EQ(cache.insert(2, iota_tokens(B - 1), 10), std::vector<int>{2});
  EXPECT_EQ(cache.insert(3, iota_tokens(2 * B), 10), std::vector<int>{3});
  // One more block: kept.
  EXPECT_TRUE(cache.insert(4, iota_tokens(3 * B), 10).empty());
  EXPECT_EQ(cache.entries(), 2);
  EXPECT_EQ(cache.reserved_tokens(), 20);
  EXPECT_EQ(cache.cached_tokens(iota_tokens(4 * B)), 3 * B);
}

TEST(PrefixCache, EvictsTheLeastRecentlyUsedAndKeepsTheOthersFindable) {
  PrefixCache cache;
  const auto a = iota_tokens(2 * B + 1, 0), b = iota_tokens(2 * B + 1, 1000), c = iota_tokens(2 * B + 1, 2000);
  cache.insert(10, a, 5);
  cache.insert(11, b, 6);
  cache.insert(12, c, 7);
  EXPECT_EQ(cache.find(a).slot, 10);  // a is now the most recently used: b is the oldest
  EXPECT_EQ(cache.evict(), 11);
  EXPECT_EQ(cache.reserved_tokens(), 12);
  EXPECT_EQ(cache.find(b).tokens, 0);
  EXPECT_EQ(cache.find(c).slot, 12);
  EXPECT_EQ(cache.evict(), 10);
  EXPECT_EQ(cache.evict(), 12);
  EXPECT_EQ(cache.evict(), -1);
  EXPECT_TRUE(cache.empty());
  EXPECT_EQ(cache.reserved_tokens(), 0);
  EXPECT_EQ(cache.evictions(), 3);
}

TEST(PrefixCache, EntriesSharingBlocksSurviveEachOthersEviction) {
  PrefixCache cache;
  // Both start with the same two blocks; the newer one holds their hashes in the index.
  std::vector<std::int32_t> older = iota_tokens(3 * B), newer = iota_tokens(2 * B);
  const auto tail = iota_tokens(2 * B, 500);
  newer.insert(newer.end(), tail.begin(), tail.end());
  cache.insert(1, older, 1);
  cache.insert(2, newer, 1);
  // Two blocks: the entry holding their hashes now, the newer one.
  EXPECT_EQ(cache.find(older).slot, 2);
  // Three blocks: only the older one has them; it becomes the most recently used.
  const std::vector<std::int32_t> p = iota_tokens(3 * B + 1);
  EXPECT_EQ(cache.find(p).slot, 1);
  // The newer entry goes, and the first two blocks' hashes with it.
  EXPECT_EQ(cache.evict(), 2);
  // The older entry's third block is still indexed: found, checked token by token.
  PrefixCache::Match m = cache.find(p);
  EXPECT_EQ(m.slot, 1);
  EXPECT_EQ(m.tokens, 3 * B);
}

}  // namespace
}  // namespace plexus
