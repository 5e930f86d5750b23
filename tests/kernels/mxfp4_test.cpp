// MXFP4 (kernels/block_formats.h): hand-built blocks against the OCP definition, the quantiser's
// shared exponent and rounding rule and its error bound, and the repacking of Hugging Face's
// blocks/scales layout (kernels/mxfp4_hf.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/block_formats.h"
#include "kernels/mxfp4_hf.h"
#include "kernels/quantize.h"
#include "kernels/ref/dequantize.h"

namespace plexus {
namespace {

// E2M1 by its bits: sign (bit 3), exponent (bits 1..2, bias 1; 0: subnormal), mantissa (bit 0).
float e2m1(int code) {
  const int exp = (code >> 1) & 3, mant = code & 1;
  const float mag = exp == 0 ? 0.5f * static_cast<float>(mant) : std::ldexp(1.0f + 0.5f * static_cast<float>(mant), exp - 1);
  return (code & 8) ? -mag : mag;
}

std::vector<float> decode(const std::vector<BlockMXFP4>& b) {
  std::vector<float> y(32 * b.size());
  dequantize_row(DType::kMXFP4, b.data(), y.data(), static_cast<std::int64_t>(y.size()));
  return y;
}

TEST(Mxfp4, SizesAndNames) {
  EXPECT_EQ(dtype_block_elems(DType::kMXFP4), 32);
  EXPECT_EQ(dtype_block_bytes(DType::kMXFP4), 17);
  EXPECT_EQ(dtype_row_bytes(DType::kMXFP4, 2880), 90 * 17);
  EXPECT_EQ(dtype_name(DType::kMXFP4), "MXFP4");
  EXPECT_TRUE(dtype_is_block(DType::kMXFP4));
}

// e = 127 is the scale 1: each code decodes to its E2M1 value, code 8 to −0; the low nibbles are
// elements 0..15 and the high ones 16..31.
TEST(Mxfp4, HandBuiltBlocksDecodeToTheirE2M1Values) {
  std::vector<BlockMXFP4> b(1);
  b[0].e = 127;
  for (int j = 0; j < 16; ++j) b[0].qs[j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
  std::vector<float> y = decode(b);
  const float want[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[static_cast<std::size_t>(j)], want[j]) << "code " << j;
    EXPECT_EQ(y[static_cast<std::size_t>(j)], e2m1(j)) << "code " << j;
    EXPECT_EQ(y[static_cast<std::size_t>(j + 16)], want[15 - j]) << "code " << 15 - j;
  }
  EXPECT_TRUE(std::signbit(y[8])) << "code 8 is -0";
  EXPECT_FALSE(std::signbit(y[0]));
  // The scale is 2^(e - 127): e = 130 multiplies by 8, e = 120 divides by 128; e = 0 and 255
  // are 2^-127 (a subnormal times 0.5 stays exact) and 2^128 (0.5 of it is 2^127).
  for (const int e : {130, 120, 0, 255}) {
    b[0].e = static_cast<std::uint8_t>(e);
    y = decode(b);
    EXPECT_EQ(y[1], std::ldexp(0.5f, e - 127)) << "e " << e;
    EXPECT_EQ(y[16], std::ldexp(-6.0f, e - 127)) << "e " << e;  // code 15 (e = 255: -inf)
  }
  EXPECT_EQ(y[1], 0x1p127f);
}

// kMxfp4Values are the doubled E2M1 values the kernels multiply with 2^(e − 128).
TEST(Mxfp4, KernelValuesAreTheDoubledCodesAtHalfTheScale) {
  for (int c = 0; c < 16; ++c) EXPECT_EQ(static_cast<float>(kMxfp4Values[c]), 2.0f * e2m1(c)) << "code " << c;
  for (std::uint32_t e = 0; e < 256; ++e) {
    float half;
    const std::uint32_t bits = mxfp4_half_scale_bits(e);
    std::memcpy(&half, &bits, 4);
    EXPECT_EQ(half, std::ldexp(1.0f, static_cast<int>(e) - 128)) << "e " << e;
  }
}

BlockMXFP4 quantize_block(const float* x) {
  BlockMXFP4 b;
  quantize_row(DType::kMXFP4, x, &b, 32);
  return b;
}
int code(const BlockMXFP4& b, int i) { return i < 16 ? b.qs[i] & 15 : b.qs[i - 16] >> 4; }

// e = floor(log2(max|x|)) − 2 + 127: max|x| = 7.5 gives e = 127 (scale 1), so 7.5 clamps to 6;
// ties go to the smaller magnitude (5 → 4, 1.25 → 1, −0.25 → +0).
TEST(Mxfp4, QuantiserFollowsTheSharedExponentRule) {
  float x[32] = {};
  x[0] = 7.5f;
  x[1] = 5.0f;
  x[2] = 1.25f;
  x[3] = -0.25f;
  x[4] = -0.3f;
  x[17] = -3.0f;
  x[31] = 0.74f;
  BlockMXFP4 b = quantize_block(x);
  EXPECT_EQ(b.e, 127);
  EXPECT_EQ(code(b, 0), 7);    // 6
  EXPECT_EQ(code(b, 1), 6);    // 4
  EXPECT_EQ(code(b, 2), 2);    // 1
  EXPECT_EQ(code(b, 3), 0);    // +0
  EXPECT_EQ(code(b, 4), 9);    // -0.5
  EXPECT_EQ(code(b, 17), 13);  // -3
  EXPECT_EQ(code(b, 31), 1);   // 0.5
  EXPECT_EQ(code(b, 5), 0);
  x[0] = 8.0f;  // one more binade: e = 128, scale 2
  EXPECT_EQ(quantize_block(x).e, 128);
  x[0] = -0.0625f;  // max|x| = 5 now: e = 127 still
  EXPECT_EQ(quantize_block(x).e, 127);
  const float zeros[32] = {};
  b = quantize_block(zeros);
  EXPECT_EQ(b.e, 0);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(code(b, i), 0);
  float tiny[32] = {};
  tiny[9] = 1e-45f;  // floor(log2) − 2 + 127 < 0: e clamps to 0, the value rounds to 0
  EXPECT_EQ(quantize_block(tiny).e, 0);
  float huge[32] = {};
  huge[9] = 3e38f;  // floor(log2 3e38) = 127: e = 252
  b = quantize_block(huge);
  EXPECT_EQ(b.e, 252);
  EXPECT_EQ(decode({b})[9], 0x1p127f * 1.5f);  // 3e38 / 2^125 = 7.05: clamped to 6 · 2^125
}

// Blocks whose values are all on the grid of their scale, the largest 6 or 4 times it, come back
// exactly, byte for byte.
TEST(Mxfp4, GridValuesRoundTripExactly) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> c16(0, 15), k(-20, 20);
  for (int trial = 0; trial < 200; ++trial) {
    BlockMXFP4 b;
    b.e = static_cast<std::uint8_t>(127 + k(rng));
    int codes[32];
    for (int& c : codes) c = c16(rng);
    codes[trial % 32] = trial % 2 ? 7 : 14;  // a 6 or a −4: max|x| in [4, 8) times the scale
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>(codes[j] | (codes[j + 16] << 4));
    const std::vector<float> x = decode({b});
    const BlockMXFP4 r = quantize_block(x.data());
    EXPECT_EQ(r.e, b.e) << trial;
    const std::vector<float> y = decode({r});
    for (int i = 0; i < 32; ++i) {
      EXPECT_EQ(y[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(i)]) << trial << " " << i;
      if (codes[i] != 8) {  // −0 comes back as +0
        EXPECT_EQ(code(r, i), codes[i]) << trial << " " << i;
      }
    }
  }
}

// Each weight moves at most half the gap between its neighbouring grid values (gaps 0.5, 1 and 2
// times the scale s below 2, 4 and 6 s); above 6 s it is 6 s.
TEST(Mxfp4, QuantisationErrorIsWithinHalfAGridStep) {
  std::mt19937 rng(9);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> sd(-30.0f, 30.0f);
  for (int row = 0; row < 64; ++row) {
    std::vector<float> x(32 * 64);
    const float scale = std::exp2(sd(rng));
    for (float& v : x) v = g(rng) * scale;
    std::vector<BlockMXFP4> b(64);
    quantize_row(DType::kMXFP4, x.data(), b.data(), static_cast<std::int64_t>(x.size()));
    const std::vector<float> y = decode(b);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float s = std::ldexp(1.0f, b[i / 32].e - 127), a = std::fabs(x[i]);
      const float bound = a <= 2 * s ? 0.25f * s : a <= 4 * s ? 0.5f * s : s;
      if (a <= 6 * s) {
        ASSERT_LE(std::fabs(y[i] - x[i]), bound) << row << " " << i << " x " << x[i] << " s " << s;
      } else {
        ASSERT_EQ(y[i], std::copysign(6 * s, x[i])) << row << " " << i;
      }
    }
  }
}

// A Hugging Face row of two blocks: byte i of a block holds element 2i (low nibble) and 2i + 1
// (high). Block 0's bytes 0..15 are i: element 2i has code i, element 2i + 1 code 0, so GGUF's
// qs[j] (element j low, j + 16 high) is (j / 2) | ((j / 2 + 8) << 4) for even j, 0 for odd.
TEST(Mxfp4, HuggingFaceBlocksRepackIntoGgufOrder) {
  std::uint8_t blocks[32], scales[2] = {127, 119};
  for (int i = 0; i < 16; ++i) blocks[i] = static_cast<std::uint8_t>(i);
  for (int i = 0; i < 16; ++i) blocks[16 + i] = static_cast<std::uint8_t>(0xF0 | (15 - i));
  BlockMXFP4 out[2];
  mxfp4_from_hf_blocks(blocks, scales, 2, out);
  const std::uint8_t want0[16] = {0x80, 0, 0x91, 0, 0xA2, 0, 0xB3, 0, 0xC4, 0, 0xD5, 0, 0xE6, 0, 0xF7, 0};
  EXPECT_EQ(out[0].e, 127);
  EXPECT_EQ(std::memcmp(out[0].qs, want0, 16), 0);
  // Block 1: element 2i has code 15 − i, element 2i + 1 code 15.
  EXPECT_EQ(out[1].e, 119);
  for (int j = 0; j < 16; ++j) {
    const int lo = j % 2 ? 15 : 15 - j / 2, hi = j % 2 ? 15 : 15 - (j + 16) / 2;
    EXPECT_EQ(out[1].qs[j], lo | (hi << 4)) << j;
  }
}

// transformers' convert_moe_packed_tensors: out[2i] = FP4_VALUES[b & 15], out[2i + 1] =
// FP4_VALUES[b >> 4], times 2^(e − 127). The repacked blocks decode to the same values, for a
// matrix of 3 rows × 4 blocks repacked at once.
TEST(Mxfp4, RepackedHuggingFaceTensorsDecodeAsTransformersDoes) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255), e(100, 140);
  const int rows = 3, nb = 4;
  std::vector<std::uint8_t> blocks(static_cast<std::size_t>(rows * nb * 16)), scales(static_cast<std::size_t>(rows * nb));
  for (auto& v : blocks) v = static_cast<std::uint8_t>(byte(rng));
  for (auto& v : scales) v = static_cast<std::uint8_t>(e(rng));
  std::vector<float> want(static_cast<std::size_t>(rows * nb * 32));
  for (std::size_t g = 0; g < scales.size(); ++g) {
    for (int i = 0; i < 16; ++i) {
      const std::uint8_t v = blocks[16 * g + static_cast<std::size_t>(i)];
      want[32 * g + 2 * static_cast<std::size_t>(i)] = std::ldexp(e2m1(v & 15), scales[g] - 127);
      want[32 * g + 2 * static_cast<std::size_t>(i) + 1] = std::ldexp(e2m1(v >> 4), scales[g] - 127);
    }
  }
  std::vector<BlockMXFP4> out(scales.size());
  mxfp4_from_hf_blocks(blocks.data(), scales.data(), rows * nb, out.data());
  const std::vector<float> got = decode(out);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << i;
    EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << i;
  }
}

// mxfp4_to_hf_blocks inverts mxfp4_from_hf_blocks byte for byte both ways: random Hugging Face
// bytes repacked and back, and random BlockMXFP4 written out and read back. Element 2i of a
// written block is byte i's low nibble, as transformers reads it.
TEST(Mxfp4, HuggingFaceLayoutRoundTripsBothWays) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  const int nb = 37;
  std::vector<std::uint8_t> blocks(16 * nb), scales(nb);
  for (auto& v : blocks) v = static_cast<std::uint8_t>(byte(rng));
  for (auto& v : scales) v = static_cast<std::uint8_t>(byte(rng));
  std::vector<BlockMXFP4> packed(nb);
  mxfp4_from_hf_blocks(blocks.data(), scales.data(), nb, packed.data());
  std::vector<std::uint8_t> blocks2(blocks.size(), 0xAA), scales2(scales.size(), 0xAA);
  mxfp4_to_hf_blocks(packed.data(), nb, blocks2.data(), scales2.data());
  EXPECT_EQ(blocks2, blocks);
  EXPECT_EQ(scales2, scales);

  std::vector<BlockMXFP4> q(nb);
  std::vector<float> x(32 * nb);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float& v : x) v = g(rng);
  quantize_row(DType::kMXFP4, x.data(), q.data(), static_cast<std::int64_t>(x.size()));
  mxfp4_to_hf_blocks(q.data(), nb, blocks2.data(), scales2.data());
  const std::vector<float> y = decode(q);
  for (int i = 0; i < 32 * nb; ++i) {  // the written bytes read as transformers reads them
    const std::uint8_t v = blocks2[static_cast<std::size_t>(16 * (i / 32) + (i % 32) / 2)];
    const int c = i % 2 ? v >> 4 : v & 15;
    EXPECT_EQ(std::ldexp(e2m1(c), scales2[static_cast<std::size_t>(i / 32)] - 127), y[static_cast<std::size_t>(i)]) << i;
  }
  std::vector<BlockMXFP4> back(nb);
  mxfp4_from_hf_blocks(blocks2.data(), scales2.data(), nb, back.data());
  EXPECT_EQ(std::memcmp(back.data(), q.data(), sizeof(BlockMXFP4) * nb), 0);
}

}  // namespace
}  // namespace plexus
