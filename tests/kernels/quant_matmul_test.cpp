// Matmuls of block-format weights (every GGUF block format plexus reads) with 8-bit
// activations, every ISA this CPU has, against the oracles: tightly against the same quantised
// activations in double, loosely (a worst-case bound) against the f32 product; and the bitwise
// promises across ISAs, thread counts, token batching and launches of several parts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/block_formats.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_x.h"
#include "kernels/ref/dequantize.h"
#include "kernels/ref/ref_kernels.h"

namespace plexus {
namespace {

constexpr const auto& kFormats = kBlockFormats;  // every block format (core/dtype.h)

struct QuantWeights {
  std::vector<std::uint8_t> bytes;
  WeightMatrix m;
};

// Random bytes (every byte pattern is a valid block: every bit of the packed values, scales and
// mins occurs) with f16 scales of a sane size (Q4_1's and Q5_1's offsets of either sign; MXFP4's
// E8M0 scales 2^-10..2^-4, subnormal in one block in 16: 2^-127).
QuantWeights random_block_weights(DType t, std::int64_t rows, std::int64_t cols, std::mt19937& rng) {
  QuantWeights w;
  w.bytes.resize(static_cast<std::size_t>(rows * dtype_row_bytes(t, cols)));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : w.bytes) b = static_cast<std::uint8_t>(byte(rng));
  std::uniform_real_distribution<float> scale(0.001f, 0.02f);
  const auto f16 = [&](float s) { return f32_to_f16(scale(rng) * s); };
  const std::int64_t nb = rows * cols / dtype_block_elems(t);
  for (std::int64_t i = 0; i < nb; ++i) {
    std::uint8_t* b = w.bytes.data() + i * dtype_block_bytes(t);
    switch (t) {
      case DType::kQ8_0: reinterpret_cast<BlockQ8_0*>(b)->d = f16(1); break;
      case DType::kQ4_0: reinterpret_cast<BlockQ4_0*>(b)->d = f16(1); break;
      case DType::kQ4_1:
        reinterpret_cast<BlockQ4_1*>(b)->d = f16(1);
        reinterpret_cast<BlockQ4_1*>(b)->m = f16(byte(rng) < 128 ? -8 : 4);
        break;
      case DType::kQ5_0: reinterpret_cast<BlockQ5_0*>(b)->d = f16(1); break;
      case DType::kQ5_1:
        reinterpret_cast<BlockQ5_1*>(b)->d = f16(1);
        reinterpret_cast<BlockQ5_1*>(b)->m = f16(byte(rng) < 128 ? -16 : 8);
        break;
      case DType::kIQ4_NL: reinterpret_cast<BlockIQ4_NL*>(b)->d = f16(0.1f); break;
      case DType::kQ2_K:
        reinterpret_cast<BlockQ2_K*>(b)->d = f16(0.2f);
        reinterpret_cast<BlockQ2_K*>(b)->dmin = f16(0.2f);
        break;
      case DType::kQ3_K: reinterpret_cast<BlockQ3_K*>(b)->d = f16(0.1f); break;
      case DType::kQ4_K:
        reinterpret_cast<BlockQ4_K*>(b)->d = f16(0.1f);
        reinterpret_cast<BlockQ4_K*>(b)->dmin = f16(0.1f);
        break;
      case DType::kQ5_K:
        reinterpret_cast<BlockQ5_K*>(b)->d = f16(0.05f);
        reinterpret_cast<BlockQ5_K*>(b)->dmin = f16(0.1f);
        break;
      case DType::kQ6_K: reinterpret_cast<BlockQ6_K*>(b)->d = f16(0.01f); break;
      case DType::kIQ4_XS: reinterpret_cast<BlockIQ4_XS*>(b)->d = f16(0.005f); break;
      case DType::kMXFP4: {
        const int r = byte(rng);
        reinterpret_cast<BlockMXFP4*>(b)->e = static_cast<std::uint8_t>(r < 16 ? 0 : 117 + r % 7);
        break;
      }
      case DType::kF32:
      case DType::kBF16:
      case DType::kF16: break;
    }
  }
  w.m = WeightMatrix{w.bytes.data(), t, rows, cols};
  return w;
}

std::vector<float> random_activations(std::int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<Isa> quant_isas() {
  std::vector<Isa> out{Isa::kGeneric};
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16}) {
    if (isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

std::vector<float> run(const IsaKernels& k, ThreadPool& pool, const WeightMatrix& w, const float* x, std::int64_t n) {
  std::vector<float> y(static_cast<std::size_t>(n * w.rows), NAN);
  const MatmulPart part{w, y.data(), w.rows};
  matmul(k, pool, {&part, 1}, x, n, w.cols);
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(QuantMatmul, MatchesOraclesOnEveryFormatAndIsa) {
  std::mt19937 rng(7);
  ThreadPool pool(3);
  for (DType t : kFormats) {
    std::vector<std::int64_t> col_sizes{256, 512, 4352};
    if (dtype_block_elems(t) == 32) col_sizes.insert(col_sizes.begin(), {32, 96});
    for (std::int64_t rows : {1, 3, 17, 64}) {
      for (std::int64_t cols : col_sizes) {
        for (std::int64_t n : {1, 2, 3, 4, 5, 17, 70}) {
          QuantWeights w = random_block_weights(t, rows, cols, rng);
          std::vector<float> x = random_activations(n * cols, rng);
          std::vector<float> tight(static_cast<std::size_t>(n * rows)), loose(tight.size());
          ref::matmul_quantized_x(w.m, x.data(), n, tight.data());
          ref::matmul(w.m, x.data(), n, loose.data());
          // Per row: the dequantised weights' L2 and L1 norms.
          std::vector<double> w_l2(static_cast<std::size_t>(rows)), w_l1(w_l2.size());
          std::vector<float> row(static_cast<std::size_t>(cols));
          for (std::int64_t r = 0; r < rows; ++r) {
            dequantize_row(t, w.m.row(r), row.data(), cols);
            for (float v : row) {
              w_l2[static_cast<std::size_t>(r)] += static_cast<double>(v) * v;
              w_l1[static_cast<std::size_t>(r)] += std::fabs(static_cast<double>(v));
            }
            w_l2[static_cast<std::size_t>(r)] = std::sqrt(w_l2[static_cast<std::size_t>(r)]);
          }
          std::vector<float> first;
          for (Isa isa : quant_isas()) {
            const IsaKernels& k = isa_kernels(isa);
            const std::vector<float> got = run(k, pool, w.m, x.data(), n);
            for (std::int64_t tk = 0; tk < n; ++tk) {
              double x_l2 = 0, x_max = 0;
              for (std::int64_t c = 0; c < cols; ++c) {
                const double v = x[static_cast<std::size_t>(tk * cols + c)];
                x_l2 += v * v;
                x_max = std::max(x_max, std::fabs(v));
              }
              x_l2 = std::sqrt(x_l2);
              for (std::int64_t r = 0; r < rows; ++r) {
                const std::size_t i = static_cast<std::size_t>(tk * rows + r);
                const double scale = w_l2[static_cast<std::size_t>(r)] * x_l2;
                // Same integers: only the f32 scaling and summing of the blocks differ.
                ASSERT_NEAR(got[i], tight[i], 1e-5 * scale + 1e-7)
                    << k.name << " " << dtype_name(t) << " rows=" << rows << " cols=" << cols << " n=" << n << " t=" << tk << " r=" << r;
                // Each x moves by at most half its block's step, max|x| / 254.
                const double bound = w_l1[static_cast<std::size_t>(r)] * x_max / 254.0 * 1.001 + 1e-5 * scale + 1e-7;
                ASSERT_NEAR(got[i], loose[i], bound)
                    << k.name << " " << dtype_name(t) << " rows=" << rows << " cols=" << cols << " n=" << n;
              }
            }
            if (first.empty()) first = got;
            else EXPECT_TRUE(same_bits(first, got)) << k.name << " vs generic " << dtype_name(t) << " rows=" << rows << " cols=" << cols << " n=" << n;
          }
        }
      }
    }
  }
}

// The quantised activations' error is far below the loose bound on typical data.
TEST(QuantMatmul, ActivationQuantisationErrorIsSmall) {
  std::mt19937 rng(3);
  ThreadPool pool(1);
  const std::int64_t rows = 64, cols = 4096, n = 4;
  for (DType t : kFormats) {
    QuantWeights w = random_block_weights(t, rows, cols, rng);
    std::vector<float> x = random_activations(n * cols, rng);
    std::vector<float> want(static_cast<std::size_t>(n * rows));
    ref::matmul(w.m, x.data(), n, want.data());
    const std::vector<float> got = run(isa_kernels(best_isa()), pool, w.m, x.data(), n);
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      err += (got[i] - want[i]) * static_cast<double>(got[i] - want[i]);
      norm += static_cast<double>(want[i]) * want[i];
    }
    EXPECT_LT(std::sqrt(err / norm), 0.02) << dtype_name(t);
  }
}

// Every table, thread count and batch (1 to 7 and 17 tokens: prefill's token tiles of 4 and their
// rests of 1, 2 and 3; three threads split the 67 rows into rests of 1 and 2 below a tile of 3)
// gives generic's bits.
TEST(QuantMatmul, SameBitsForEveryThreadCountAndBatching) {
  std::mt19937 rng(11);
  ThreadPool one(1), three(3);
  for (DType t : kFormats) {
    const std::int64_t rows = 67, cols = 512, n = 17;
    QuantWeights w = random_block_weights(t, rows, cols, rng);
    std::vector<float> x = random_activations(n * cols, rng);
    const std::vector<float> want = run(generic_kernels(), one, w.m, x.data(), n);
    for (Isa isa : quant_isas()) {
      const IsaKernels& k = isa_kernels(isa);
      EXPECT_TRUE(same_bits(want, run(k, one, w.m, x.data(), n))) << k.name << " " << dtype_name(t);
      EXPECT_TRUE(same_bits(want, run(k, three, w.m, x.data(), n))) << k.name << " " << dtype_name(t);
      for (std::int64_t batch : {1, 2, 3, 4, 5, 6, 7}) {  // every token in runs of `batch` (1: decode)
        for (std::int64_t t0 = 0; t0 < n; t0 += batch) {
          const std::int64_t nb = std::min(batch, n - t0);
          const std::vector<float> got = run(k, t0 % 2 == 0 ? three : one, w.m, x.data() + t0 * cols, nb);
          EXPECT_EQ(0, std::memcmp(got.data(), want.data() + t0 * rows, static_cast<std::size_t>(nb * rows) * sizeof(float)))
              << k.name << " " << dtype_name(t) << " batch=" << batch << " t0=" << t0;
        }
      }
    }
  }
}

// q/k/v as one launch with mixed formats (and a bf16 part): each part as if alone. The mixes
// are those of Q4_K_M-like and Q3_K_M / Q2_K-like files, and of their 32-block fallbacks.
TEST(QuantMatmul, MixedFormatsInOneLaunch) {
  std::mt19937 rng(5);
  ThreadPool pool(3);
  const std::int64_t cols = 768;
  const DType mixes[][4] = {{DType::kQ4_K, DType::kQ6_K, DType::kQ8_0, DType::kQ4_0},
                            {DType::kQ3_K, DType::kQ5_K, DType::kIQ4_XS, DType::kQ2_K},
                            {DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kQ4_1},
                            {DType::kMXFP4, DType::kQ8_0, DType::kMXFP4, DType::kIQ4_NL}};
  for (Isa isa : quant_isas()) {
    const IsaKernels& k = isa_kernels(isa);
    for (const auto& mix : mixes) {
      for (std::int64_t n : {1, 3, 12}) {
        QuantWeights q = random_block_weights(mix[0], 40, cols, rng);
        QuantWeights kk = random_block_weights(mix[1], 24, cols, rng);
        QuantWeights v = random_block_weights(mix[2], 24, cols, rng);
        QuantWeights o = random_block_weights(mix[3], 8, cols, rng);
        std::vector<std::uint16_t> bf(static_cast<std::size_t>(16 * cols));
        for (auto& e : bf) e = f32_to_bf16(std::normal_distribution<float>(0, 1)(rng));
        const WeightMatrix bw{bf.data(), DType::kBF16, 16, cols};
        std::vector<float> x = random_activations(n * cols, rng);
        const WeightMatrix ws[] = {q.m, kk.m, v.m, o.m, bw};
        std::vector<std::vector<float>> ys;
        std::vector<MatmulPart> parts;
        for (const WeightMatrix& w : ws) ys.emplace_back(static_cast<std::size_t>(n * w.rows), NAN);
        for (std::size_t i = 0; i < ys.size(); ++i) parts.push_back({ws[i], ys[i].data(), ws[i].rows});
        matmul(k, pool, parts, x.data(), n, cols);
        for (std::size_t i = 0; i < ys.size(); ++i) {
          EXPECT_TRUE(same_bits(ys[i], run(k, pool, ws[i], x.data(), n))) << k.name << " part " << i << " n=" << n;
        }
      }
    }
  }
}

TEST(QuantMatmul, SiluMulWithBlockWeights) {
  std::mt19937 rng(9);
  ThreadPool pool(3);
  const std::int64_t rows = 50, cols = 512;
  for (Isa isa : quant_isas()) {
    const IsaKernels& k = isa_kernels(isa);
    for (std::int64_t n : {1, 6}) {
      QuantWeights g = random_block_weights(DType::kQ4_K, rows, cols, rng);
      QuantWeights u = random_block_weights(DType::kQ6_K, rows, cols, rng);
      std::vector<float> x = random_activations(n * cols, rng);
      std::vector<float> gy(static_cast<std::size_t>(n * rows)), uy(gy.size());
      matmul_silu_mul(k, pool, {g.m, gy.data(), rows}, {u.m, uy.data(), rows}, x.data(), n, cols);
      std::vector<float> want = run(k, pool, g.m, x.data(), n);
      const std::vector<float> up = run(k, pool, u.m, x.data(), n);
      EXPECT_TRUE(same_bits(uy, up)) << k.name;
      k.silu_mul(want.data(), up.data(), want.data(), n * rows);
      EXPECT_TRUE(same_bits(gy, want)) << k.name << " n=" << n;
    }
  }
}

TEST(QuantX, FollowsItsDefinition) {
  std::mt19937 rng(13);
  for (DType t : {DType::kQ8_0, DType::kQ4_K}) {
    const std::int64_t cols = 512, blk = qx_block_elems(t);
    std::vector<float> x = random_activations(cols, rng);
    std::fill(x.begin(), x.begin() + blk, 0.0f);  // an all-zero block: d = 0, q = 0
    // A block of halves: amax 127 gives d = 1, so 0.5, 1.5, 2.5 … −126.5 are ties.
    for (std::int64_t i = 0; i < blk; ++i) x[static_cast<std::size_t>(blk + i)] = i == 0 ? 127.0f : (i % 2 ? 1 : -1) * (0.5f + static_cast<float>(i % 127));
    std::vector<std::uint8_t> q(static_cast<std::size_t>(qx_row_bytes(t, cols)));
    quantize_x(t, x.data(), cols, 1, cols, q.data());
    for (std::int64_t b = 0; b < cols / blk; ++b) {
      float d;
      const std::int8_t* qs;
      if (blk == 32) {
        d = reinterpret_cast<const XBlock32*>(q.data())[b].d;
        qs = reinterpret_cast<const XBlock32*>(q.data())[b].q;
      } else {
        const XBlock256& xb = reinterpret_cast<const XBlock256*>(q.data())[b];
        d = xb.d;
        qs = xb.q;
        for (int j = 0; j < 8; ++j) {
          int s = 0;
          for (int l = 0; l < 32; ++l) s += qs[32 * j + l];
          EXPECT_EQ(xb.sums[j], s);
        }
        for (int j = 0; j < 16; ++j) {
          int s = 0;
          for (int l = 0; l < 16; ++l) s += qs[16 * j + l];
          EXPECT_EQ(xb.sums16[j], s);
        }
      }
      float amax = 0;
      for (std::int64_t i = 0; i < blk; ++i) amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(b * blk + i)]));
      EXPECT_EQ(d, amax / 127.0f);
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      for (std::int64_t i = 0; i < blk; ++i) {
        const float v = x[static_cast<std::size_t>(b * blk + i)];
        EXPECT_LE(std::fabs(v - d * qs[i]), d * 0.5001f + 1e-30f) << b << " " << i;
        EXPECT_EQ(qs[i], std::clamp(std::nearbyint(v * id), -127.0f, 127.0f)) << b << " " << i;  // ties to even
      }
    }
  }
}

// Embedding gathers of block-format tables: the tables' to_f32 dequantises.
TEST(QuantMatmul, ToF32DequantisesBlockRows) {
  std::mt19937 rng(17);
  for (Isa isa : quant_isas()) {
    for (DType t : kFormats) {
      QuantWeights w = random_block_weights(t, 3, 512, rng);
      std::vector<float> want(512), got(512);
      dequantize_row(t, w.m.row(2), want.data(), 512);
      isa_kernels(isa).to_f32(t, w.m.row(2), got.data(), 512);
      EXPECT_TRUE(same_bits(want, got)) << isa_name(isa) << " " << dtype_name(t);
    }
  }
}

}  // namespace
}  // namespace plexus
