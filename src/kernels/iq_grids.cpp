// The IQ codebooks decoded from their packed form (iq_grids.h).
#include "kernels/iq_grids.h"

#include <cstddef>

namespace plexus {
namespace {

#include "kernels/iq_grids_data.inc"

// entries × per_entry elements, each `bits` wide at slots of 8 / per_byte bits, as indices into map.
template <class T, std::size_t N, std::size_t E>
void unpack(const std::uint8_t* packed, int bits, const int* map, T (&out)[N][E]) {
  const int per_byte = bits == 2 ? 4 : 2;  // 3-bit indices sit in 4-bit slots
  const int slot = 8 / per_byte;
  for (std::size_t i = 0; i < N; ++i) {
    for (std::size_t e = 0; e < E; ++e) {
      const std::size_t k = i * E + e;
      const int code = (packed[k / per_byte] >> (static_cast<int>(k % per_byte) * slot)) & ((1 << bits) - 1);
      out[i][e] = static_cast<T>(map[code]);
    }
  }
}

IqGrids decode() {
  IqGrids g{};
  const int iq2[] = {8, 25, 43}, iq3xxs[] = {4, 12, 20, 28, 36, 44, 52, 62}, iq3s[] = {1, 3, 5, 7, 9, 11, 13, 15},
            iq1[] = {-1, 0, 1};
  unpack(kIq2xxsPacked, 2, iq2, g.iq2xxs);
  unpack(kIq2xsPacked, 2, iq2, g.iq2xs);
  unpack(kIq2sPacked, 2, iq2, g.iq2s);
  unpack(kIq3xxsPacked, 3, iq3xxs, g.iq3xxs);
  unpack(kIq3sPacked, 3, iq3s, g.iq3s);
  unpack(kIq1sPacked, 2, iq1, g.iq1s);
  return g;
}

}  // namespace

const IqGrids& iq_grids() {
  static const IqGrids grids = decode();
  return grids;
}

}  // namespace plexus
