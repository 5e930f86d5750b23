// Every CUDA kernel against the kernels/ref oracles, on random shapes with odd sizes (1, 3, 17,
// 4097) and every weight dtype; outputs are poisoned (NaN) before each run. Skipped, with the
// reason, where no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/ceilings.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/prefill_attention.h"
#include "kernels/cuda/rope_kv.h"
#include "kernels/ref/ref_kernels.h"

namespace plexus::cuda::test {
namespace {

constexpr DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_present(&why)) GTEST_SKIP() << why;
    PLEXUS_TEST_CUDA(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  void sync() {
    PLEXUS_TEST_CUDA(cudaGetLastError());
    PLEXUS_TEST_CUDA(cudaStreamSynchronize(stream_));
  }
  cudaStream_t stream_ = nullptr;
  std::mt19937 rng_{1234};
};

std::string dt(DType d) { return std::string(dtype_name(d)); }

TEST_F(CudaKernels, EmbedEveryDtypeOddWidths) {
  for (DType dtype : kDtypes) {
    for (std::int64_t d : {1, 3, 17, 4097}) {
      const std::int64_t vocab = 19;
      const std::vector<float> values = random_floats(static_cast<std::size_t>(vocab * d), rng_);
      const std::vector<std::uint8_t> bytes = to_dtype_bytes(values, dtype);
      const std::vector<std::int32_t> ids = {3, 0, 18, 3, 7};
      const std::int64_t n = static_cast<std::int64_t>(ids.size());
      DeviceBuffer<std::uint8_t> table(bytes);
      DeviceBuffer<std::int32_t> ids_d(ids);
      DeviceBuffer<float> x(static_cast<std::size_t>(n * d));
      x.poison();
      launch_embed(table.get(), dtype, vocab, d, ids_d.get(), n, x.get(), stream_);
      sync();
      std::vector<float> want(static_cast<std::size_t>(n * d));
      ref::embed(WeightMatrix{bytes.data(), dtype, vocab, d}, ids.data(), n, want.data());
      EXPECT_TRUE(close(x.download(), want, 0, 0)) << dt(dtype) << " d=" << d;
    }
  }
}

TEST_F(CudaKernels, EmbedOutOfRangeIdIsNaN) {
  const std::vector<float> values = random_floats(3 * 5, rng_);
  DeviceBuffer<float> table(values);
  DeviceBuffer<std::int32_t> ids(std::vector<std::int32_t>{1, 3, -1});
  DeviceBuffer<float> x(15);
  x.poison();
  launch_embed(table.get(), DType::kF32, 3, 5, ids.get(), 3, x.get(), stream_);
  sync();
  const std::vector<float> got = x.download();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], values[5 + static_cast<std::size_t>(i)]);
  for (int i = 5; i < 15; ++i) EXPECT_TRUE(std::isnan(got[static_cast<std::size_t>(i)]));
}

TEST_F(CudaKernels, RmsnormOddSizesAndInPlace) {
  for (std::int64_t rows : {1, 3, 17}) {
    for (std::int64_t d : {1, 3, 17, 128, 4097}) {
      for (bool in_place : {false, true}) {
        const std::vector<float> xh = random_floats(static_cast<std::size_t>(rows * d), rng_, -3, 3);
        const std::vector<float> wh = random_floats(static_cast<std::size_t>(d), rng_, 0.5f, 1.5f);
        DeviceBuffer<float> x(xh), w(wh), y(static_cast<std::size_t>(rows * d));
        y.poison();
        float* out = in_place ? x.get() : y.get();
        launch_rmsnorm(x.get(), w.get(), rows, d, 1e-5f, out, stream_);
        sync();
        std::vector<float> want(xh.size());
        ref::rmsnorm(xh.data(), wh.data(), DType::kF32, rows, d, 1e-5, want.data());
        EXPECT_TRUE(close(in_place ? x.download() : y.download(), want, 1e-6, 2e-5))
            << "rows=" << rows << " d=" << d << " in_place=" << in_place;
      }
    }
  }
}

// The fused residual add + rmsnorm against its two steps (launch_add, then launch_rmsnorm),
// out separate, aliasing y (as the forward calls it: x += xb, xb = norm(x)) and aliasing x.
TEST_F(CudaKernels, AddRmsnormIsAddThenRmsnorm) {
  for (std::int64_t rows : {1, 3, 17}) {
    for (std::int64_t d : {1, 3, 17, 64, 257, 4097}) {
      for (int alias = 0; alias < 3; ++alias) {  // 0: out separate, 1: out = y, 2: out = x
        const std::vector<float> xh = random_floats(static_cast<std::size_t>(rows * d), rng_);
        const std::vector<float> yh = random_floats(static_cast<std::size_t>(rows * d), rng_);
        const std::vector<float> wh = random_floats(static_cast<std::size_t>(d), rng_);
        DeviceBuffer<float> w(wh);
        // The reference: the two kernels.
        DeviceBuffer<float> rx(xh), ry(yh), rout(static_cast<std::size_t>(rows * d));
        rout.poison();
        launch_add(rx.get(), ry.get(), rows * d, stream_);
        launch_rmsnorm(rx.get(), w.get(), rows, d, 1e-5f, rout.get(), stream_);
        // The fused kernel.
        DeviceBuffer<float> x(xh), y(yh), out(static_cast<std::size_t>(rows * d));
        out.poison();
        float* o = alias == 0 ? out.get() : alias == 1 ? y.get() : x.get();
        launch_add_rmsnorm(x.get(), y.get(), w.get(), rows, d, 1e-5f, o, stream_);
        sync();
        const std::vector<float> want_x = rx.download(), want_out = rout.download();
        const std::vector<float> got_out = alias == 0 ? out.download() : alias == 1 ? y.download() : x.download();
        const std::string what = "rows=" + std::to_string(rows) + " d=" + std::to_string(d) + " alias=" + std::to_string(alias);
        if (alias != 2) {
          EXPECT_TRUE(close(x.download(), want_x, 0, 0)) << "x += y, " << what;
        }
        EXPECT_TRUE(close(got_out, want_out, 1e-6, 1e-6)) << "rmsnorm, " << what;
        // And the meaning: rmsnorm of x + y on the host.
        std::vector<float> sum(xh.size()), want(xh.size());
        for (std::size_t i = 0; i < xh.size(); ++i) sum[i] = xh[i] + yh[i];
        ref::rmsnorm(sum.data(), wh.data(), DType::kF32, rows, d, 1e-5, want.data());
        EXPECT_TRUE(close(got_out, want, 1e-6, 2e-5)) << "against ref, " << what;
      }
    }
  }
}

TEST_F(CudaKernels, AddBiasOddSizes) {
  for (std::int64_t n : {1, 3, 17}) {
    for (std::int64_t d : {1, 3, 17, 4097}) {
      const std::vector<float> yh = random_floats(static_cast<std::size_t>(n * d), rng_);
      const std::vector<float> bh = random_floats(static_cast<std::size_t>(d), rng_);
      DeviceBuffer<float> y(yh), b(bh);
      launch_add_bias(y.get(), b.get(), n, d, stream_);
      sync();
      std::vector<float> want(yh);
      for (std::int64_t t = 0; t < n; ++t)
        for (std::int64_t i = 0; i < d; ++i) want[static_cast<std::size_t>(t * d + i)] += bh[static_cast<std::size_t>(i)];
      EXPECT_TRUE(close(y.download(), want, 0, 0)) << n << "x" << d;
    }
  }
}

// Gemma's element-wise ops against the double-precision oracles: GeGLU (separate output and in
// place), the embedding scale and soft-capping.
TEST_F(CudaKernels, GeluTanhMulScaleAndSoftcap) {
  for (std::int64_t n : {1, 17, 4097, 100003}) {
    const std::vector<float> a = random_floats(static_cast<std::size_t>(n), rng_, -4, 4);
    const std::vector<float> b = random_floats(static_cast<std::size_t>(n), rng_, -4, 4);
    DeviceBuffer<float> x(a), y(b), out(static_cast<std::size_t>(n));
    out.poison();
    launch_gelu_tanh_mul(x.get(), y.get(), out.get(), n, stream_);
    sync();
    std::vector<float> want(static_cast<std::size_t>(n));
    ref::gelu_tanh_mul(a.data(), b.data(), n, want.data());
    EXPECT_TRUE(close(out.download(), want, 1e-6, 1e-5)) << "gelu_tanh_mul n=" << n;
    launch_gelu_tanh_mul(x.get(), y.get(), x.get(), n, stream_);
    sync();
    EXPECT_TRUE(close(x.download(), want, 1e-6, 1e-5)) << "gelu_tanh_mul in place n=" << n;
    x.upload(a);
    launch_scale(x.get(), 3.0f, n, stream_);
    sync();
    std::vector<float> scaled = a;
    for (float& v : scaled) v *= 3.0f;
    EXPECT_TRUE(close(x.download(), scaled, 0, 0)) << "scale n=" << n;
    x.upload(a);
    launch_softcap(x.get(), 1.5f, n, stream_);
    sync();
    std::vector<float> capped = a;
    ref::softcap(capped.data(), 1.5, n);
    EXPECT_TRUE(close(x.download(), capped, 1e-6, 1e-5)) << "softcap n=" << n;
  }
}

// Element-wise ops on aligned pointers (float4 path) and pointers one float off (scalar path).
TEST_F(CudaKernels, AddAndSiluMulAlignedAndNot) {
  for (std::int64_t n : {1, 3, 4, 17, 4097, 100003}) {
    for (int offset : {0, 1}) {
      const std::vector<float> a = random_floats(static_cast<std::size_t>(n + 1), rng_, -4, 4);
      const std::vector<float> b = random_floats(static_cast<std::size_t>(n + 1), rng_, -4, 4);
      DeviceBuffer<float> x(a), y(b), out(static_cast<std::size_t>(n + 1));
      // silu_mul into a separate, poisoned output
      out.poison();
      launch_silu_mul(x.get() + offset, y.get() + offset, out.get() + offset, n, stream_);
      sync();
      std::vector<float> want(static_cast<std::size_t>(n));
      ref::silu_mul(a.data() + offset, b.data() + offset, n, want.data());
      std::vector<float> got = out.download();
      got = std::vector<float>(got.begin() + offset, got.begin() + offset + n);
      EXPECT_TRUE(close(got, want, 1e-6, 1e-5)) << "silu_mul n=" << n << " offset=" << offset;
      // silu_mul in place on gate
      launch_silu_mul(x.get() + offset, y.get() + offset, x.get() + offset, n, stream_);
      sync();
      got = x.download();
      got = std::vector<float>(got.begin() + offset, got.begin() + offset + n);
      EXPECT_TRUE(close(got, want, 1e-6, 1e-5)) << "silu_mul in place n=" << n << " offset=" << offset;
      // residual add
      x.upload(a);
      launch_add(x.get() + offset, y.get() + offset, n, stream_);
      sync();
      got = x.download();
      for (std::int64_t i = 0; i < n; ++i) {
        const std::size_t j = static_cast<std::size_t>(i + offset);
        ASSERT_EQ(got[j], a[j] + b[j]) << "add n=" << n << " offset=" << offset << " i=" << i;
      }
      if (offset == 1) {
        ASSERT_EQ(got[0], a[0]) << "add wrote before its range";
      }
    }
  }
}

TEST_F(CudaKernels, GatherRows) {
  const std::int64_t d = 17;
  const std::vector<float> src = random_floats(5 * d, rng_);
  const std::vector<std::int64_t> rows = {4, 0, 2, 2};
  DeviceBuffer<float> s(src), dst(rows.size() * d);
  DeviceBuffer<std::int64_t> r(rows);
  dst.poison();
  launch_gather_rows(s.get(), r.get(), static_cast<std::int64_t>(rows.size()), d, dst.get(), stream_);
  sync();
  std::vector<float> want;
  for (std::int64_t row : rows) want.insert(want.end(), src.begin() + row * d, src.begin() + (row + 1) * d);
  EXPECT_TRUE(close(dst.download(), want, 0, 0));
}

TEST_F(CudaKernels, ConvertRowsRoundsToNearestEven) {
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const std::int64_t n = 3, cols = 17, ld = 20;
    const std::vector<float> src = random_floats(static_cast<std::size_t>(n * ld), rng_, -70000, 70000);
    DeviceBuffer<float> s(src);
    DeviceBuffer<std::uint16_t> out(static_cast<std::size_t>(n * cols));
    launch_convert_rows(s.get(), n, cols, ld, dtype, out.get(), stream_);
    sync();
    const std::vector<std::uint16_t> got = out.download();
    for (std::int64_t t = 0; t < n; ++t) {
      for (std::int64_t c = 0; c < cols; ++c) {
        const float v = src[static_cast<std::size_t>(t * ld + c)];
        const std::uint16_t want = dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
        ASSERT_EQ(got[static_cast<std::size_t>(t * cols + c)], want) << dt(dtype) << " value " << v;
      }
    }
  }
}

// A few sequences' KV caches of layers [first_layer, first_layer + n_layers) in one device buffer.
struct TestCaches {
  std::int64_t first_layer = 1, n_layers = 2, n_kv = 0, hd = 0;
  std::vector<std::int64_t> capacity;  // per sequence
  std::vector<std::int64_t> offset;    // floats, per sequence
  DeviceBuffer<float> mem;
  TestCaches(std::int64_t n_kv_heads, std::int64_t head_dim, std::vector<std::int64_t> caps)
      : n_kv(n_kv_heads), hd(head_dim), capacity(std::move(caps)) {
    std::int64_t total = 0;
    for (std::int64_t c : capacity) {
      offset.push_back(total);
      total += n_layers * 2 * n_kv * c * hd;
    }
    mem = DeviceBuffer<float>(static_cast<std::size_t>(total));
  }
  TokenSlot slot(std::size_t seq, std::int32_t pos) const {
    return TokenSlot{mem.get() + offset[seq], capacity[seq], static_cast<std::int32_t>(first_layer), pos};
  }
  // Index in the buffer of (seq, layer, which, kv head, position, 0).
  std::size_t at(std::size_t seq, std::int64_t layer, int which, std::int64_t g, std::int64_t p) const {
    return static_cast<std::size_t>(offset[seq] +
                                    ((((layer - first_layer) * 2 + which) * n_kv + g) * capacity[seq] + p) * hd);
  }
};

TEST_F(CudaKernels, RopeStoresKvAtEachTokensPosition) {
  struct Case {
    std::int64_t heads, kv, hd;
    std::int64_t rot = 0;  // partial rotary (Phi-3): the rotated dims; 0: the whole head
    double scale = 1.0;    // cos/sin times this (LongRoPE's attention factor)
  };
  for (const bool interleaved : {false, true})
  for (const Case c : {Case{4, 2, 2}, Case{6, 3, 8}, Case{8, 2, 64}, Case{3, 1, 128}, Case{2, 2, 256}, Case{8, 2, 64, 48, 1.19},
                       Case{6, 3, 8, 6}, Case{4, 4, 96, 96, 1.19}}) {
    const std::int64_t half = c.hd / 2, rot = c.rot > 0 ? c.rot : c.hd;
    TestCaches caches(c.kv, c.hd, {37, 5});
    caches.mem.poison();
    // Tokens: sequence 0 at positions 30..33 (prefill-like), sequence 1 at 4 (decode-like).
    const std::vector<std::pair<std::size_t, std::int32_t>> toks = {{0, 30}, {0, 31}, {1, 4}, {0, 32}, {0, 33}};
    const std::int64_t n = static_cast<std::int64_t>(toks.size());
    const int layer = 2;
    std::vector<double> inv_freq(static_cast<std::size_t>(half), 0.0);  // the tail past rot / 2 unused
    for (std::int64_t i = 0; i < rot / 2; ++i) inv_freq[static_cast<std::size_t>(i)] = std::pow(10000.0, -2.0 * i / rot);
    std::vector<float> cos_h(static_cast<std::size_t>(n * half)), sin_h(cos_h.size());
    std::vector<TokenSlot> slots;
    for (std::int64_t t = 0; t < n; ++t) {
      slots.push_back(caches.slot(toks[static_cast<std::size_t>(t)].first, toks[static_cast<std::size_t>(t)].second));
      for (std::int64_t i = 0; i < half; ++i) {
        const double a = toks[static_cast<std::size_t>(t)].second * inv_freq[static_cast<std::size_t>(i)];
        cos_h[static_cast<std::size_t>(t * half + i)] = static_cast<float>(std::cos(a));
        sin_h[static_cast<std::size_t>(t * half + i)] = static_cast<float>(std::sin(a));
      }
    }
    const std::vector<float> qh = random_floats(static_cast<std::size_t>(n * c.heads * c.hd), rng_);
    const std::vector<float> kh = random_floats(static_cast<std::size_t>(n * c.kv * c.hd), rng_);
    const std::vector<float> vh = random_floats(static_cast<std::size_t>(n * c.kv * c.hd), rng_);
    DeviceBuffer<float> q(qh), k(kh), v(vh), cs(cos_h), sn(sin_h);
    DeviceBuffer<TokenSlot> sl(slots);
    launch_rope_store_kv(q.get(), k.get(), v.get(), cs.get(), sn.get(), sl.get(), n, c.heads, c.kv, c.hd, layer,
                         interleaved, c.rot, static_cast<float>(c.scale), stream_);
    sync();
    std::vector<float> want_q(qh), want_k(kh);
    for (std::int64_t t = 0; t < n; ++t) {
      const std::int64_t p = toks[static_cast<std::size_t>(t)].second;
      ref::rope(want_q.data() + t * c.heads * c.hd, c.heads, c.hd, p, inv_freq.data(), interleaved, c.rot, c.scale);
      ref::rope(want_k.data() + t * c.kv * c.hd, c.kv, c.hd, p, inv_freq.data(), interleaved, c.rot, c.scale);
    }
    const std::vector<float> got_k = k.download();
    EXPECT_TRUE(close(q.download(), want_q, 1e-5, 1e-5)) << "q, head_dim " << c.hd << " rot " << rot << " interleaved " << interleaved;
    EXPECT_TRUE(close(got_k, want_k, 1e-5, 1e-5)) << "k, head_dim " << c.hd << " rot " << rot << " interleaved " << interleaved;
    // The cache holds exactly the rotated k and the v rows at each token's position of `layer`;
    // everything else keeps its poison.
    const std::vector<float> cache = caches.mem.download();
    std::vector<bool> written(cache.size(), false);
    for (std::int64_t t = 0; t < n; ++t) {
      const auto [seq, p] = toks[static_cast<std::size_t>(t)];
      for (std::int64_t g = 0; g < c.kv; ++g) {
        for (std::int64_t i = 0; i < c.hd; ++i) {
          const std::size_t kc = caches.at(seq, layer, 0, g, p) + static_cast<std::size_t>(i);
          const std::size_t vc = caches.at(seq, layer, 1, g, p) + static_cast<std::size_t>(i);
          const std::size_t src = static_cast<std::size_t>((t * c.kv + g) * c.hd + i);
          ASSERT_EQ(cache[kc], got_k[src]) << "k cache t=" << t << " g=" << g << " i=" << i;
          ASSERT_EQ(cache[vc], vh[src]) << "v cache t=" << t << " g=" << g << " i=" << i;
          written[kc] = written[vc] = true;
        }
      }
    }
    for (std::size_t i = 0; i < cache.size(); ++i) {
      if (!written[i]) {
        ASSERT_TRUE(all_bits_set(cache[i])) << "cache element " << i << " overwritten";
      }
    }
  }
}

// Attention over caches filled with random keys/values, for every split choice from one block
// per (token, kv head) to the most the context allows.
TEST_F(CudaKernels, AttentionGqaWindowSplitsAgainstReference) {
  struct Case {
    std::int64_t heads, kv, hd, window;
    std::vector<std::int64_t> positions;  // one sequence each
  };
  const std::vector<Case> cases = {
      {1, 1, 8, 0, {0}},
      {4, 4, 16, 0, {0, 2, 16, 100}},
      {8, 2, 64, 0, {4096, 1, 999}},
      {6, 1, 128, 0, {16, 4096}},
      {12, 3, 17, 0, {33, 3}},
      {8, 2, 64, 5, {0, 3, 4, 5, 200}},
      {4, 1, 128, 64, {63, 64, 65, 1000}},
      {16, 1, 256, 0, {511}},
      {2, 2, 3, 7, {1, 40}},
  };
  for (const Case& c : cases) {
    std::vector<std::int64_t> caps;
    for (std::int64_t p : c.positions) caps.push_back(p + 2);
    TestCaches caches(c.kv, c.hd, caps);
    const int layer = 1;
    std::vector<float> cache_h = random_floats(caches.mem.size(), rng_, -1, 1);
    caches.mem.upload(cache_h);
    const std::int64_t n = static_cast<std::int64_t>(c.positions.size());
    std::vector<TokenSlot> slots;
    std::int64_t longest = 0;
    for (std::size_t s = 0; s < c.positions.size(); ++s) {
      slots.push_back(caches.slot(s, static_cast<std::int32_t>(c.positions[s])));
      const std::int64_t keys = c.window > 0 ? std::min(c.window, c.positions[s] + 1) : c.positions[s] + 1;
      longest = std::max(longest, keys);
    }
    const std::vector<float> qh = random_floats(static_cast<std::size_t>(n * c.heads * c.hd), rng_, -2, 2);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.hd));
    std::vector<float> want(qh.size());
    for (std::int64_t t = 0; t < n; ++t) {
      const std::size_t s = static_cast<std::size_t>(t);
      ref::attention_gqa(qh.data() + t * c.heads * c.hd, cache_h.data() + caches.at(s, layer, 0, 0, 0),
                         cache_h.data() + caches.at(s, layer, 1, 0, 0), caches.capacity[s] * c.hd, c.heads, c.kv, c.hd,
                         c.positions[s], c.window, scale, want.data() + t * c.heads * c.hd);
    }
    DeviceBuffer<float> q(qh), out(qh.size());
    DeviceBuffer<TokenSlot> sl(slots);
    AttentionGeometry g{c.heads, c.kv, c.hd, c.window, static_cast<float>(scale)};
    for (int target : {1, 64, 528, 1024}) {
      const AttentionSplit split = attention_split(g, n, longest, target);
      const std::int64_t floats = attention_partial_floats(g, n, 1024);
      DeviceBuffer<float> partials(static_cast<std::size_t>(floats));
      partials.poison();
      out.poison();
      launch_attention(q.get(), sl.get(), n, g, split, layer, partials.get(), floats, out.get(), stream_);
      sync();
      EXPECT_TRUE(close(out.download(), want, 2e-5, 2e-4))
          << "heads " << c.heads << " kv " << c.kv << " hd " << c.hd << " window " << c.window << " splits "
          << split.splits << " chunk " << split.chunk;
    }
  }
}

// The tiled prefill kernels (f32, and bf16 on tensor cores) against the reference and the
// split-context kernel: sequences prefilled from 0, a continuation chunk over earlier keys,
// single tokens, interleaved sequences (tiles of one token), odd token counts (1, 3, 17, 100,
// 257), several sequences of different lengths and positions in one batch, GQA groups 1..64,
// head_dim 64 and 128, windows. The bf16 kernel rounds q, k and v to bf16 for its products:
// 1e-2 + 2e-2 relative on the softmax-weighted averages (values in [-1, 1]).
TEST_F(CudaKernels, PrefillAttentionAgainstReference) {
  struct Case {
    std::int64_t heads, kv, hd, window;
  };
  // (sequence, first position, tokens): consecutive batch tokens of one sequence form runs.
  struct Run {
    std::size_t seq;
    std::int32_t first;
    std::int32_t count;
  };
  struct Batch {
    std::vector<Run> runs;
    std::vector<std::int64_t> caps;
    bool all_cases;  // every Case, or the first three and the windowed ones
  };
  const std::vector<Batch> batches = {
      {{{0, 0, 100}, {1, 50, 21}, {2, 10, 1}, {3, 0, 1}, {4, 0, 1}, {3, 1, 1}, {4, 1, 1}, {3, 2, 1}, {0, 100, 3}},
       {120, 80, 11, 3, 2},
       true},
      {{{0, 0, 1}}, {1}, true},
      {{{0, 0, 3}}, {5}, true},
      {{{0, 0, 17}}, {17}, true},
      {{{0, 0, 100}}, {130}, true},
      {{{0, 0, 257}}, {257}, true},
      {{{0, 40, 257}}, {300}, false},  // a continuation chunk over 40 earlier keys
      {{{0, 0, 257}, {1, 5, 17}, {2, 300, 100}, {3, 0, 3}, {4, 64, 1}, {5, 1, 100}}, {260, 30, 400, 3, 65, 101}, false},
  };
  const std::vector<Case> cases = {Case{32, 8, 64, 0},  Case{4, 4, 128, 0},    Case{64, 1, 128, 0},
                                   Case{8, 2, 64, 5},   Case{12, 4, 128, 64},  Case{6, 2, 64, 1},
                                   Case{32, 8, 128, 0}, Case{16, 2, 128, 100}, Case{4, 1, 64, 33}};
  for (std::size_t bi = 0; bi < batches.size(); ++bi) {
    const Batch& batch = batches[bi];
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      const Case c = cases[ci];
      if (!batch.all_cases && ci >= 3 && c.window == 0) continue;
      TestCaches caches(c.kv, c.hd, batch.caps);
      const int layer = 2;
      std::vector<float> cache_h = random_floats(caches.mem.size(), rng_, -1, 1);
      caches.mem.upload(cache_h);
      std::vector<TokenSlot> slots;
      std::vector<std::size_t> seq_of;
      std::int64_t longest = 0;
      for (const Run& r : batch.runs) {
        for (std::int32_t i = 0; i < r.count; ++i) {
          slots.push_back(caches.slot(r.seq, r.first + i));
          seq_of.push_back(r.seq);
          longest = std::max<std::int64_t>(longest, r.first + i + 1);
        }
      }
      const std::int64_t n = static_cast<std::int64_t>(slots.size());
      const AttentionGeometry g{c.heads, c.kv, c.hd, c.window, static_cast<float>(1.0 / std::sqrt(double(c.hd)))};
      ASSERT_TRUE(prefill_attention_supported(g));
      std::vector<QueryTile> tiles(static_cast<std::size_t>(n));
      const std::int64_t n_tiles = make_query_tiles(slots.data(), n, prefill_tile_tokens(g), tiles.data());
      std::int64_t covered = 0;
      for (std::int64_t i = 0; i < n_tiles; ++i) {
        ASSERT_EQ(tiles[static_cast<std::size_t>(i)].first, covered);
        ASSERT_LE(tiles[static_cast<std::size_t>(i)].count, prefill_tile_tokens(g));
        covered += tiles[static_cast<std::size_t>(i)].count;
      }
      ASSERT_EQ(covered, n);
      const std::vector<float> qh = random_floats(static_cast<std::size_t>(n * c.heads * c.hd), rng_, -2, 2);
      std::vector<float> want(qh.size());
      for (std::int64_t t = 0; t < n; ++t) {
        const std::size_t s = seq_of[static_cast<std::size_t>(t)];
        ref::attention_gqa(qh.data() + t * c.heads * c.hd, cache_h.data() + caches.at(s, layer, 0, 0, 0),
                           cache_h.data() + caches.at(s, layer, 1, 0, 0), caches.capacity[s] * c.hd, c.heads, c.kv,
                           c.hd, slots[static_cast<std::size_t>(t)].pos, c.window, g.scale,
                           want.data() + t * c.heads * c.hd);
      }
      const std::string what = "batch " + std::to_string(bi) + " (" + std::to_string(n) + " tokens): heads " +
                               std::to_string(c.heads) + " kv " + std::to_string(c.kv) + " hd " +
                               std::to_string(c.hd) + " window " + std::to_string(c.window);
      DeviceBuffer<float> q(qh), out(qh.size());
      DeviceBuffer<TokenSlot> sl(slots);
      DeviceBuffer<QueryTile> tl(std::vector<QueryTile>(tiles.begin(), tiles.begin() + n_tiles));
      out.poison();
      launch_prefill_attention(q.get(), sl.get(), tl.get(), n_tiles, g, layer, out.get(), stream_);
      sync();
      const std::vector<float> prefill = out.download();
      EXPECT_TRUE(close(prefill, want, 2e-5, 2e-4)) << "prefill f32: " << what;
      // The tensor-core kernel (bf16 products).
      out.poison();
      launch_prefill_attention_bf16(q.get(), sl.get(), tl.get(), n_tiles, g, layer, out.get(), stream_);
      sync();
      const std::vector<float> inloop = out.download();
      EXPECT_TRUE(close(inloop, want, 1e-2, 2e-2)) << "prefill bf16: " << what;
      // The staged tensor-core path: keys/values converted to a bf16 buffer (poisoned: padding
      // keys must be written as zeros), then streamed with cp.async. A spare 64 keys of capacity.
      {
        std::vector<KvSpan> spans(static_cast<std::size_t>(n_tiles));
        std::vector<std::int32_t> offsets(static_cast<std::size_t>(n_tiles));
        std::int64_t n_spans = 0;
        const std::int64_t needed = make_kv_spans(slots.data(), tiles.data(), n_tiles, spans.data(), offsets.data(), &n_spans);
        ASSERT_GT(n_spans, 0);
        ASSERT_EQ(needed % kKvSpanAlign, 0);
        spans.resize(static_cast<std::size_t>(n_spans));
        const std::int64_t cap = needed + kKvSpanAlign;
        DeviceBuffer<std::uint16_t> kvb(prefill_kv_bf16_bytes(g, cap) / 2);
        kvb.poison();
        DeviceBuffer<KvSpan> sp(spans);
        DeviceBuffer<std::int32_t> offs(offsets);
        out.poison();
        launch_prefill_kv_bf16(sl.get(), sp.get(), n_spans, needed, g, layer, kvb.get(), cap, stream_);
        launch_prefill_attention_bf16_staged(q.get(), sl.get(), tl.get(), offs.get(), n_tiles, g, kvb.get(), cap,
                                             out.get(), stream_);
        sync();
        const std::vector<float> staged = out.download();
        EXPECT_TRUE(close(staged, want, 1e-2, 2e-2)) << "prefill bf16 staged: " << what;
        EXPECT_TRUE(close(staged, inloop, 1e-2, 2e-2)) << "prefill bf16 staged vs in-loop: " << what;
      }
      // The split-context kernel agrees on the same batch.
      const std::int64_t max_keys = c.window > 0 ? std::min(c.window, longest) : longest;
      const std::int64_t floats = attention_partial_floats(g, n, 1024);
      DeviceBuffer<float> partials(static_cast<std::size_t>(floats));
      out.poison();
      launch_attention(q.get(), sl.get(), n, g, attention_split(g, n, max_keys, 528), layer, partials.get(), floats,
                       out.get(), stream_);
      sync();
      EXPECT_TRUE(close(out.download(), prefill, 2e-5, 2e-4)) << "split-context vs prefill: " << what;
    }
  }
}

TEST(CudaQueryTiles, RunsOfOneSequenceSplitAtTheTileSize) {
  float a = 0, b = 0;  // two caches (only their addresses matter)
  const std::vector<TokenSlot> slots = {{&a, 9, 0, 0}, {&a, 9, 0, 1}, {&a, 9, 0, 2}, {&b, 9, 0, 3}, {&b, 9, 0, 4},
                                        {&b, 9, 0, 6}, {&a, 9, 0, 3}, {&a, 9, 0, 4}};
  std::vector<QueryTile> tiles(slots.size());
  const std::int64_t n = make_query_tiles(slots.data(), static_cast<std::int64_t>(slots.size()), 2, tiles.data());
  const std::vector<std::pair<int, int>> want = {{0, 2}, {2, 1}, {3, 2}, {5, 1}, {6, 2}};
  ASSERT_EQ(n, static_cast<std::int64_t>(want.size()));
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(tiles[i].first, want[i].first) << i;
    EXPECT_EQ(tiles[i].count, want[i].second) << i;
  }
}

TEST(CudaQueryTiles, KvSpansJoinASequencesTilesAndAlignTo64) {
  float a = 0, b = 0;
  // a: positions 0..4 (tiles of 2), then b: 70..72, then a again at 9..10 (not contiguous: a new span).
  const std::vector<TokenSlot> slots = {{&a, 99, 0, 0},  {&a, 99, 0, 1},  {&a, 99, 0, 2}, {&a, 99, 0, 3},
                                        {&a, 99, 0, 4},  {&b, 99, 0, 70}, {&b, 99, 0, 71}, {&b, 99, 0, 72},
                                        {&a, 99, 0, 9},  {&a, 99, 0, 10}};
  std::vector<QueryTile> tiles(slots.size());
  const std::int64_t n_tiles = make_query_tiles(slots.data(), static_cast<std::int64_t>(slots.size()), 2, tiles.data());
  ASSERT_EQ(n_tiles, 6);
  std::vector<KvSpan> spans(static_cast<std::size_t>(n_tiles));
  std::vector<std::int32_t> offsets(static_cast<std::size_t>(n_tiles));
  std::int64_t n_spans = 0;
  const std::int64_t keys = make_kv_spans(slots.data(), tiles.data(), n_tiles, spans.data(), offsets.data(), &n_spans);
  ASSERT_EQ(n_spans, 3);
  EXPECT_EQ(keys, 64 + 128 + 64);
  EXPECT_EQ(spans[0].token, 0);
  EXPECT_EQ(spans[0].first_pos, 0);
  EXPECT_EQ(spans[0].last_pos, 4);
  EXPECT_EQ(spans[0].offset, 0);
  EXPECT_EQ(spans[1].token, 5);
  EXPECT_EQ(spans[1].first_pos, 70);
  EXPECT_EQ(spans[1].last_pos, 72);
  EXPECT_EQ(spans[1].offset, 64);
  EXPECT_EQ(spans[2].token, 8);
  EXPECT_EQ(spans[2].first_pos, 9);
  EXPECT_EQ(spans[2].last_pos, 10);
  EXPECT_EQ(spans[2].offset, 192);
  const std::vector<std::int32_t> want = {0, 0, 0, 64, 64, 192};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(offsets[i], want[i]) << i;
}

TEST_F(CudaKernels, AttentionSplitCoversTheContext) {
  AttentionGeometry g{32, 8, 128, 0, 1};
  for (std::int64_t n : {1, 3, 8, 64, 2048}) {
    for (std::int64_t keys : {1, 31, 32, 33, 4097, 131072}) {
      for (int target : {1, 528, 1024}) {
        const AttentionSplit s = attention_split(g, n, keys, target);
        EXPECT_GE(s.splits, 1);
        EXPECT_EQ(s.chunk % 32, 0);
        EXPECT_GE(s.splits * s.chunk, keys);
        EXPECT_LT((s.splits - 1) * s.chunk, keys);
        EXPECT_LE(n * g.n_kv_heads * s.splits * (g.n_heads / g.n_kv_heads) * (g.head_dim + 2),
                  attention_partial_floats(g, n, 1024));
      }
    }
  }
}

// Matmul through the GEMV (n <= 8) and cuBLAS (n > 8, or cublas_) paths, several targets sharing x, output
// strides wider than the rows, an input stride wider than cols.
struct MatmulCase {
  std::int64_t cols;
  std::vector<std::int64_t> rows;  // one target each
};

class CudaMatmul : public CudaKernels {
 protected:
  // ldx_pad: floats past cols in each x row (3: x rows not 16-byte aligned).
  void run(DType dtype, std::int64_t n, const MatmulCase& mc, int weight_offset, std::int64_t ldx_pad = 3) {
    const std::int64_t cols = mc.cols, ldx = cols + ldx_pad;
    const std::vector<float> xh = random_floats(static_cast<std::size_t>(n * ldx), rng_);
    DeviceBuffer<float> x(xh);
    // x as the product sees it: rounded to the weight dtype on the cuBLAS path of 16-bit weights.
    std::vector<float> x_used(static_cast<std::size_t>(n * cols));
    const bool use_cublas = cublas_ || n > kGemvMaxTokens;
    const bool rounded = use_cublas && dtype != DType::kF32;
    for (std::int64_t t = 0; t < n; ++t)
      for (std::int64_t c = 0; c < cols; ++c)
        x_used[static_cast<std::size_t>(t * cols + c)] =
            rounded ? round_to(xh[static_cast<std::size_t>(t * ldx + c)], dtype) : xh[static_cast<std::size_t>(t * ldx + c)];
    std::vector<std::vector<std::uint8_t>> w_bytes;
    std::vector<DeviceBuffer<std::uint8_t>> w_dev;
    std::vector<DeviceBuffer<float>> y_dev;
    std::vector<MatmulTarget> targets;
    const std::size_t es = dtype_size(dtype);
    for (std::int64_t rows : mc.rows) {
      w_bytes.push_back(to_dtype_bytes(random_floats(static_cast<std::size_t>(rows * cols), rng_), dtype));
      // weight_offset elements in front: a pointer that is not 16-byte aligned (element loads).
      std::vector<std::uint8_t> padded(static_cast<std::size_t>(weight_offset) * es, 0);
      padded.insert(padded.end(), w_bytes.back().begin(), w_bytes.back().end());
      w_dev.emplace_back(padded);
      const std::int64_t ldy = rows + 2;
      y_dev.emplace_back(static_cast<std::size_t>(n * ldy));
      y_dev.back().poison();
      targets.push_back(MatmulTarget{w_dev.back().get() + weight_offset * es, rows, y_dev.back().get(), ldy});
    }
    const std::size_t scratch_bytes = gemm_scratch_bytes(n, cols);
    DeviceBuffer<std::uint8_t> scratch(scratch_bytes);
    cublasHandle_t h = nullptr;
    ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasSetStream(h, stream_), CUBLAS_STATUS_SUCCESS);
    if (!use_cublas) {
      launch_gemv(dtype, targets.data(), static_cast<int>(targets.size()), cols, x.get(), n, ldx, stream_);
    } else {
      gemm_cublas(h, dtype, targets.data(), static_cast<int>(targets.size()), cols, x.get(), n, ldx, scratch.get(),
                  scratch_bytes, stream_, "test");
    }
    sync();
    cublasDestroy(h);
    for (std::size_t p = 0; p < targets.size(); ++p) {
      const std::int64_t rows = mc.rows[p], ldy = targets[p].ldy;
      const WeightMatrix w{w_bytes[p].data(), dtype, rows, cols};
      std::vector<float> want(static_cast<std::size_t>(n * rows));
      ref::matmul(w, x_used.data(), n, want.data());
      const std::vector<float> y = y_dev[p].download();
      std::vector<float> got(want.size());
      for (std::int64_t t = 0; t < n; ++t) {
        for (std::int64_t r = 0; r < rows; ++r) got[static_cast<std::size_t>(t * rows + r)] = y[static_cast<std::size_t>(t * ldy + r)];
        for (std::int64_t r = rows; r < ldy; ++r)
          ASSERT_TRUE(all_bits_set(y[static_cast<std::size_t>(t * ldy + r)])) << "wrote past the rows";
      }
      // f32 accumulation over cols terms of |w·x| <= 1.
      const double tol = 3e-6 * std::sqrt(static_cast<double>(cols)) + 2e-6 * static_cast<double>(cols) / 64;
      EXPECT_TRUE(close(got, want, tol, 1e-5)) << dt(dtype) << " n=" << n << " cols=" << cols << " rows=" << rows
                                               << " target " << p << " offset " << weight_offset << " ldx " << ldx;
    }
  }
  bool cublas_ = false;        // cuBLAS at every n (CudaOps::matmul's path above kGemvDispatchMaxTokens)
};

TEST_F(CudaMatmul, GemvEveryDtypeOddShapes) {
  const std::vector<MatmulCase> cases = {
      {1, {1}}, {3, {3}}, {17, {17, 1, 3}}, {4097, {5}}, {8, {33}}, {4096, {64, 16, 16}}, {16, {17}}, {64, {4097}},
      {9000, {3, 2, 1, 4, 5}},  // more targets than one launch takes; cols over one x tile
  };
  for (DType dtype : kDtypes) {
    for (std::int64_t n : {1, 2, 3, 5, 8}) {
      for (const MatmulCase& mc : cases) {
        for (int offset : {0, 1}) run(dtype, n, mc, offset);
      }
    }
  }
}

// x rows 16-byte aligned (ldx = cols, and a wider multiple of 4): the GEMV's vector x loads,
// every token count, rows long enough for the split columns' full chunks and their tails.
TEST_F(CudaMatmul, GemvAlignedInputEveryTokenCount) {
  const std::vector<MatmulCase> cases = {
      {8, {33}}, {16, {17, 3}}, {4096, {64, 16, 16}}, {2048, {300, 5}}, {9000, {3, 2, 1, 4, 5}}, {14336, {37}},
      {4104, {9}}, {17, {5}},
  };
  for (DType dtype : kDtypes) {
    for (std::int64_t n = 1; n <= kGemvMaxTokens; ++n) {
      for (const MatmulCase& mc : cases) {
        for (std::int64_t pad : {0, 4}) run(dtype, n, mc, 0, pad);
      }
    }
  }
}

TEST_F(CudaMatmul, CublasEveryDtypeOddShapes) {
  const std::vector<MatmulCase> cases = {{1, {1}}, {3, {3}}, {17, {17, 1}}, {4097, {5}}, {64, {4097}}, {4096, {64, 16}}};
  for (DType dtype : kDtypes) {
    for (std::int64_t n : {9, 17, 64}) {
      for (const MatmulCase& mc : cases) run(dtype, n, mc, 0);
    }
  }
}

// cuBLAS at the decode token counts CudaOps::matmul gives it (kGemvDispatchMaxTokens + 1 .. 8),
// and at 1.
TEST_F(CudaMatmul, CublasFewTokens) {
  cublas_ = true;
  const std::vector<MatmulCase> cases = {{1, {1}}, {17, {17, 1}}, {4097, {5}}, {4096, {64, 16, 16}}, {2048, {300, 5}}};
  for (DType dtype : kDtypes) {
    for (std::int64_t n : {std::int64_t{1}, kGemvDispatchMaxTokens + 1, std::int64_t{5}, kGemvMaxTokens}) {
      for (const MatmulCase& mc : cases) run(dtype, n, mc, 0);
    }
  }
}

TEST_F(CudaKernels, CeilingsAreMeasured) {
  const double tflops = cuda_gemm_bf16_tflops(1024, 512, 1024, stream_);
  EXPECT_TRUE(std::isfinite(tflops) && tflops > 0.1) << tflops;
  const double gbps = cuda_copy_gbps(64u << 20, stream_);
  EXPECT_TRUE(std::isfinite(gbps) && gbps > 10) << gbps;
}

}  // namespace
}  // namespace plexus::cuda::test
