// The sampler's logit_bias, penalties (repetition, frequency, presence) and min-p against
// tests/tools/vllm_sampling_ref.py, a float64 transcription of vLLM's formulas in vLLM's order
// (not plexus code): the processed logits of every step of a generation, and the distribution
// the sampler draws from (the frequencies of many seeded draws against the reference's
// probabilities, the dropped tokens never drawn).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "runtime/sampler.h"
#include "test_util.h"

namespace plexus {
namespace {

constexpr std::int64_t kVocab = 24;

std::vector<float> random_logits(std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 2.5f);
  std::vector<float> l(kVocab);
  for (float& x : l) x = d(rng);
  return l;
}

Json case_json(const std::vector<float>& logits, const std::vector<std::int32_t>& prompt,
               const std::vector<std::int32_t>& output, const SamplingOptions& o) {
  Json bias = Json::array();
  for (const auto& [id, b] : o.logit_bias) bias.push_back({id, b});
  return {{"logits", logits},
          {"prompt", prompt},
          {"output", output},
          {"presence_penalty", o.presence_penalty},
          {"frequency_penalty", o.frequency_penalty},
          {"repetition_penalty", o.repetition_penalty},
          {"logit_bias", bias},
          {"temperature", o.greedy ? 0.0 : o.temperature},
          {"min_p", o.min_p},
          {"top_k", o.top_k},
          {"top_p", o.top_p}};
}

// The reference's answers to `cases`.
std::vector<Json> reference(const Json& cases) {
  testing::TempDir dir("vllm_sampling_ref");
  std::ofstream(dir / "cases.json") << cases.dump();
  const testing::ProcessResult r = testing::run_command(
      "/usr/bin/python3 " + testing::shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/tools/vllm_sampling_ref.py") + " " +
      testing::shell_quote(dir / "cases.json"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const Json out = parse_json(r.out, "vllm_sampling_ref.py");
  return std::vector<Json>(out.begin(), out.end());
}

SamplingOptions random_options(std::mt19937& rng, bool greedy) {
  std::uniform_real_distribution<double> pen(-2, 2), rep(0.5, 2), bias(-100, 100), unit(0, 1);
  std::uniform_int_distribution<int> token(0, kVocab - 1);
  SamplingOptions o;
  o.presence_penalty = unit(rng) < 0.7 ? pen(rng) : 0;
  o.frequency_penalty = unit(rng) < 0.7 ? pen(rng) : 0;
  o.repetition_penalty = unit(rng) < 0.7 ? rep(rng) : 1;
  for (int i = 0, n = static_cast<int>(unit(rng) * 4); i < n; ++i) {
    const std::int32_t id = token(rng);
    if (std::none_of(o.logit_bias.begin(), o.logit_bias.end(), [&](const auto& b) { return b.first == id; })) {
      o.logit_bias.emplace_back(id, static_cast<float>(unit(rng) < 0.5 ? bias(rng) : bias(rng) / 20));
    }
  }
  if (!greedy) {
    set_temperature(o, 0.3 + unit(rng) * 1.5);
    o.min_p = unit(rng) < 0.6 ? unit(rng) * 0.3 : 0;
    o.top_k = unit(rng) < 0.4 ? 1 + token(rng) : 0;
    o.top_p = unit(rng) < 0.4 ? 0.5 + unit(rng) * 0.5 : 1;
  }
  return o;
}

// Greedy generations of 12 steps with random penalties and biases: at every step the logits the
// sampler left (bias and penalties applied in place) match the reference's for the same prompt
// and output so far, and the chosen token is the reference's argmax.
TEST(SamplingVllm, PenaltiesAndLogitBiasMatchVllmFormulasAtEveryStep) {
  std::mt19937 rng(1234);
  struct Run {
    SamplingOptions options;
    std::vector<std::int32_t> prompt, output;
    std::vector<std::vector<float>> seen;  // per step: the logits after the sampler's processing
    std::vector<Json> cases;
  };
  std::vector<Run> runs(40);
  Json cases = Json::array();
  std::uniform_int_distribution<int> token(0, kVocab - 1);
  for (Run& run : runs) {
    run.options = random_options(rng, /*greedy=*/true);
    for (int i = 0; i < 6; ++i) run.prompt.push_back(token(rng));
    Sampler sampler(run.options, kVocab, run.prompt);
    for (int step = 0; step < 12; ++step) {
      std::vector<float> logits = random_logits(rng);
      // Logits that favour repeats, so that the output repeats tokens and the counts grow.
      for (std::int32_t id : run.output) logits[static_cast<std::size_t>(id)] += 2.0f;
      cases.push_back(case_json(logits, run.prompt, run.output, run.options));
      const std::int32_t id = sampler.sample(logits.data());
      run.seen.push_back(logits);
      run.output.push_back(id);
    }
  }
  const std::vector<Json> ref = reference(cases);
  ASSERT_EQ(ref.size(), cases.size());
  std::size_t c = 0;
  int repeats = 0;
  for (const Run& run : runs) {
    for (std::size_t step = 0; step < run.seen.size(); ++step, ++c) {
      const Json& want = ref[c];
      for (std::int64_t i = 0; i < kVocab; ++i) {
        const double w = want["logits"][static_cast<std::size_t>(i)].get<double>();
        ASSERT_NEAR(run.seen[step][static_cast<std::size_t>(i)], w, 1e-4 * std::max(1.0, std::abs(w)))
            << "case " << c << " step " << step << " token " << i;
      }
      EXPECT_EQ(run.output[step], want["argmax"].get<std::int32_t>()) << "case " << c << " step " << step;
      if (std::count(run.output.begin(), run.output.begin() + static_cast<long>(step), run.output[step]) > 0) ++repeats;
    }
  }
  EXPECT_GT(repeats, 50) << "the generations should repeat tokens, or frequency penalties go untested";
}

// Sampling with temperature, min-p, top-k and top-p after the bias and penalties: the frequencies
// of 10000 seeded draws from the same logits match the reference's distribution, and tokens it
// drops are never drawn.
TEST(SamplingVllm, SampledDistributionMatchesVllmFilters) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> token(0, kVocab - 1);
  Json cases = Json::array();
  std::vector<std::vector<int>> counts;
  constexpr int kDraws = 10000;
  int min_p_cases = 0;
  for (int c = 0; c < 30; ++c) {
    SamplingOptions o = random_options(rng, /*greedy=*/false);
    if (c % 3 == 0) o.min_p = 0.05 + 0.1 * (c % 2);
    min_p_cases += o.min_p > 0;
    o.seed = static_cast<std::uint64_t>(c);
    std::vector<std::int32_t> prompt, output;
    for (int i = 0; i < 5; ++i) prompt.push_back(token(rng));
    for (int i = 0; i < 5; ++i) output.push_back(token(rng));
    const std::vector<float> logits = random_logits(rng);
    cases.push_back(case_json(logits, prompt, output, o));
    // A sampler whose output so far is `output`: fed those tokens as greedy picks would change
    // its generator, so it learns them through a first draw each, forced by a huge bias.
    std::vector<int> n(kVocab, 0);
    for (int d = 0; d < kDraws; ++d) {
      SamplingOptions with_seed = o;
      with_seed.seed = o.seed * 1000003 + static_cast<std::uint64_t>(d);
      Sampler s(with_seed, kVocab, prompt);
      for (std::int32_t id : output) {
        std::vector<float> force(kVocab, -1e4f);
        force[static_cast<std::size_t>(id)] = 1e4f;
        ASSERT_EQ(s.sample(force.data()), id);
      }
      std::vector<float> row = logits;
      ++n[static_cast<std::size_t>(s.sample(row.data()))];
    }
    counts.push_back(n);
  }
  EXPECT_GE(min_p_cases, 10);
  const std::vector<Json> ref = reference(cases);
  ASSERT_EQ(ref.size(), counts.size());
  for (std::size_t c = 0; c < ref.size(); ++c) {
    for (std::int64_t i = 0; i < kVocab; ++i) {
      const double p = ref[c]["probs"][static_cast<std::size_t>(i)].get<double>();
      const double f = static_cast<double>(counts[c][static_cast<std::size_t>(i)]) / kDraws;
      if (p == 0) {
        EXPECT_EQ(counts[c][static_cast<std::size_t>(i)], 0) << "case " << c << ": token " << i << " was dropped by the reference";
      } else {
        EXPECT_NEAR(f, p, 5 * std::sqrt(p * (1 - p) / kDraws) + 1e-3) << "case " << c << " token " << i;
      }
    }
  }
}

TEST(SamplingVllm, OutOfRangeOptionsAreInputErrors) {
  auto refused = [](SamplingOptions o, const std::string& what) {
    try {
      Sampler s(o, kVocab);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  SamplingOptions o;
  o.presence_penalty = 2.5;
  refused(o, "presence_penalty");
  o = {};
  o.frequency_penalty = -2.01;
  refused(o, "frequency_penalty");
  o = {};
  o.repetition_penalty = 0;
  refused(o, "repetition_penalty");
  o = {};
  o.min_p = 1.5;
  refused(o, "min_p");
  o = {};
  o.logit_bias = {{static_cast<std::int32_t>(kVocab), 1.0f}};
  refused(o, "outside the vocabulary");
  o = {};
  o.logit_bias = {{3, 100.5f}};
  refused(o, "between -100 and 100");
}

}  // namespace
}  // namespace plexus
