// The GPU sampler's sort-free top-k / top-p search (kernels/sampling_prefix.h), run on the host
// with plain sums, against the sets kernels/ref's sort keeps: the same tokens, ties included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/ref/sampling_ref.h"
#include "kernels/sampling_prefix.h"

namespace plexus {
namespace {

// The tokens kept by top-k then top-p as the kernel finds them (min-p aside), ascending ids.
std::vector<std::int32_t> searched_set(const std::vector<float>& row, const SamplingParams& p) {
  const std::int64_t vocab = static_cast<std::int64_t>(row.size());
  float mx = row[0];
  for (float v : row) mx = v > mx ? v : mx;
  const auto weight = [&](float v) { return std::exp((static_cast<double>(v) - mx) / p.temperature); };
  const auto search = [&](const SamplePrefix& in, bool weighted, double target) {
    const auto measure = [&](std::int64_t i) { return weighted ? weight(row[static_cast<std::size_t>(i)]) : 1.0; };
    const auto keys = [&](std::uint32_t lo, std::uint32_t hi) {
      double acc = 0;
      for (std::int64_t i = 0; i < vocab; ++i) {
        const std::uint32_t key = ordered_key(row[static_cast<std::size_t>(i)]);
        if (key >= lo && key <= hi && in.has(key, i)) acc += measure(i);
      }
      return acc;
    };
    const auto ids = [&](std::uint32_t k, std::int64_t c) {
      double acc = 0;
      for (std::int64_t i = 0; i <= c; ++i) {
        const std::uint32_t key = ordered_key(row[static_cast<std::size_t>(i)]);
        if (key == k && in.has(key, i)) acc += measure(i);
      }
      return acc;
    };
    return shortest_prefix(vocab, target, keys, ids);
  };
  SamplePrefix kept;
  if (p.top_k > 0 && p.top_k < vocab) kept = search(kept, false, p.top_k);
  if (p.top_p < 1) {
    double total = 0;
    for (std::int64_t i = 0; i < vocab; ++i) {
      if (kept.has(ordered_key(row[static_cast<std::size_t>(i)]), i)) total += weight(row[static_cast<std::size_t>(i)]);
    }
    kept = search(kept, true, static_cast<double>(p.top_p) * total);
  }
  std::vector<std::int32_t> out;
  for (std::int64_t i = 0; i < vocab; ++i) {
    if (kept.has(ordered_key(row[static_cast<std::size_t>(i)]), i)) out.push_back(static_cast<std::int32_t>(i));
  }
  return out;
}

TEST(SamplingPrefix, OrderedKeysSortAsFloatsWithZeroesEqual) {
  const float v[] = {-3e38f, -2.5f, -1.0f, -1e-30f, 0.0f, 1e-30f, 1.0f, 2.5f, 3e38f};
  for (std::size_t i = 0; i + 1 < std::size(v); ++i) EXPECT_LT(ordered_key(v[i]), ordered_key(v[i + 1])) << v[i];
  EXPECT_EQ(ordered_key(-0.0f), ordered_key(0.0f));
}

TEST(SamplingPrefix, TopKAndTopPSetsAreTheSortsSets) {
  std::mt19937 rng(31);
  const SamplingParams params[] = {{1.0f, 1, 1.0f, 0.0f},  {1.0f, 5, 1.0f, 0.0f},   {0.7f, 40, 1.0f, 0.0f},
                                   {1.0f, 0, 0.9f, 0.0f},  {1.3f, 0, 0.5f, 0.0f},   {0.8f, 20, 0.95f, 0.0f},
                                   {2.0f, 3, 0.1f, 0.0f},  {1.0f, 0, 0.999f, 0.0f}, {100.0f, 0, 0.3f, 0.0f},
                                   {0.05f, 0, 0.99f, 0.0f}};
  int checked = 0;
  for (std::int64_t vocab : {1, 2, 7, 300, 2000}) {
    for (int ties = 0; ties < 3; ++ties) {  // none; quarters; integers with -0 among the zeroes
      for (int rep = 0; rep < 8; ++rep) {
        std::normal_distribution<float> d(0.0f, 3.0f);
        std::vector<float> row(static_cast<std::size_t>(vocab));
        for (float& x : row) {
          x = d(rng);
          if (ties == 1) x = std::round(x * 4) / 4;
          if (ties == 2) x = std::round(x) == 0.0f && rng() % 2 ? -0.0f : std::round(x);
        }
        for (const SamplingParams& p : params) {
          std::vector<double> w;
          EXPECT_EQ(searched_set(row, p), ref::kept_tokens(row.data(), vocab, p, &w))
              << "vocab " << vocab << " ties " << ties << " rep " << rep << " T " << p.temperature << " k " << p.top_k
              << " p " << p.top_p;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 5 * 3 * 8 * 10);
}

}  // namespace
}  // namespace plexus
