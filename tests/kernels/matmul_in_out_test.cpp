// Weights stored (in, out) and read in place (WeightMatrix::in_out, GPT-2's Conv1D weights):
// the CPU matmul against the oracle and against the same weights copied to (out, in) on odd
// shapes, column slices (in_out_ld past the rows) included; and its bits across ISAs, threads
// and token counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_in_out.h"
#include "kernels/ref/ref_kernels.h"

namespace plexus {
namespace {

// A stored (cols, ld) matrix of random values in dtype t, and the view of its columns [first, first + rows).
struct InOutWeights {
  std::vector<std::uint8_t> bytes;  // (cols, ld) elements of t
  WeightMatrix m;                   // (rows, cols), in_out_ld = ld
};

InOutWeights random_in_out(DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t first,
                           std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  InOutWeights w;
  const std::size_t es = dtype_size(t);
  w.bytes.resize(static_cast<std::size_t>(cols * ld) * es);
  for (std::int64_t i = 0; i < cols * ld; ++i) {
    const float v = d(rng);
    if (t == DType::kF32) reinterpret_cast<float*>(w.bytes.data())[i] = v;
    if (t == DType::kBF16) reinterpret_cast<std::uint16_t*>(w.bytes.data())[i] = f32_to_bf16(v);
    if (t == DType::kF16) reinterpret_cast<std::uint16_t*>(w.bytes.data())[i] = f32_to_f16(v);
  }
  w.m = WeightMatrix{w.bytes.data() + static_cast<std::size_t>(first) * es, t, rows, cols};
  w.m.in_out_ld = ld;
  return w;
}

// The same weights as an ordinary (rows, cols) matrix, copied element by element.
std::vector<std::uint8_t> out_in_copy(const InOutWeights& w) {
  const std::size_t es = dtype_size(w.m.dtype);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(w.m.rows * w.m.cols) * es);
  const auto* from = static_cast<const std::uint8_t*>(w.m.data);
  for (std::int64_t r = 0; r < w.m.rows; ++r)
    for (std::int64_t c = 0; c < w.m.cols; ++c)
      std::memcpy(out.data() + static_cast<std::size_t>(r * w.m.cols + c) * es,
                  from + static_cast<std::size_t>(c * w.m.in_out_ld + r) * es, es);
  return out;
}

std::vector<float> random_floats(std::int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out{Isa::kGeneric};
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512})
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

TEST(MatmulInOut, OracleReadsTheTransposedLayout) {
  // ref::matmul of the in-place view equals ref::matmul of an (out, in) copy, bit for bit.
  std::mt19937 rng(7);
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    const std::int64_t rows = 5, cols = 7, ld = 16, first = 3, n = 3;
    const InOutWeights w = random_in_out(t, rows, cols, ld, first, rng);
    const std::vector<std::uint8_t> copy = out_in_copy(w);
    const WeightMatrix plain{copy.data(), t, rows, cols};
    const std::vector<float> x = random_floats(n * cols, rng);
    std::vector<float> a(static_cast<std::size_t>(n * rows)), b(a.size());
    ref::matmul(w.m, x.data(), n, a.data());
    ref::matmul(plain, x.data(), n, b.data());
    EXPECT_EQ(a, b) << dtype_name(t);
    EXPECT_EQ(ref::weight_at(w.m, 4, 6), ref::weight_at(plain, 4, 6));
  }
}

TEST(MatmulInOut, MatchesOracleOnOddShapesAndColumnSlices) {
  std::mt19937 rng(1);
  ThreadPool pool(3);
  for (Isa isa : supported_isas()) {
    const IsaKernels& k = isa_kernels(isa);
    for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (std::int64_t rows : {1, 3, 17, 300}) {
        for (std::int64_t cols : {1, 3, 65, 130}) {
          for (std::int64_t pad : {0, 5}) {  // pad: the view is columns [pad, pad + rows) of a wider matrix
            for (std::int64_t n : {1, 3, 4, 5, 17}) {
              const InOutWeights w = random_in_out(t, rows, cols, rows + 2 * pad, pad, rng);
              const std::vector<float> x = random_floats(n * (cols + 2), rng);  // ldx = cols + 2
              std::vector<float> want(static_cast<std::size_t>(n * rows));
              std::vector<float> xs(static_cast<std::size_t>(n * cols));
              for (std::int64_t i = 0; i < n; ++i)
                std::copy_n(x.begin() + i * (cols + 2), cols, xs.begin() + i * cols);
              ref::matmul(w.m, xs.data(), n, want.data());
              std::vector<float> got(static_cast<std::size_t>(n * (rows + 1)), -7.0f);  // ldy = rows + 1
              const MatmulPart part{w.m, got.data(), rows + 1};
              matmul(k, pool, {&part, 1}, x.data(), n, cols + 2);
              const double tol = 1e-5 * std::sqrt(static_cast<double>(cols)) * 4 + 1e-6;
              for (std::int64_t i = 0; i < n; ++i) {
                for (std::int64_t r = 0; r < rows; ++r) {
                  const double e = want[static_cast<std::size_t>(i * rows + r)];
                  ASSERT_NEAR(got[static_cast<std::size_t>(i * (rows + 1) + r)], e, tol * std::max(1.0, std::fabs(e)))
                      << k.name << " " << dtype_name(t) << " rows=" << rows << " cols=" << cols << " pad=" << pad
                      << " n=" << n;
                }
                ASSERT_EQ(got[static_cast<std::size_t>(i * (rows + 1) + rows)], -7.0f) << "past the part's rows";
              }
            }
          }
        }
      }
    }
  }
}

TEST(MatmulInOut, BitwiseAcrossIsasThreadsAndTokenCounts) {
  // Every output is one f32 FMA chain over the inputs in order: no split changes a bit.
  std::mt19937 rng(2);
  const std::int64_t rows = 531, cols = 150, n = 9;
  for (DType t : {DType::kF32, DType::kBF16}) {
    const InOutWeights w = random_in_out(t, rows, cols, 3 * rows, rows, rng);
    const std::vector<float> x = random_floats(n * cols, rng);
    std::vector<float> first;
    for (Isa isa : supported_isas()) {
      for (int threads : {1, 4}) {
        ThreadPool pool(threads);
        std::vector<float> all(static_cast<std::size_t>(n * rows));
        const MatmulPart part{w.m, all.data(), rows};
        matmul(isa_kernels(isa), pool, {&part, 1}, x.data(), n, cols);
        for (std::int64_t tok : {0, 4, 8}) {  // decode of one token: the same bits as in the batch
          std::vector<float> one(static_cast<std::size_t>(rows));
          const MatmulPart p1{w.m, one.data(), rows};
          matmul(isa_kernels(isa), pool, {&p1, 1}, x.data() + tok * cols, 1, cols);
          ASSERT_EQ(0, std::memcmp(one.data(), all.data() + tok * rows, one.size() * sizeof(float))) << "token " << tok;
        }
        if (first.empty()) first = all;
        ASSERT_EQ(first, all) << isa_name(isa) << " " << threads << " threads " << dtype_name(t);
      }
    }
  }
}

TEST(MatmulInOut, SharesALaunchWithOrdinaryParts) {
  // q, k, v as three column slices of one stored (in, 3·out) matrix, beside an (out, in) part.
  std::mt19937 rng(3);
  ThreadPool pool(2);
  const std::int64_t H = 24, cols = 40, n = 6;
  const InOutWeights fused = random_in_out(DType::kBF16, 3 * H, cols, 3 * H, 0, rng);
  std::vector<float> ys[3];
  MatmulPart parts[3];
  for (int i = 0; i < 3; ++i) {
    WeightMatrix v = fused.m;
    v.rows = H;
    v.data = static_cast<const std::uint8_t*>(fused.m.data) + i * H * 2;
    ys[i].assign(static_cast<std::size_t>(n * H), 0.0f);
    parts[i] = MatmulPart{v, ys[i].data(), H};
  }
  const std::vector<float> x = random_floats(n * cols, rng);
  matmul(isa_kernels(best_isa()), pool, parts, x.data(), n, cols);
  std::vector<float> all(static_cast<std::size_t>(n * 3 * H));
  ref::matmul(fused.m, x.data(), n, all.data());
  for (int i = 0; i < 3; ++i)
    for (std::int64_t t = 0; t < n; ++t)
      for (std::int64_t r = 0; r < H; ++r)
        EXPECT_NEAR(ys[i][static_cast<std::size_t>(t * H + r)], all[static_cast<std::size_t>(t * 3 * H + i * H + r)], 1e-4);
}

TEST(MatmulInOut, BytesSpanToTheLastElement) {
  WeightMatrix w{nullptr, DType::kBF16, 4, 3};
  EXPECT_EQ(w.bytes(), 4 * 3 * 2);
  w.in_out_ld = 12;  // a column slice of a (3, 12) matrix: two full stored rows and 4 elements of the third
  EXPECT_EQ(w.bytes(), (2 * 12 + 4) * 2);
}

}  // namespace
}  // namespace plexus
