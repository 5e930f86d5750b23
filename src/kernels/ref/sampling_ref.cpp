// The plain sampler the GPU sampling kernel is tested against.
#include "kernels/ref/sampling_ref.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace plexus::ref {

std::vector<std::int32_t> kept_tokens(const float* logits, std::int64_t vocab, const SamplingParams& p,
                                      std::vector<double>* w) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  const double mx = logits[order[0]];
  const auto weight = [&](std::int32_t i) { return std::exp((static_cast<double>(logits[i]) - mx) / p.temperature); };
  std::size_t keep = order.size();
  if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < keep) keep = static_cast<std::size_t>(p.top_k);
  if (p.top_p < 1) {
    double total = 0;
    for (std::size_t r = 0; r < keep; ++r) total += weight(order[r]);
    double cum = 0;
    std::size_t cut = 0;
    while (cut < keep) {
      cum += weight(order[cut++]);
      if (cum >= static_cast<double>(p.top_p) * total) break;
    }
    keep = cut;
  }
  if (p.min_p > 0) {
    std::size_t cut = 1;  // the first token's weight is 1 >= min_p
    while (cut < keep && weight(order[cut]) >= static_cast<double>(p.min_p)) ++cut;
    keep = cut;
  }
  order.resize(keep);
  std::sort(order.begin(), order.end());
  w->resize(keep);
  for (std::size_t r = 0; r < keep; ++r) (*w)[r] = weight(order[r]);
  return order;
}

SampledToken sample_row(const float* logits, std::int64_t vocab, const SamplingParams& p, std::uint64_t seed,
                        std::uint64_t step, int top_n) {
  SampledToken out;
  if (!(p.temperature >= kSampleGreedyBelow)) {
    out.id = static_cast<std::int32_t>(std::max_element(logits, logits + vocab) - logits);  // the first on ties
  } else {
    std::vector<double> w;
    const std::vector<std::int32_t> kept = kept_tokens(logits, vocab, p, &w);
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    const double target = philox_uniform(seed, step) * total;
    out.id = kept.back();  // where rounding leaves the running sum short of the target
    double acc = 0;
    for (std::size_t r = 0; r < kept.size(); ++r) {
      acc += w[r];
      if (target < acc) {
        out.id = kept[r];
        break;
      }
    }
  }
  const double mx = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (std::int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double log_z = mx + std::log(sum);
  const auto logprob = [&](std::int32_t i) { return static_cast<float>(static_cast<double>(logits[i]) - log_z); };
  out.logprob = logprob(out.id);
  const std::int64_t n = std::min<std::int64_t>(std::clamp(top_n, 0, kMaxTopLogprobs), vocab);
  std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + n, order.end(), [&](std::int32_t a, std::int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (std::int64_t r = 0; r < n; ++r) out.top.emplace_back(order[static_cast<std::size_t>(r)], logprob(order[static_cast<std::size_t>(r)]));
  return out;
}

std::vector<SampledToken> sample_rows(const float* logits, std::int64_t n, std::int64_t vocab,
                                      const SamplingParams* params, const std::uint64_t* seeds,
                                      const std::uint64_t* steps, int top_n) {
  std::vector<SampledToken> out;
  for (std::int64_t r = 0; r < n; ++r) out.push_back(sample_row(logits + r * vocab, vocab, params[r], seeds[r], steps[r], top_n));
  return out;
}

}  // namespace plexus::ref
