// Greedy and stochastic token selection.
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace plexus {

std::int32_t argmax(const float* logits, std::int64_t n) {
  std::int64_t best = 0;
  for (std::int64_t i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<std::int32_t>(best);
}

void set_temperature(SamplingOptions& s, double t) {
  s.greedy = t < kGreedyBelowTemperature;
  if (!s.greedy) s.temperature = t;
}

Sampler::Sampler(const SamplingOptions& options, std::int64_t vocab_size)
    : options_(options), rng_(options.seed), order_(static_cast<std::size_t>(vocab_size)), probs_(order_.size()) {
  if (!options.greedy) {
    if (!(options.temperature >= 0 && options.temperature <= kMaxTemperature)) {
      throw InputError("temperature must be between 0 and " + std::to_string(static_cast<int>(kMaxTemperature)) + ", got " +
                       std::to_string(options.temperature));
    }
    set_temperature(options_, options.temperature);  // a tiny one is greedy here too
    if (options.top_k < 0) throw InputError("--top-k must be >= 0");
    if (!(options.top_p > 0 && options.top_p <= 1)) throw InputError("--top-p must be in (0, 1]");
  }
}

std::int32_t Sampler::sample(float* logits) {
  const std::int64_t v = static_cast<std::int64_t>(order_.size());
  if (options_.greedy) return argmax(logits, v);
  const double inv_t = 1.0 / options_.temperature;
  if (options_.top_k == 0 && options_.top_p >= 1.0) {
    // Plain temperature sampling needs no ordering.
    const double mx = logits[argmax(logits, v)] * inv_t;
    double total = 0;
    for (std::int64_t i = 0; i < v; ++i) total += (probs_[static_cast<std::size_t>(i)] = std::exp(logits[i] * inv_t - mx));
    const double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
    double acc = 0;
    for (std::int64_t i = 0; i < v; ++i) {
      acc += probs_[static_cast<std::size_t>(i)];
      if (u < acc) return static_cast<std::int32_t>(i);
    }
    return static_cast<std::int32_t>(v - 1);
  }
  std::iota(order_.begin(), order_.end(), 0);
  auto by_logit = [&](std::int32_t a, std::int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::int64_t keep = v;
  if (options_.top_k > 0 && options_.top_k < v) {
    keep = options_.top_k;
    std::partial_sort(order_.begin(), order_.begin() + keep, order_.end(), by_logit);
  } else {
    std::sort(order_.begin(), order_.end(), by_logit);
  }
  const double mx = logits[order_[0]] * inv_t;
  double total = 0;
  for (std::int64_t i = 0; i < keep; ++i) total += (probs_[static_cast<std::size_t>(i)] = std::exp(logits[order_[static_cast<std::size_t>(i)]] * inv_t - mx));
  if (options_.top_p < 1.0) {
    // Keep the smallest prefix whose probability reaches top_p (at least one token).
    double cum = 0;
    std::int64_t cut = 0;
    while (cut < keep) {
      cum += probs_[static_cast<std::size_t>(cut)] / total;
      ++cut;
      if (cum >= options_.top_p) break;
    }
    keep = cut;
    total = 0;
    for (std::int64_t i = 0; i < keep; ++i) total += probs_[static_cast<std::size_t>(i)];
  }
  const double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
  double acc = 0;
  for (std::int64_t i = 0; i < keep; ++i) {
    acc += probs_[static_cast<std::size_t>(i)];
    if (u < acc) return order_[static_cast<std::size_t>(i)];
  }
  return order_[static_cast<std::size_t>(keep - 1)];
}

}  // namespace plexus
