// The GPU sampler's oracle (kernels/ref/sampling_ref.h): Philox4x32-10 against Random123's
// known answers, greedy against the CPU sampler's argmax, the frequencies of each filter against
// the exact filtered softmax, logprobs against serve's, rows independent of each other.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "kernels/ref/sampling_ref.h"
#include "runtime/sampler.h"
#include "serve/logprobs.h"

namespace plexus::ref {
namespace {

// Random123's tests/kat_vectors, the three "philox4x32 10" lines: counter, key, expected.
TEST(SamplingRef, PhiloxKnownAnswers) {
  struct Kat {
    std::array<std::uint32_t, 4> ctr;
    std::array<std::uint32_t, 2> key;
    std::array<std::uint32_t, 4> want;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    const Philox4 got = philox4x32_10(Philox4{{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}}, k.key[0], k.key[1]);
    EXPECT_EQ((std::array<std::uint32_t, 4>{got.x[0], got.x[1], got.x[2], got.x[3]}), k.want) << std::hex << k.ctr[0];
  }
}

TEST(SamplingRef, UniformIsInUnitIntervalAndDependsOnSeedAndStep) {
  std::set<double> seen;
  for (std::uint64_t seed : {0ull, 1ull, 0x123456789abcdefull}) {
    for (std::uint64_t step = 0; step < 100; ++step) {
      const double u = philox_uniform(seed, step);
      EXPECT_GE(u, 0.0);
      EXPECT_LT(u, 1.0);
      EXPECT_EQ(u, philox_uniform(seed, step));
      seen.insert(u);
    }
  }
  EXPECT_EQ(seen.size(), 300u);
}

std::vector<float> random_row(std::int64_t vocab, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> row(static_cast<std::size_t>(vocab));
  for (float& x : row) x = std::round(d(rng) * 4) / 4;  // quarters: many ties
  return row;
}

TEST(SamplingRef, GreedyIsTheCpuArgmax) {
  std::mt19937 rng(7);
  for (float t : {0.0f, 1e-6f, 9.9e-6f}) {
    for (int i = 0; i < 50; ++i) {
      const std::vector<float> row = random_row(1 + i * 37, rng);
      const std::int64_t v = static_cast<std::int64_t>(row.size());
      SamplingParams p;
      p.temperature = t;
      p.top_k = 3;
      EXPECT_EQ(sample_row(row.data(), v, p, 99, static_cast<std::uint64_t>(i), 0).id, argmax(row.data(), v));
    }
  }
}

// The logits of the frequency tests: ids 1 and 6 tie. By logit: 5, 0, 1, 6, 2, 3, 4, 7.
const std::vector<float> kLogits = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, 3.0f, 1.0f, -2.0f};

// Draws `n` tokens for steps 0..n-1 and checks each id's count against softmax(logits / T) over
// `kept` (zero elsewhere): within 5 standard deviations of the binomial (+1 for rounding).
void expect_frequencies(const SamplingParams& p, const std::set<std::int32_t>& kept, std::uint64_t seed) {
  const int n = 40000;
  const std::int64_t v = static_cast<std::int64_t>(kLogits.size());
  std::vector<int> count(kLogits.size());
  for (int s = 0; s < n; ++s) ++count[static_cast<std::size_t>(sample_row(kLogits.data(), v, p, seed, static_cast<std::uint64_t>(s), 0).id)];
  double total = 0;
  for (std::int32_t i : kept) total += std::exp(kLogits[static_cast<std::size_t>(i)] / p.temperature);
  for (std::int32_t i = 0; i < v; ++i) {
    const double prob = kept.count(i) ? std::exp(kLogits[static_cast<std::size_t>(i)] / p.temperature) / total : 0.0;
    const double bound = 5 * std::sqrt(n * prob * (1 - prob)) + 1;
    EXPECT_NEAR(count[static_cast<std::size_t>(i)], n * prob, bound) << "id " << i << " T " << p.temperature << " k "
                                                                    << p.top_k << " p " << p.top_p << " min_p " << p.min_p;
  }
}

TEST(SamplingRef, TemperatureFrequencies) {
  SamplingParams p;
  p.temperature = 0.7f;
  expect_frequencies(p, {0, 1, 2, 3, 4, 5, 6, 7}, 1);
  p.temperature = 3.0f;
  expect_frequencies(p, {0, 1, 2, 3, 4, 5, 6, 7}, 2);
}

TEST(SamplingRef, TopKFrequenciesKeepTheLowerIdOnTies) {
  SamplingParams p;
  p.temperature = 1.5f;
  p.top_k = 3;
  expect_frequencies(p, {5, 0, 1}, 3);
  p.top_k = 1;
  expect_frequencies(p, {5}, 4);
}

TEST(SamplingRef, TopPFrequencies) {
  // At T = 1 the cumulative probabilities by logit are 0.557, 0.762, 0.837, 0.912, 0.958, ...
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.8f;
  expect_frequencies(p, {5, 0, 1}, 5);
  p.top_p = 0.9f;
  expect_frequencies(p, {5, 0, 1, 6}, 6);
  p.top_p = 0.1f;
  expect_frequencies(p, {5}, 7);
}

TEST(SamplingRef, MinPFrequencies) {
  // exp((l - 3) / 2) of logits 1, 0.5, 0, -1, -2: 0.37, 0.29, 0.22, 0.14, 0.08.
  SamplingParams p;
  p.temperature = 2.0f;
  p.min_p = 0.1f;
  expect_frequencies(p, {5, 0, 1, 6, 2, 3, 4}, 8);
  p.min_p = 0.3f;
  expect_frequencies(p, {5, 0, 1, 6}, 9);
}

TEST(SamplingRef, FiltersApplyInOrderKThenPThenMinP) {
  // top-k 5 keeps 5, 0, 1, 6, 2; at T = 1 their cumulative shares are 0.581, 0.795, 0.874,
  // 0.953: top-p 0.85 keeps 5, 0, 1; min-p 0.2 (exp(1 - 3) = 0.135) then drops 1.
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 5;
  p.top_p = 0.85f;
  expect_frequencies(p, {5, 0, 1}, 10);
  p.min_p = 0.2f;
  expect_frequencies(p, {5, 0}, 11);
  // Min-p after top-p: top-p 0.7 keeps 5, 0 (0.557, 0.762 of all), min-p 0.3 keeps both
  // (exp(-1) = 0.37). Min-p first would leave top-p 0.7 of {5, 0} (0.731 at 5): 5 alone.
  p.top_k = 0;
  p.top_p = 0.7f;
  p.min_p = 0.3f;
  expect_frequencies(p, {5, 0}, 12);
}

TEST(SamplingRef, LogprobsEqualServes) {
  std::mt19937 rng(11);
  for (int i = 0; i < 20; ++i) {
    const std::vector<float> row = random_row(1000 + i, rng);
    const std::int64_t v = static_cast<std::int64_t>(row.size());
    SamplingParams p;
    p.temperature = i % 2 ? 0.8f : 0.0f;
    p.top_p = 0.95f;
    const int top_n = i % 6;
    const SampledToken got = sample_row(row.data(), v, p, 5, static_cast<std::uint64_t>(i), top_n);
    const TokenEvent want = token_event(row.data(), v, got.id, top_n);
    ASSERT_TRUE(want.logprob.has_value());
    EXPECT_NEAR(got.logprob, *want.logprob, 1e-5);
    ASSERT_EQ(got.top.size(), want.top.size());
    for (std::size_t r = 0; r < got.top.size(); ++r) {
      EXPECT_EQ(got.top[r].first, want.top[r].first);
      EXPECT_NEAR(got.top[r].second, want.top[r].second, 1e-5);
    }
  }
}

TEST(SamplingRef, ARowsResultDoesNotDependOnTheOtherRows) {
  std::mt19937 rng(13);
  const std::int64_t vocab = 300;
  const std::vector<float> mine = random_row(vocab, rng);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 50;
  const std::uint64_t kSeed = 42;
  for (std::uint64_t step = 0; step < 50; ++step) {
    const SampledToken alone = sample_rows(mine.data(), 1, vocab, &p, &kSeed, &step, 3)[0];
    // The same row third in a batch of others (other params, seeds and steps).
    std::vector<float> batch;
    std::vector<SamplingParams> params;
    std::vector<std::uint64_t> seeds, steps;
    for (int r = 0; r < 4; ++r) {
      const std::vector<float> row = r == 2 ? mine : random_row(vocab, rng);
      batch.insert(batch.end(), row.begin(), row.end());
      params.push_back(r == 2 ? p : SamplingParams{0.5f, 0, 0.9f, 0.05f});
      seeds.push_back(r == 2 ? kSeed : 1000 + static_cast<std::uint64_t>(r));
      steps.push_back(r == 2 ? step : step * 7 + 1);
    }
    const SampledToken in_batch = sample_rows(batch.data(), 4, vocab, params.data(), seeds.data(), steps.data(), 3)[2];
    EXPECT_EQ(in_batch.id, alone.id);
    EXPECT_EQ(in_batch.logprob, alone.logprob);
    EXPECT_EQ(in_batch.top, alone.top);
  }
}

}  // namespace
}  // namespace plexus::ref
