// One request's sampling parameters as the samplers of kernels/ref and kernels/cuda read them
// (one per logits row; plain data, the same layout on the host and the device).
#pragma once
#include <cstdint>

namespace plexus {

// temperature below kSampleGreedyBelow (runtime/sampler.h's kGreedyBelowTemperature) is greedy;
// top_k 0, top_p 1 and min_p 0 mean no limit. Callers check the ranges: top_k >= 0,
// top_p in (0, 1], min_p in [0, 1].
struct SamplingParams {
  float temperature = 0;
  std::int32_t top_k = 0;
  float top_p = 1;
  float min_p = 0;
};

inline constexpr double kSampleGreedyBelow = 1e-5;  // runtime/sampler.h's kGreedyBelowTemperature too

// The largest number of top logprobs a row reports (chat's top_logprobs limit).
inline constexpr int kMaxTopLogprobs = 20;

}  // namespace plexus
