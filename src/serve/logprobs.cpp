// Log-softmax in double over one logits row, and the top k of it.
#include "serve/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace plexus {

TokenEvent token_event(const float* logits, std::int64_t vocab, std::int32_t id, int top) {
  TokenEvent event;
  event.id = id;
  if (top < 0) return event;
  const float max = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (std::int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  const double log_z = static_cast<double>(max) + std::log(sum);
  const auto logprob = [&](std::int32_t i) { return static_cast<float>(static_cast<double>(logits[i]) - log_z); };
  event.logprob = logprob(id);
  const std::int64_t k = std::min<std::int64_t>(top, vocab);
  if (k == 0) return event;
  std::vector<std::int32_t> order(static_cast<std::size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::int32_t a, std::int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (std::int64_t i = 0; i < k; ++i) event.top.emplace_back(order[i], logprob(order[i]));
  return event;
}

}  // namespace plexus
