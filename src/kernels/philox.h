// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
// counter-based generator of the samplers in kernels/ref and kernels/cuda: one header, compiled
// for the host and (under nvcc) the device, so both draw the same numbers.
#pragma once
#include <cstdint>

#include "kernels/host_device.h"

namespace plexus {

struct Philox4 {
  std::uint32_t x[4];
};

// The 4 words of block `counter` under key (k0, k1); Random123's philox4x32 with 10 rounds.
PLEXUS_HOST_DEVICE inline Philox4 philox4x32_10(Philox4 c, std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // key increments per round
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c.x[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c.x[2];
    c = Philox4{{static_cast<std::uint32_t>(p1 >> 32) ^ c.x[1] ^ k0, static_cast<std::uint32_t>(p1),
                 static_cast<std::uint32_t>(p0 >> 32) ^ c.x[3] ^ k1, static_cast<std::uint32_t>(p0)}};
  }
  return c;
}

// The uniform in [0, 1) of request `seed`'s token `step`: key = seed (low word first), counter =
// {step low, step high, 0, 0}; 53 bits from the first two output words (x1 high, x0 low).
PLEXUS_HOST_DEVICE inline double philox_uniform(std::uint64_t seed, std::uint64_t step) {
  const Philox4 r = philox4x32_10(Philox4{{static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(step >> 32), 0, 0}},
                                  static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  const std::uint64_t bits = ((static_cast<std::uint64_t>(r.x[1]) << 32) | r.x[0]) >> 11;
  return static_cast<double>(bits) * 0x1p-53;
}

}  // namespace plexus
