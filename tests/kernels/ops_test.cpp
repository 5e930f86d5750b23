// Element-wise kernels against the oracle, for every ISA this CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/ref/ref_kernels.h"

namespace plexus {
namespace {

std::vector<Isa> ops_isas() {
  std::vector<Isa> out{Isa::kGeneric};
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

TEST(Ops, ExpIsAccurateOverTheUsefulRange) {
  for (Isa isa : ops_isas()) {
    const IsaKernels& k = isa_kernels(isa);
    std::vector<float> xs;
    for (float x = -87.0f; x <= 88.0f; x += 0.0137f) xs.push_back(x);
    std::vector<float> ys = xs;
    k.exp_shift_sum(ys.data(), 0.0f, static_cast<std::int64_t>(ys.size()));
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double want = std::exp(static_cast<double>(xs[i]));
      ASSERT_NEAR(ys[i] / want, 1.0, 5e-7) << k.name << " x=" << xs[i];
    }
  }
}

TEST(Ops, SoftmaxSiluRmsnormMatchOracle) {
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 3.0f);
  ThreadPool pool(2);
  for (Isa isa : ops_isas()) {
    const IsaKernels& k = isa_kernels(isa);
    for (std::int64_t n : {1, 3, 17, 4097}) {
      std::vector<float> x(static_cast<std::size_t>(n)), g(x.size()), u(x.size()), w(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = d(rng);
        g[i] = d(rng);
        u[i] = d(rng);
        w[i] = 1.0f + 0.1f * d(rng);
      }
      std::vector<float> sm = x;
      softmax(k, sm.data(), n);
      const double lse = ref::logsumexp(x.data(), n);
      for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(sm[i], std::exp(x[i] - lse), 1e-6) << k.name;

      std::vector<float> got(x.size()), want(x.size());
      silu_mul(k, pool, g.data(), u.data(), got.data(), n);
      ref::silu_mul(g.data(), u.data(), n, want.data());
      for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << k.name;

      rmsnorm(k, x.data(), w.data(), 1, n, 1e-6f, got.data());
      ref::rmsnorm(x.data(), w.data(), DType::kF32, 1, n, 1e-6, want.data());
      for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << k.name;
    }
  }
}

// Gemma's GeGLU and soft-capping against their double-precision oracles, across the threads'
// chunks and in place.
TEST(Ops, GeluTanhMulAndSoftcapMatchOracle) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 3.0f);
  ThreadPool pool(2);
  for (std::int64_t n : {1, 3, 257, 4097}) {
    std::vector<float> g(static_cast<std::size_t>(n)), u(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = d(rng), u[i] = d(rng);
    std::vector<float> got(g.size()), want(g.size());
    gelu_tanh_mul(pool, g.data(), u.data(), got.data(), n);
    ref::gelu_tanh_mul(g.data(), u.data(), n, want.data());
    for (std::size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << "gelu n=" << n;
    std::vector<float> in_place = g;
    gelu_tanh_mul(pool, in_place.data(), u.data(), in_place.data(), n);
    EXPECT_EQ(in_place, got) << "gelu in place n=" << n;
    // Soft-capping: values far past the cap saturate at ±cap.
    std::vector<float> x = g, x_ref = g;
    x[0] = x_ref[0] = 1e4f;
    softcap(pool, x.data(), 2.5f, n);
    ref::softcap(x_ref.data(), 2.5, n);
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], x_ref[i], 1e-6 * (1 + std::fabs(x_ref[i]))) << "softcap n=" << n;
    EXPECT_EQ(x[0], 2.5f);
  }
}

TEST(Ops, ElementwiseAndReductionsBitwiseAcrossIsas) {
  std::mt19937 rng(6);
  std::normal_distribution<float> d(0.0f, 10.0f);
  const IsaKernels& g = generic_kernels();
  for (std::int64_t n : {1, 7, 8, 15, 16, 17, 24, 31, 1001}) {
    std::vector<float> x(static_cast<std::size_t>(n)), u(x.size());
    for (auto& v : x) v = d(rng);
    for (auto& v : u) v = d(rng);
    for (Isa isa : ops_isas()) {
      const IsaKernels& k = isa_kernels(isa);
      std::vector<float> a = x, b = x;
      EXPECT_EQ(g.exp_shift_sum(a.data(), 1.5f, n), k.exp_shift_sum(b.data(), 1.5f, n)) << k.name << " n=" << n;
      EXPECT_EQ(a, b) << k.name << " exp n=" << n;
      g.silu_mul(x.data(), u.data(), a.data(), n);
      k.silu_mul(x.data(), u.data(), b.data(), n);
      EXPECT_EQ(a, b) << k.name << " silu n=" << n;
      a = u, b = u;
      g.axpy(0.37f, x.data(), a.data(), n);
      k.axpy(0.37f, x.data(), b.data(), n);
      EXPECT_EQ(a, b) << k.name << " axpy n=" << n;
      g.scale(0.37f, a.data(), n);
      k.scale(0.37f, b.data(), n);
      EXPECT_EQ(a, b) << k.name << " scale n=" << n;
      EXPECT_EQ(g.dot(x.data(), u.data(), n), k.dot(x.data(), u.data(), n)) << k.name << " n=" << n;
      EXPECT_EQ(g.sum_squares(x.data(), n), k.sum_squares(x.data(), n)) << k.name << " n=" << n;
    }
  }
}

TEST(Ops, RopeMatchesOracle) {
  const std::int64_t heads = 3, hd = 16;
  std::vector<double> inv(hd / 2);
  for (std::int64_t i = 0; i < hd / 2; ++i) inv[i] = std::pow(10000.0, -2.0 * i / hd);
  std::vector<float> x(heads * hd);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3 * i);
  std::vector<float> want = x, got = x;
  const std::int64_t pos = 37;
  ref::rope(want.data(), heads, hd, pos, inv.data());
  std::vector<float> c(hd / 2), s(hd / 2);
  for (std::int64_t i = 0; i < hd / 2; ++i) {
    c[i] = static_cast<float>(std::cos(pos * inv[i]));
    s[i] = static_cast<float>(std::sin(pos * inv[i]));
  }
  rope(got.data(), heads, hd, c.data(), s.data());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
}

// Partial rotary (Phi-4-mini): only dims [0, rotary_dim) of each head turn, pairs (i, i +
// rotary_dim/2) by the first rotary_dim/2 angles of the head_dim/2-wide tables; the rest pass.
TEST(Ops, PartialRotaryRopeTurnsTheFirstDimsOnly) {
  const std::int64_t heads = 3, hd = 16, rot = 12;
  std::vector<double> inv(hd / 2, 0.0);
  for (std::int64_t i = 0; i < rot / 2; ++i) inv[i] = std::pow(10000.0, -2.0 * i / rot);
  std::vector<float> x(heads * hd);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3 * i + 0.2);
  std::vector<float> want = x, got = x;
  const std::int64_t pos = 29;
  ref::rope(want.data(), heads, hd, pos, inv.data(), false, rot);
  std::vector<float> c(hd / 2), s(hd / 2);
  for (std::int64_t i = 0; i < hd / 2; ++i) {
    c[i] = static_cast<float>(std::cos(pos * inv[i]));
    s[i] = static_cast<float>(std::sin(pos * inv[i]));
  }
  rope(got.data(), heads, hd, c.data(), s.data(), false, rot);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t d = rot; d < hd; ++d) EXPECT_EQ(got[h * hd + d], x[h * hd + d]);  // unrotated
    EXPECT_GT(std::abs(got[h * hd + 1] - x[h * hd + 1]), 1e-3);  // it did rotate
    // Pair (i, i + rot/2): dim 6 turned with dim 0 (a whole-head rope would pair 0 with 8).
    const float r = std::hypot(got[h * hd], got[h * hd + rot / 2]), r0 = std::hypot(x[h * hd], x[h * hd + rot / 2]);
    EXPECT_NEAR(r, r0, 1e-5);
  }
}

// Interleaved rope (GGUF llama: pairs (2i, 2i+1)) is rotate-half rope on rows permuted the way
// llama.cpp's converter permutes q/k: element i of each half-pair block goes to 2i, i + hd/2 to 2i+1.
TEST(Ops, InterleavedRopeIsRotateHalfOnPermutedRows) {
  const std::int64_t heads = 2, hd = 16, half = hd / 2;
  std::vector<double> inv(half);
  for (std::int64_t i = 0; i < half; ++i) inv[i] = std::pow(10000.0, -2.0 * i / hd);
  std::vector<float> x(heads * hd), perm(heads * hd);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.7 * i + 0.1);
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t i = 0; i < half; ++i) {
      perm[h * hd + 2 * i] = x[h * hd + i];
      perm[h * hd + 2 * i + 1] = x[h * hd + i + half];
    }
  }
  const std::int64_t pos = 11;
  std::vector<float> want = x, oracle = perm, got = perm;
  ref::rope(want.data(), heads, hd, pos, inv.data());
  ref::rope(oracle.data(), heads, hd, pos, inv.data(), true);
  std::vector<float> c(half), s(half);
  for (std::int64_t i = 0; i < half; ++i) {
    c[i] = static_cast<float>(std::cos(pos * inv[i]));
    s[i] = static_cast<float>(std::sin(pos * inv[i]));
  }
  rope(got.data(), heads, hd, c.data(), s.data(), true);
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t i = 0; i < half; ++i) {
      EXPECT_NEAR(oracle[h * hd + 2 * i], want[h * hd + i], 1e-6);
      EXPECT_NEAR(oracle[h * hd + 2 * i + 1], want[h * hd + i + half], 1e-6);
    }
  }
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], oracle[i], 1e-6);
  EXPECT_GT(std::abs(oracle[1] - perm[1]), 1e-3);  // it did rotate
}

}  // namespace
}  // namespace plexus

namespace plexus {
namespace {

// The attention composition the model uses (scores by dot_tile, softmax, weighted_rows)
// against the oracle, for several key counts and head sizes.
TEST(Ops, AttentionCompositionMatchesOracle) {
  std::mt19937 rng(9);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (Isa isa : ops_isas()) {
    const IsaKernels& k = isa_kernels(isa);
    for (std::int64_t hd : {8, 17, 64, 128}) {
      for (std::int64_t n_keys : {1, 3, 17, 200}) {
        std::vector<float> q(static_cast<std::size_t>(hd)), keys(static_cast<std::size_t>(n_keys * hd)), values(keys.size());
        for (auto& x : q) x = d(rng);
        for (auto& x : keys) x = d(rng);
        for (auto& x : values) x = d(rng);
        std::vector<float> want(static_cast<std::size_t>(hd)), got(want.size()), scores(static_cast<std::size_t>(n_keys));
        ref::attention(q.data(), keys.data(), values.data(), n_keys, hd, hd, want.data());
        k.dot_tile(DType::kF32, keys.data(), hd, q.data(), hd, scores.data(), n_keys, 1, n_keys, hd);
        k.scale(static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd))), scores.data(), n_keys);
        softmax(k, scores.data(), n_keys);
        k.weighted_rows(scores.data(), n_keys, values.data(), hd, got.data(), hd);
        for (std::int64_t i = 0; i < hd; ++i) ASSERT_NEAR(got[i], want[i], 2e-5) << k.name << " hd=" << hd << " keys=" << n_keys;
      }
    }
  }
}

TEST(Ops, WeightedRowsBitwiseAcrossIsas) {
  std::mt19937 rng(10);
  std::normal_distribution<float> d(0.0f, 1.0f);
  const std::int64_t n = 37, ld = 300;
  for (std::int64_t dcols : {1, 8, 16, 24, 64, 77, 128, 150, 300}) {
    std::vector<float> w(n), rows(n * ld), a(static_cast<std::size_t>(dcols));
    for (auto& x : w) x = d(rng);
    for (auto& x : rows) x = d(rng);
    generic_kernels().weighted_rows(w.data(), n, rows.data(), ld, a.data(), dcols);
    for (Isa isa : ops_isas()) {
      std::vector<float> b(a.size());
      isa_kernels(isa).weighted_rows(w.data(), n, rows.data(), ld, b.data(), dcols);
      EXPECT_EQ(a, b) << isa_kernels(isa).name << " " << dcols;
    }
  }
}

}  // namespace
}  // namespace plexus
