// The codebooks of llama.cpp's IQ1/IQ2/IQ3 weight types (kernels/ref/dequantize_iq.h): each entry
// is 8 (IQ2, IQ1) or 4 (IQ3) weight magnitudes picked as one index. Decoded once from the packed
// tables in iq_grids_data.inc (made by benchmarks/llama_cpp/make_iq_grids.py).
#pragma once
#include <cstdint>

namespace plexus {

struct IqGrids {
  std::uint8_t iq2xxs[256][8];  // values 8, 25, 43
  std::uint8_t iq2xs[512][8];
  std::uint8_t iq2s[1024][8];
  std::uint8_t iq3xxs[256][4];  // values 4, 12, …, 52, 62
  std::uint8_t iq3s[512][4];    // values 1, 3, …, 15
  std::int8_t iq1s[2048][8];    // values −1, 0, 1 (IQ1_S and IQ1_M)
};

const IqGrids& iq_grids();

// The sign byte of 7-bit index i (IQ2_XXS, IQ2_XS, IQ3_XXS): bits 0..6 are i's, bit 7 makes the
// count of set bits even. Bit j set: element j of the 8 is negative.
inline std::uint8_t iq_ksign(unsigned i) {
  return static_cast<std::uint8_t>((i & 127) | ((__builtin_popcount(i & 127) & 1) << 7));
}

}  // namespace plexus
