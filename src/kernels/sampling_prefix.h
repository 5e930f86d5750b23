// The GPU sampler's sort-free search (kernels/cuda/sampling.cu) for a top-k or top-p set: a
// prefix of the row in the order (logit desc, id asc) found by bisection. Compiled for the host
// too, so the CPU tests check the search against kernels/ref's sort.
#pragma once
#include <climits>
#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

namespace plexus {

// The float's bits mapped so that unsigned order is float order (finite values; -0 as +0).
PLEXUS_HOST_DEVICE inline std::uint32_t ordered_key(float v) {
  const float z = v == 0.0f ? 0.0f : v;
#ifdef __CUDA_ARCH__
  const std::uint32_t b = __float_as_uint(z);
#else
  std::uint32_t b;
  std::memcpy(&b, &z, sizeof b);
#endif
  return b & 0x80000000u ? ~b : b | 0x80000000u;
}

// A prefix of the row in the order (logit desc, id asc): the tokens with key > last_key, and
// those with key == last_key and id <= last_id. The default one is the whole row.
struct SamplePrefix {
  std::uint32_t last_key = 0;
  std::int64_t last_id = LLONG_MAX;
  PLEXUS_HOST_DEVICE bool has(std::uint32_t key, std::int64_t i) const {
    return key > last_key || (key == last_key && i <= last_id);
  }
};

// The shortest prefix of a set (itself a prefix) whose measure (a count, or a weight) reaches
// `target` > 0, given keys(lo, hi): the measure of the set's tokens with key in [lo, hi], and
// ids(k, c): that of its tokens with key == k and id <= c (vocab ids in all). It is the
// largest key k with measure(key >= k) >= target, then the smallest id c among key == k with
// measure(key > k) + ids(k, c) >= target. The key bisection keeps the answer in [lo, hi] and
// `above` = measure(key > hi), so a pass weighs only the tokens in [mid, hi]: after the sign
// and exponent bits the window holds few tokens. 32 calls of keys, about log2(vocab) of ids.
// Rounding of `above` can end on a key no token has; the prefix is then the tokens above it,
// never empty (a pass found `above` and a window above it reaching the target).
template <typename Keys, typename Ids>
PLEXUS_HOST_DEVICE SamplePrefix shortest_prefix(std::int64_t vocab, double target, Keys keys, Ids ids) {
  std::uint32_t lo = 0, hi = 0xffffffffu;
  double above = 0;
  while (lo < hi) {
    const std::uint32_t mid = lo + static_cast<std::uint32_t>((std::uint64_t{hi} - lo + 1) / 2);
    const double window = keys(mid, hi);
    if (above + window >= target) {
      lo = mid;
    } else {
      hi = mid - 1;
      above += window;
    }
  }
  std::int64_t a = 0, b = vocab - 1;  // `above` is now measure(key > lo)
  while (a < b) {
    const std::int64_t mid = a + (b - a) / 2;
    if (above + ids(lo, mid) >= target) b = mid; else a = mid + 1;
  }
  return SamplePrefix{lo, a};
}

}  // namespace plexus
