// Hugging Face MXFP4 blocks/scales to and from BlockMXFP4 (mxfp4_hf.h): the nibbles reordered,
// the codes and exponents unchanged.
#include "kernels/mxfp4_hf.h"

#include "kernels/block_formats.h"

namespace plexus {

void mxfp4_from_hf_blocks(const std::uint8_t* blocks, const std::uint8_t* scales, std::int64_t nb, void* out) {
  auto* b = static_cast<BlockMXFP4*>(out);
  for (std::int64_t i = 0; i < nb; ++i, blocks += 16) {
    // Hugging Face's element k of the block: byte k / 2, the high nibble when k is odd.
    const auto code = [&](int k) { return (blocks[k / 2] >> (4 * (k % 2))) & 15; };
    b[i].e = scales[i];
    for (int j = 0; j < 16; ++j) b[i].qs[j] = static_cast<std::uint8_t>(code(j) | (code(j + 16) << 4));
  }
}

void mxfp4_to_hf_blocks(const void* in, std::int64_t nb, std::uint8_t* blocks, std::uint8_t* scales) {
  const auto* b = static_cast<const BlockMXFP4*>(in);
  for (std::int64_t i = 0; i < nb; ++i, blocks += 16) {
    // BlockMXFP4's element j: qs[j % 16], the high nibble when j >= 16.
    const auto code = [&](int j) { return (b[i].qs[j % 16] >> (4 * (j / 16))) & 15; };
    scales[i] = b[i].e;
    for (int k = 0; k < 16; ++k) blocks[k] = static_cast<std::uint8_t>(code(2 * k) | (code(2 * k + 1) << 4));
  }
}

}  // namespace plexus
