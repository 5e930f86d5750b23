// The GPU sampler (kernels/cuda/sampling.h) against its oracle (kernels/ref/sampling_ref.h) row
// by row, over every filter, tied logits and vocabularies of 1 to 128256 tokens; and one request
// row giving the same token in two batch compositions. Skipped, with the reason, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/sampling.h"
#include "kernels/ref/sampling_ref.h"

namespace plexus::cuda::test {
namespace {

class CudaSampling : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_present(&why)) GTEST_SKIP() << why;
  }
};

struct Batch {
  std::int64_t vocab = 0;
  std::vector<float> logits;  // (n, vocab)
  std::vector<SamplingParams> params;
  std::vector<std::uint64_t> seeds, steps;
  std::int64_t rows() const { return static_cast<std::int64_t>(params.size()); }
  void add(const std::vector<float>& row, const SamplingParams& p, std::uint64_t seed, std::uint64_t step) {
    logits.insert(logits.end(), row.begin(), row.end());
    params.push_back(p);
    seeds.push_back(seed);
    steps.push_back(step);
  }
};

// The batch sampled on the device, as the ref's tokens.
std::vector<ref::SampledToken> sample_on_device(const Batch& b, int top_n) {
  const std::size_t n = static_cast<std::size_t>(b.rows());
  DeviceBuffer<float> logits(b.logits);
  DeviceBuffer<SamplingParams> params(b.params);
  DeviceBuffer<std::uint64_t> seeds(b.seeds), steps(b.steps);
  DeviceBuffer<std::int32_t> ids(n), top_ids(n * static_cast<std::size_t>(top_n));
  DeviceBuffer<float> logprobs(n), top_logprobs(n * static_cast<std::size_t>(top_n));
  ids.poison();
  logprobs.poison();
  top_ids.poison();
  top_logprobs.poison();
  launch_sample(logits.get(), b.rows(), b.vocab, params.get(), seeds.get(), steps.get(), ids.get(), logprobs.get(), top_n,
                top_n > 0 ? top_ids.get() : nullptr, top_n > 0 ? top_logprobs.get() : nullptr, nullptr);
  if (cudaGetLastError() != cudaSuccess) throw std::runtime_error("launch_sample failed to launch");
  const std::vector<std::int32_t> id = ids.download(), tid = top_ids.download();
  const std::vector<float> lp = logprobs.download(), tlp = top_logprobs.download();
  std::vector<ref::SampledToken> out(n);
  for (std::size_t r = 0; r < n; ++r) {
    out[r].id = id[r];
    out[r].logprob = lp[r];
    for (int t = 0; t < top_n; ++t) {
      const std::size_t at = r * static_cast<std::size_t>(top_n) + static_cast<std::size_t>(t);
      out[r].top.emplace_back(tid[at], tlp[at]);
    }
  }
  return out;
}

void expect_matches_ref(const Batch& b, int top_n) {
  const std::vector<ref::SampledToken> got = sample_on_device(b, top_n);
  const std::vector<ref::SampledToken> want =
      ref::sample_rows(b.logits.data(), b.rows(), b.vocab, b.params.data(), b.seeds.data(), b.steps.data(), top_n);
  for (std::size_t r = 0; r < want.size(); ++r) {
    const SamplingParams& p = b.params[r];
    const std::string what = "row " + std::to_string(r) + " vocab " + std::to_string(b.vocab) + " T " +
                             std::to_string(p.temperature) + " k " + std::to_string(p.top_k) + " p " +
                             std::to_string(p.top_p) + " min_p " + std::to_string(p.min_p);
    EXPECT_EQ(got[r].id, want[r].id) << what;
    EXPECT_NEAR(got[r].logprob, want[r].logprob, 1e-3) << what;
    ASSERT_EQ(got[r].top.size(), want[r].top.size()) << what;
    for (std::size_t t = 0; t < want[r].top.size(); ++t) {
      EXPECT_EQ(got[r].top[t].first, want[r].top[t].first) << what << " top " << t;
      EXPECT_NEAR(got[r].top[t].second, want[r].top[t].second, 1e-3) << what << " top " << t;
    }
  }
}

// Logits ~ N(0, 3²); with `ties`, rounded to quarters (many equal logits, some -0 and +0).
std::vector<float> logits_row(std::int64_t vocab, bool ties, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> row(static_cast<std::size_t>(vocab));
  for (float& x : row) x = ties ? std::round(d(rng) * 4) / 4 : d(rng);
  return row;
}

const SamplingParams kParams[] = {
    {0.0f, 0, 1.0f, 0.0f},    {0.7f, 0, 1.0f, 0.0f},     {1.0f, 40, 1.0f, 0.0f},  {1.3f, 0, 0.9f, 0.0f},
    {1.0f, 0, 1.0f, 0.05f},   {0.8f, 20, 0.95f, 0.02f},  {1.0f, 1, 1.0f, 0.0f},   {2.0f, 100000000, 0.5f, 0.0f},
    {1e-6f, 5, 0.9f, 0.1f},   {100.0f, 3, 1.0f, 0.0f},   {0.5f, 0, 0.999f, 0.5f}, {1.0f, 2, 0.1f, 0.0f},
};

TEST_F(CudaSampling, EveryFilterMatchesTheRefRowByRow) {
  std::mt19937 rng(21);
  for (std::int64_t vocab : {1, 7, 1000, 32000, 128256}) {
    for (bool ties : {false, true}) {
      Batch b;
      b.vocab = vocab;
      std::uint64_t step = 0;
      for (const SamplingParams& p : kParams) {
        b.add(logits_row(vocab, ties, rng), p, 1000 + step, step * 3);
        ++step;
      }
      expect_matches_ref(b, static_cast<int>(std::min<std::int64_t>(vocab, ties ? 5 : 20)));
    }
  }
}

TEST_F(CudaSampling, ManyStepsOfOneRequestMatchTheRef) {
  std::mt19937 rng(22);
  Batch b;
  b.vocab = 5000;
  const std::vector<float> row = logits_row(b.vocab, false, rng);
  for (std::uint64_t step = 0; step < 256; ++step) b.add(row, SamplingParams{1.0f, 50, 0.95f, 0.0f}, 7, step);
  expect_matches_ref(b, 0);
}

TEST_F(CudaSampling, ARowsTokenDoesNotDependOnItsBatch) {
  std::mt19937 rng(23);
  const std::int64_t vocab = 32000;
  const std::vector<float> mine = logits_row(vocab, false, rng);
  const SamplingParams p{0.9f, 0, 0.95f, 0.0f};
  Batch alone, crowd;
  alone.vocab = crowd.vocab = vocab;
  alone.add(mine, p, 42, 17);
  for (int r = 0; r < 9; ++r) {
    if (r == 6) crowd.add(mine, p, 42, 17);
    else crowd.add(logits_row(vocab, r % 2 == 0, rng), kParams[r], 5 + static_cast<std::uint64_t>(r), 3);
  }
  const ref::SampledToken a = sample_on_device(alone, 4)[0], c = sample_on_device(crowd, 4)[6];
  EXPECT_EQ(a.id, c.id);
  EXPECT_EQ(a.logprob, c.logprob);
  EXPECT_EQ(a.top, c.top);
}

}  // namespace
}  // namespace plexus::cuda::test
