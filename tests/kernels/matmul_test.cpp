// Fast matmul against the oracle on awkward shapes, every dtype and every ISA this CPU has;
// and the bitwise promises: same bits across ISAs, thread counts and token batching.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/quantize.h"
#include "kernels/ref/ref_kernels.h"

namespace plexus {
namespace {

struct Weights {
  std::vector<std::uint8_t> bytes;
  WeightMatrix m;
};

Weights random_weights(DType t, std::int64_t rows, std::int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  Weights w;
  w.bytes.resize(static_cast<std::size_t>(rows * cols) * dtype_size(t));
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    const float v = d(rng);
    switch (t) {
      case DType::kF32: reinterpret_cast<float*>(w.bytes.data())[i] = v; break;
      case DType::kBF16: reinterpret_cast<std::uint16_t*>(w.bytes.data())[i] = f32_to_bf16(v); break;
      case DType::kF16: reinterpret_cast<std::uint16_t*>(w.bytes.data())[i] = f32_to_f16(v); break;
      default: break;  // a block format: quant_matmul_test.cpp
    }
  }
  w.m = WeightMatrix{w.bytes.data(), t, rows, cols};
  return w;
}

std::vector<float> random_vec(std::int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<Isa> isas() {
  std::vector<Isa> out{Isa::kGeneric};
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

TEST(Matmul, MatchesOracleOnAwkwardShapes) {
  std::mt19937 rng(1);
  ThreadPool pool(3);
  for (Isa isa : isas()) {
    const IsaKernels& k = isa_kernels(isa);
    for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (std::int64_t rows : {1, 3, 17, 100}) {
        for (std::int64_t cols : {1, 3, 17, 64, 4097}) {
          for (std::int64_t n : {1, 3, 4, 5, 17}) {
            if (rows * cols * n > 3'000'000) continue;
            Weights w = random_weights(t, rows, cols, rng);
            std::vector<float> x = random_vec(n * cols, rng);
            std::vector<float> want(static_cast<std::size_t>(n * rows)), got(want.size(), NAN);
            ref::matmul(w.m, x.data(), n, want.data());
            const MatmulPart part{w.m, got.data(), rows};
            matmul(k, pool, {&part, 1}, x.data(), n, cols);
            for (std::size_t i = 0; i < want.size(); ++i) {
              // fp32 accumulation error bound: grows like sqrt(cols) for random signs.
              const double tol = 1e-5 * std::sqrt(static_cast<double>(cols)) * 4 + 1e-6;
              ASSERT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(static_cast<double>(want[i]))))
                  << k.name << " " << dtype_name(t) << " rows=" << rows << " cols=" << cols << " n=" << n << " i=" << i;
            }
          }
        }
      }
    }
  }
}

TEST(Matmul, BitwiseAcrossIsasThreadsAndBatching) {
  std::mt19937 rng(2);
  ThreadPool pool1(1), pool3(3);
  struct Shape {
    std::int64_t rows, cols, n;
  };
  for (const Shape& s : {Shape{37, 203, 9}, Shape{100, 579, 13}})
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    const std::int64_t rows = s.rows, cols = s.cols, n = s.n;
    Weights w = random_weights(t, rows, cols, rng);
    std::vector<float> x = random_vec(n * cols, rng);
    std::vector<float> batched(static_cast<std::size_t>(n * rows));
    const MatmulPart part{w.m, batched.data(), rows};
    matmul(generic_kernels(), pool1, {&part, 1}, x.data(), n, cols);
    for (Isa isa : isas()) {
      for (ThreadPool* pool : {&pool1, &pool3}) {
        // One token at a time (the decode path) must equal the batched (prefill) path.
        std::vector<float> single(static_cast<std::size_t>(n * rows));
        for (std::int64_t i = 0; i < n; ++i) {
          const MatmulPart p1{w.m, single.data() + i * rows, rows};
          matmul(isa_kernels(isa), *pool, {&p1, 1}, x.data() + i * cols, 1, cols);
        }
        std::vector<float> all(static_cast<std::size_t>(n * rows));
        const MatmulPart pa{w.m, all.data(), rows};
        matmul(isa_kernels(isa), *pool, {&pa, 1}, x.data(), n, cols);
        for (std::size_t i = 0; i < all.size(); ++i) {
          ASSERT_EQ(single[i], batched[i]) << isa_kernels(isa).name << " " << dtype_name(t) << " i=" << i;
          ASSERT_EQ(all[i], batched[i]) << isa_kernels(isa).name << " " << dtype_name(t) << " i=" << i;
        }
      }
    }
  }
}

// Batched decode: every token count 1..17 and both sides of each table's stream_max_tokens
// (weights in place up to it, f32 row blocks past it for bf16/f16), rows spanning several row
// blocks and a partial tile, on every ISA and thread count: the same bits as one token at a time
// on generic.
TEST(Matmul, BitwiseForEveryBatchedDecodeTokenCount) {
  std::mt19937 rng(7);
  ThreadPool pool1(1), pool2(2), pool3(3);
  const std::int64_t rows = 131, cols = 579;
  std::int64_t max_n = 17;
  for (Isa isa : isas()) max_n = std::max(max_n, isa_kernels(isa).stream_max_tokens + 1);
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    Weights w = random_weights(t, rows, cols, rng);
    std::vector<float> x = random_vec(max_n * cols, rng);
    std::vector<float> single(static_cast<std::size_t>(max_n * rows));
    for (std::int64_t i = 0; i < max_n; ++i) {
      const MatmulPart p1{w.m, single.data() + i * rows, rows};
      matmul(generic_kernels(), pool1, {&p1, 1}, x.data() + i * cols, 1, cols);
    }
    for (Isa isa : isas()) {
      const IsaKernels& k = isa_kernels(isa);
      std::vector<std::int64_t> counts{k.stream_max_tokens, k.stream_max_tokens + 1};
      for (std::int64_t n = 1; n <= 17; ++n) counts.push_back(n);
      for (std::int64_t n : counts) {
        for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
          std::vector<float> got(static_cast<std::size_t>(n * rows), NAN);
          const MatmulPart part{w.m, got.data(), rows};
          matmul(k, *pool, {&part, 1}, x.data(), n, cols);
          for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i], single[i]) << k.name << " " << dtype_name(t) << " n=" << n
                                         << " threads=" << pool->size() << " i=" << i;
          }
        }
      }
    }
  }
}

// The register tiles on every remainder: k around the 8- and 16-lane widths, rows around the
// tile heights (3, 6), tokens 1..9 (pairs, odd tokens), strided x and y. Same bits as generic.
TEST(Matmul, DotTileBitwiseAcrossIsasOnOddShapes) {
  std::mt19937 rng(4);
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (std::int64_t k : {1, 7, 8, 9, 15, 16, 17, 33, 203}) {
      const std::int64_t max_rows = 27, max_nt = 9, ldw = k + 3, ldx = k + 5, ldy = max_rows + 2;
      Weights w = random_weights(t, max_rows, ldw, rng);
      std::vector<float> x = random_vec(max_nt * ldx, rng);
      for (std::int64_t nt = 1; nt <= max_nt; ++nt) {
        for (std::int64_t nr : {1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 24, 25, 27}) {
          std::vector<float> want(static_cast<std::size_t>(max_nt * ldy), -7.0f);
          generic_kernels().dot_tile(t, w.m.data, ldw, x.data(), ldx, want.data(), ldy, nt, nr, k);
          for (Isa isa : isas()) {
            std::vector<float> got(want.size(), -7.0f);
            isa_kernels(isa).dot_tile(t, w.m.data, ldw, x.data(), ldx, got.data(), ldy, nt, nr, k);
            ASSERT_EQ(got, want) << isa_kernels(isa).name << " " << dtype_name(t) << " k=" << k << " nt=" << nt << " nr=" << nr;
          }
        }
      }
    }
  }
}

// The opt-in avx512bf16 table: bf16 weights with 4+ tokens use bf16-rounded activations, within
// 2^-8 of sum |x||w| of the oracle (rounding is at most 2^-9 relative per activation); every
// other case is the avx512 table's, so bitwise equal to generic.
TEST(Matmul, Avx512Bf16IsBoundedWhereItRoundsAndExactElsewhere) {
  if (!isa_supported(Isa::kAvx512Bf16)) GTEST_SKIP() << "no AVX512_BF16 here";
  const IsaKernels& k = isa_kernels(Isa::kAvx512Bf16);
  std::mt19937 rng(6);
  ThreadPool pool(2);
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (std::int64_t rows : {1, 5, 6, 7, 13, 100}) {
      for (std::int64_t cols : {1, 2, 17, 31, 32, 33, 64, 203, 579}) {
        for (std::int64_t n : {1, 3, 4, 5, 8, 9, 17}) {
          Weights w = random_weights(t, rows, cols, rng);
          std::vector<float> x = random_vec(n * cols, rng);
          std::vector<float> got(static_cast<std::size_t>(n * rows), NAN), exact(got.size());
          const MatmulPart part{w.m, got.data(), rows}, exact_part{w.m, exact.data(), rows};
          matmul(k, pool, {&part, 1}, x.data(), n, cols);
          matmul(generic_kernels(), pool, {&exact_part, 1}, x.data(), n, cols);
          if (t != DType::kBF16 || n < 4) {  // avx512bf16 rounds from 4 tokens on
            ASSERT_EQ(got, exact) << dtype_name(t) << " rows=" << rows << " cols=" << cols << " n=" << n;
            continue;
          }
          std::vector<float> want(got.size()), wf(static_cast<std::size_t>(rows * cols));
          ref::matmul(w.m, x.data(), n, want.data());
          generic_kernels().to_f32(t, w.m.data, wf.data(), rows * cols);
          for (std::int64_t i = 0; i < n; ++i) {
            for (std::int64_t r = 0; r < rows; ++r) {
              double mag = 0;
              for (std::int64_t c = 0; c < cols; ++c) mag += std::fabs(static_cast<double>(x[i * cols + c]) * wf[r * cols + c]);
              ASSERT_NEAR(got[i * rows + r], want[i * rows + r], mag / 256 + 1e-6)
                  << "rows=" << rows << " cols=" << cols << " n=" << n << " token " << i << " row " << r;
            }
          }
        }
      }
    }
  }
}

TEST(Matmul, ToF32MatchesTheScalarConversionOnEveryIsa) {
  std::mt19937 rng(5);
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (std::int64_t n : {1, 7, 8, 15, 16, 17, 100}) {
      Weights w = random_weights(t, 1, n, rng);
      std::vector<float> want(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) {
        const auto* h = static_cast<const std::uint16_t*>(w.m.data);
        want[i] = t == DType::kF32 ? static_cast<const float*>(w.m.data)[i] : t == DType::kBF16 ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
      }
      for (Isa isa : isas()) {
        std::vector<float> got(want.size(), NAN);
        isa_kernels(isa).to_f32(t, w.m.data, got.data(), n);
        ASSERT_EQ(got, want) << isa_kernels(isa).name << " " << dtype_name(t) << " n=" << n;
      }
    }
  }
}

TEST(Matmul, SeveralPartsShareOneLaunch) {
  std::mt19937 rng(3);
  ThreadPool pool(2);
  const std::int64_t cols = 48, n = 6;
  Weights a = random_weights(DType::kBF16, 10, cols, rng), b = random_weights(DType::kBF16, 7, cols, rng);
  std::vector<float> x = random_vec(n * cols, rng);
  std::vector<float> ya(static_cast<std::size_t>(n * 12), -1), yb(static_cast<std::size_t>(n * 7));
  const MatmulPart parts[] = {{a.m, ya.data(), 12}, {b.m, yb.data(), 7}};
  matmul(isa_kernels(best_isa()), pool, parts, x.data(), n, cols);
  std::vector<float> wa(static_cast<std::size_t>(n * 10)), wb(static_cast<std::size_t>(n * 7));
  ref::matmul(a.m, x.data(), n, wa.data());
  ref::matmul(b.m, x.data(), n, wb.data());
  for (std::int64_t t = 0; t < n; ++t) {
    for (std::int64_t r = 0; r < 10; ++r) EXPECT_NEAR(ya[t * 12 + r], wa[t * 10 + r], 1e-4);
    EXPECT_EQ(ya[t * 12 + 10], -1);  // columns past the part's rows are untouched
    for (std::int64_t r = 0; r < 7; ++r) EXPECT_NEAR(yb[t * 7 + r], wb[t * 7 + r], 1e-4);
  }
}

TEST(Matmul, FusedGateUpSiluIsBitwiseTheTwoSteps) {
  // matmul_silu_mul == matmul({gate, up}) then silu_mul, bit for bit, for every ISA, thread count
  // (chunk boundaries move), dtype, decode (1 token) and the row-block path (many tokens).
  std::mt19937 rng(4);
  ThreadPool pool1(1), pool2(2), pool3(3);
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (std::int64_t n : {1, 2, 5}) {
      const std::int64_t rows = 83, cols = 131;
      Weights g = random_weights(t, rows, cols, rng), u = random_weights(t, rows, cols, rng);
      std::vector<float> x = random_vec(n * cols, rng);
      std::vector<float> want_g(static_cast<std::size_t>(n * rows)), want_u(want_g.size());
      const MatmulPart parts[] = {{g.m, want_g.data(), rows}, {u.m, want_u.data(), rows}};
      matmul(generic_kernels(), pool1, parts, x.data(), n, cols);
      silu_mul(generic_kernels(), pool1, want_g.data(), want_u.data(), want_g.data(), n * rows);
      for (Isa isa : isas()) {
        for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
          std::vector<float> got_g(want_g.size(), NAN), got_u(want_g.size(), NAN);
          matmul_silu_mul(isa_kernels(isa), *pool, {g.m, got_g.data(), rows}, {u.m, got_u.data(), rows}, x.data(), n,
                          cols);
          for (std::size_t i = 0; i < want_g.size(); ++i) {
            ASSERT_EQ(got_g[i], want_g[i]) << isa_kernels(isa).name << " " << dtype_name(t) << " threads=" << pool->size()
                                           << " n=" << n << " i=" << i;
            ASSERT_EQ(got_u[i], want_u[i]) << isa_kernels(isa).name << " " << dtype_name(t) << " i=" << i;
          }
        }
      }
    }
  }
}

// A (rows, cols) Q8_0 matrix of random values.
Weights random_q8_0(std::int64_t rows, std::int64_t cols, std::mt19937& rng) {
  Weights w;
  w.bytes.resize(static_cast<std::size_t>(rows * dtype_row_bytes(DType::kQ8_0, cols)));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::vector<float> v = random_vec(cols, rng);
    quantize_row(DType::kQ8_0, v.data(), w.bytes.data() + r * dtype_row_bytes(DType::kQ8_0, cols), cols);
  }
  w.m = WeightMatrix{w.bytes.data(), DType::kQ8_0, rows, cols};
  return w;
}

TEST(Matmul, GroupsAreBitwiseEachGroupsOwnCall) {
  // matmul_groups (the mixture of experts' one launch over every used expert) == each group's own
  // matmul_silu_mul or matmul, bit for bit: groups of 1 token (decode), 3 and 7 (the row-block and
  // bf16-in-place paths), gated and plain, f32 / bf16 / f16 / Q8_0, every ISA and thread count.
  std::mt19937 rng(9);
  ThreadPool pool1(1), pool2(2), pool3(3);
  const std::int64_t rows = 45, cols = 96;
  struct Case {
    Weights g, u;
    std::vector<float> x;
    std::int64_t n;
    bool gated;
  };
  std::vector<Case> cases;
  const DType types[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kQ8_0};
  for (std::size_t i = 0; i < 8; ++i) {
    const DType t = types[i % 4];
    const std::int64_t n = std::array<std::int64_t, 3>{1, 3, 7}[i % 3];
    auto make = [&] { return t == DType::kQ8_0 ? random_q8_0(rows, cols, rng) : random_weights(t, rows, cols, rng); };
    cases.push_back({make(), make(), random_vec(n * cols, rng), n, i % 2 == 0});
  }
  for (Isa isa : isas()) {
    const IsaKernels& k = isa_kernels(isa);
    std::vector<std::vector<float>> want_g, want_u;
    for (Case& c : cases) {
      want_g.emplace_back(static_cast<std::size_t>(c.n * rows));
      want_u.emplace_back(static_cast<std::size_t>(c.n * rows));
      if (c.gated) {
        matmul_silu_mul(k, pool1, {c.g.m, want_g.back().data(), rows}, {c.u.m, want_u.back().data(), rows}, c.x.data(), c.n, cols);
      } else {
        const MatmulPart p[] = {{c.g.m, want_g.back().data(), rows}};
        matmul(k, pool1, p, c.x.data(), c.n, cols);
      }
    }
    for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
      std::vector<std::vector<float>> got_g, got_u;
      std::vector<MatmulGroup> groups;
      for (Case& c : cases) {
        got_g.emplace_back(static_cast<std::size_t>(c.n * rows), NAN);
        got_u.emplace_back(static_cast<std::size_t>(c.n * rows), NAN);
        groups.push_back({{c.g.m, got_g.back().data(), rows}, c.gated ? MatmulPart{c.u.m, got_u.back().data(), rows} : MatmulPart{},
                          c.x.data(), c.n, cols});
      }
      matmul_groups(k, *pool, groups);
      for (std::size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(got_g[i], want_g[i]) << k.name << " threads=" << pool->size() << " group " << i;
        if (cases[i].gated) {
          EXPECT_EQ(got_u[i], want_u[i]) << k.name << " threads=" << pool->size() << " group " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace plexus
