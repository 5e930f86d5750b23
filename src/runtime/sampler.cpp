// Greedy and stochastic token selection.
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>

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

TokenHistory::TokenHistory(std::int64_t vocab, std::span<const std::int32_t> prompt)
    : output_count_(static_cast<std::size_t>(vocab), 0), touched_mask_(static_cast<std::size_t>(vocab), false) {
  for (std::int32_t id : prompt) {
    if (id >= 0 && id < vocab) touch(id);  // an id outside: the runner refuses it before any logits
  }
}

void TokenHistory::touch(std::int32_t id) {
  if (touched_mask_[static_cast<std::size_t>(id)]) return;
  touched_mask_[static_cast<std::size_t>(id)] = true;
  touched_.push_back(id);
}

void TokenHistory::add_output(std::int32_t id) {
  ++output_count_[static_cast<std::size_t>(id)];
  touch(id);
}

void TokenHistory::apply(float* logits, const SamplingOptions& o) const {
  for (std::int32_t id : touched_) {
    float& l = logits[id];
    if (o.repetition_penalty != 1) {
      const float p = static_cast<float>(o.repetition_penalty);
      l = l > 0 ? l / p : l * p;
    }
    // In vLLM's order and float32 steps: frequency × count, then presence.
    const std::int32_t count = output_count_[static_cast<std::size_t>(id)];
    if (count > 0) {
      l -= static_cast<float>(o.frequency_penalty) * static_cast<float>(count);
      l -= static_cast<float>(o.presence_penalty);
    }
  }
}

void apply_logit_bias(float* logits, const SamplingOptions& o) {
  for (const auto& [id, bias] : o.logit_bias) logits[id] += bias;
}

namespace {

std::string number(double x) {
  std::string s = std::to_string(x);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

void check_options(const SamplingOptions& o, std::int64_t vocab) {
  for (const auto& [name, value] : {std::pair{"presence_penalty", o.presence_penalty}, {"frequency_penalty", o.frequency_penalty}}) {
    if (!(value >= -kMaxPenalty && value <= kMaxPenalty)) {
      throw InputError(std::string(name) + " must be between -2 and 2, got " + number(value));
    }
  }
  if (!(o.repetition_penalty > 0 && std::isfinite(o.repetition_penalty))) {
    throw InputError("repetition_penalty must be greater than 0, got " + number(o.repetition_penalty));
  }
  if (!(o.min_p >= 0 && o.min_p <= 1)) throw InputError("min_p must be between 0 and 1, got " + number(o.min_p));
  for (const auto& [id, bias] : o.logit_bias) {
    if (id < 0 || id >= vocab) {
      throw InputError("logit_bias: token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(vocab) +
                       " ids");
    }
    if (!(bias >= -kMaxLogitBias && bias <= kMaxLogitBias)) {
      throw InputError("logit_bias: the bias of token " + std::to_string(id) + " must be between -100 and 100, got " +
                       number(bias));
    }
  }
}

}  // namespace

Sampler::Sampler(const SamplingOptions& options, std::int64_t vocab_size, std::span<const std::int32_t> prompt)
    : options_(options), rng_(options.seed), order_(static_cast<std::size_t>(vocab_size)), probs_(order_.size()) {
  check_options(options, vocab_size);
  // The prompt's tokens matter to the repetition penalty alone: without it they are not kept.
  if (options.penalized()) {
    history_ = TokenHistory(vocab_size, options.repetition_penalty != 1 ? prompt : std::span<const std::int32_t>{});
  }
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
  // Without logit_bias and penalties nothing happens here before choose(): no pass over the row.
  if (!options_.logit_bias.empty()) apply_logit_bias(logits, options_);
  if (options_.penalized()) history_.apply(logits, options_);
  const std::int32_t id = choose(logits);
  if (options_.penalized()) history_.add_output(id);
  return id;
}

std::int32_t Sampler::choose(const float* logits) {
  const std::int64_t v = static_cast<std::int64_t>(order_.size());
  if (options_.greedy) return argmax(logits, v);
  const double inv_t = 1.0 / options_.temperature;
  // A token's weight exp(logit / T - max / T) is its probability over the likeliest's: min-p
  // drops the weights below min_p.
  const double min_w = options_.min_p;
  if (options_.top_k == 0 && options_.top_p >= 1.0) {
    // Plain temperature sampling (and min-p) needs no ordering.
    const double mx = logits[argmax(logits, v)] * inv_t;
    double total = 0;
    for (std::int64_t i = 0; i < v; ++i) {
      double w = std::exp(logits[i] * inv_t - mx);
      if (w < min_w) w = 0;
      total += (probs_[static_cast<std::size_t>(i)] = w);
    }
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
  for (std::int64_t i = 0; i < keep; ++i) {
    const double w = std::exp(logits[order_[static_cast<std::size_t>(i)]] * inv_t - mx);
    if (w < min_w) {  // min-p (before top-p, as vLLM): the rest weigh less still
      keep = i;
      break;
    }
    total += (probs_[static_cast<std::size_t>(i)] = w);
  }
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
