// CudaTrainOps and CudaOptimizer on a GPU (label gpu; skipped, with the reason, without one):
// every op against RefTrainOps on the cases CpuTrainOps is checked on (train_ops_cases.h) plus
// the head sizes the GPU kernels specialise (32 to 256 channels, T not a multiple of the 32-row
// tiles, GQA, sliding windows); bitwise repeatable runs; embed_backward bitwise as the oracle's
// in-order adds; AdamW bitwise as the CPU's and the gradient norm as the CPU's.
#include "train/cuda/cuda_train_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "train/adamw.h"
#include "train/cuda/cuda_optimizer.h"
#include "train/grad_clip.h"
#include "train/ref_train_ops.h"
#include "train_ops_cases.h"

namespace plexus::cuda {
namespace {

using test::DeviceBuffer;
using testing_train::Outputs;
using testing_train::random_vec;
using F = DeviceBuffer<float>;

#define PLEXUS_SKIP_WITHOUT_GPU()        \
  do {                                   \
    std::string why_;                    \
    if (!test::gpu_present(&why_)) GTEST_SKIP() << why_; \
  } while (0)

F upload(const float* p, std::int64_t n) { return F(std::vector<float>(p, p + n)); }
// A write-only output: NaN in every element, so one the op leaves shows.
F poisoned(std::int64_t n) {
  F b(static_cast<std::size_t>(n));
  b.poison();
  return b;
}
void download(const F& b, float* p) {
  const std::vector<float> h = b.download();
  std::copy(h.begin(), h.end(), p);
}
std::int64_t rows_of(std::span<const std::int32_t> ids) {
  return ids.empty() ? 0 : *std::max_element(ids.begin(), ids.end()) + 1;
}

// TrainOps on host memory through CudaTrainOps: each op copies its inputs to fresh device
// buffers, runs on the GPU and copies its outputs back, so the host-side cases drive it unchanged.
class DeviceRoundTrip final : public TrainOps {
 public:
  explicit DeviceRoundTrip(CudaTrainOps& ops) : ops_(ops) {}

  void embed(const float* table, std::span<const std::int32_t> ids, std::int64_t d, float* x) override {
    const auto n = static_cast<std::int64_t>(ids.size());
    F t = upload(table, rows_of(ids) * d), y = poisoned(n * d);
    ops_.embed(t.get(), ids, d, y.get());
    download(y, x);
  }
  void rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
               float* rstd) override {
    F dx = upload(x, rows * d), dw = upload(w, d), dy = poisoned(rows * d), dr = poisoned(rows);
    ops_.rmsnorm(dx.get(), dw.get(), rows, d, eps, dy.get(), dr.get());
    download(dy, y);
    download(dr, rstd);
  }
  void linear(const float* x, const float* w, const float* bias, std::int64_t n, std::int64_t in, std::int64_t out,
              float* y) override {
    F dx = upload(x, n * in), dw = upload(w, out * in), db = upload(bias ? bias : w, bias ? out : 0),
      dy = poisoned(n * out);
    ops_.linear(dx.get(), dw.get(), bias ? db.get() : nullptr, n, in, out, dy.get());
    download(dy, y);
  }
  void rope_table(std::span<const double> inv_freq, std::int64_t T, float* cos, float* sin) override {
    const auto n = T * static_cast<std::int64_t>(inv_freq.size());
    F c = poisoned(n), s = poisoned(n);
    ops_.rope_table(inv_freq, T, c.get(), s.get());
    download(c, cos);
    download(s, sin);
  }
  void rope(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim, const float* cos,
            const float* sin, bool inverse) override {
    F dx = upload(x, b * T * heads * head_dim), c = upload(cos, T * head_dim / 2), s = upload(sin, T * head_dim / 2);
    ops_.rope(dx.get(), b, T, heads, head_dim, c.get(), s.get(), inverse);
    download(dx, x);
  }
  void attention(const float* q, const float* k, const float* v, std::int64_t b, std::int64_t T,
                 const AttentionShape& s, float* out, float* lse) override {
    const std::int64_t qn = b * T * s.n_heads * s.head_dim, kn = b * T * s.n_kv_heads * s.head_dim;
    F dq = upload(q, qn), dk = upload(k, kn), dv = upload(v, kn), o = poisoned(qn), l = poisoned(b * s.n_heads * T);
    ops_.attention(dq.get(), dk.get(), dv.get(), b, T, s, o.get(), l.get());
    download(o, out);
    download(l, lse);
  }
  void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) override {
    F g = upload(gate, n), u = upload(up, n), o = poisoned(n);
    ops_.silu_mul(g.get(), u.get(), o.get(), n);
    download(o, out);
  }
  double cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                       float grad_scale) override {
    F l = upload(logits, static_cast<std::int64_t>(targets.size()) * vocab);
    const double loss = ops_.cross_entropy(l.get(), targets, vocab, grad_scale);
    download(l, logits);
    return loss;
  }
  void linear_backward_input(const float* dy, const float* w, std::int64_t n, std::int64_t in, std::int64_t out,
                             float* dx, bool accumulate) override {
    F g = upload(dy, n * out), dw = upload(w, out * in), d = accumulate ? upload(dx, n * in) : poisoned(n * in);
    ops_.linear_backward_input(g.get(), dw.get(), n, in, out, d.get(), accumulate);
    download(d, dx);
  }
  void linear_backward_weight(const float* dy, const float* x, std::int64_t n, std::int64_t in, std::int64_t out,
                              float* dw, float* dbias) override {
    F g = upload(dy, n * out), dx = upload(x, n * in), w = upload(dw, out * in),
      b = upload(dbias ? dbias : dw, dbias ? out : 0);
    ops_.linear_backward_weight(g.get(), dx.get(), n, in, out, w.get(), dbias ? b.get() : nullptr);
    download(w, dw);
    if (dbias) download(b, dbias);
  }
  void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd, std::int64_t rows,
                        std::int64_t d, float* dx, float* dw) override {
    F g = upload(dy, rows * d), xx = upload(x, rows * d), ww = upload(w, d), r = upload(rstd, rows),
      ddx = upload(dx, rows * d), ddw = upload(dw, d);
    ops_.rmsnorm_backward(g.get(), xx.get(), ww.get(), r.get(), rows, d, ddx.get(), ddw.get());
    download(ddx, dx);
    download(ddw, dw);
  }
  void attention_backward(const float* dout, const float* q, const float* k, const float* v, const float* out,
                          const float* lse, std::int64_t b, std::int64_t T, const AttentionShape& s, float* dq,
                          float* dk, float* dv) override {
    const std::int64_t qn = b * T * s.n_heads * s.head_dim, kn = b * T * s.n_kv_heads * s.head_dim;
    F g = upload(dout, qn), qq = upload(q, qn), kk = upload(k, kn), vv = upload(v, kn), o = upload(out, qn),
      l = upload(lse, b * s.n_heads * T), gq = poisoned(qn), gk = poisoned(kn), gv = poisoned(kn);
    ops_.attention_backward(g.get(), qq.get(), kk.get(), vv.get(), o.get(), l.get(), b, T, s, gq.get(), gk.get(),
                            gv.get());
    download(gq, dq);
    download(gk, dk);
    download(gv, dv);
  }
  void silu_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                         std::int64_t n) override {
    F d = upload(dout, n), g = upload(gate, n), u = upload(up, n);
    F dg = dgate == gate ? F() : poisoned(n), du = dup == up ? F() : poisoned(n);
    float* dg_p = dgate == gate ? g.get() : dg.get();  // the aliasing the case asks for, on the device
    float* du_p = dup == up ? u.get() : du.get();
    ops_.silu_mul_backward(d.get(), g.get(), u.get(), dg_p, du_p, n);
    download(dgate == gate ? g : dg, dgate);
    download(dup == up ? u : du, dup);
  }
  void embed_backward(const float* dx, std::span<const std::int32_t> ids, std::int64_t d, float* dtable) override {
    F g = upload(dx, static_cast<std::int64_t>(ids.size()) * d), t = upload(dtable, rows_of(ids) * d);
    ops_.embed_backward(g.get(), ids, d, t.get());
    download(t, dtable);
  }
  void add(float* x, const float* y, std::int64_t n) override {
    F a = upload(x, n), b = upload(y, n);
    ops_.add(a.get(), b.get(), n);
    download(a, x);
  }
  void zero(float* x, std::int64_t n) override {
    F a = upload(x, n);
    ops_.zero(a.get(), n);
    download(a, x);
  }

 private:
  CudaTrainOps& ops_;
};

// Tolerance (testing_train::expect_near): 1e-5 · (4 + sqrt(depth)) · (1 + |want|) against the
// double-accumulating oracle. The GPU's f32 sums (cuBLAS's blocked GEMMs, the kernels' fixed
// trees) err like sequential ones, about 6e-8 · sqrt(depth) relative; expf and logf are within
// 2 ulp; the online softmax rescales each row's sums once per 32-key tile. 1e-5 leaves a margin
// of over 10× on all of these and stays 1e4× below the O(1) errors of a wrong index or mask.
constexpr double kRel = 1e-5;

// The head sizes and tilings the CUDA attention kernels specialise: 1, 2, 4 and 8 channels per
// lane (head_dim 32, 64/80, 128, 256), T below, at and past the 32-row tiles, GQA 8:2 and 4:1,
// windows shorter and longer than a tile.
constexpr testing_train::AttentionCase kGpuAttention[] = {
    {1, 33, 4, 1, 32, 0},  {2, 70, 8, 2, 64, 0},  {1, 96, 4, 2, 80, 40}, {1, 129, 4, 4, 128, 0},
    {2, 45, 2, 1, 128, 7}, {1, 64, 2, 1, 256, 0}, {1, 100, 4, 2, 256, 33}};

TEST(CudaTrainOps, MatchesRefTrainOps) {
  PLEXUS_SKIP_WITHOUT_GPU();
  RefTrainOps ref;
  CudaTrainOps cuda;
  DeviceRoundTrip gpu(cuda);
  testing_train::expect_near(testing_train::run_all(gpu), testing_train::run_all(ref), "cuda", kRel);
}

TEST(CudaTrainOps, AttentionOfEveryHeadSizeMatchesRef) {
  PLEXUS_SKIP_WITHOUT_GPU();
  RefTrainOps ref;
  CudaTrainOps cuda;
  DeviceRoundTrip gpu(cuda);
  Outputs want, got;
  testing_train::run_attention(ref, want, kGpuAttention);
  testing_train::run_attention(gpu, got, kGpuAttention);
  testing_train::expect_near(got, want, "cuda attention", kRel);
}

TEST(CudaTrainOps, TwoRunsAreBitwiseEqual) {
  PLEXUS_SKIP_WITHOUT_GPU();
  Outputs runs[2];
  for (Outputs& o : runs) {
    CudaTrainOps cuda;  // fresh scratch each run
    DeviceRoundTrip gpu(cuda);
    o = testing_train::run_all(gpu);
    testing_train::run_attention(gpu, o, kGpuAttention);
  }
  testing_train::expect_bitwise(runs[1], runs[0], "cuda run 2 vs run 1");
}

// embed_backward adds a repeated id's rows one after the other in i order: in f32, the oracle's
// own order, so the bits are its bits (an order that depended on timing would not be).
TEST(CudaTrainOps, EmbedBackwardAddsRepeatedIdsInOrder) {
  PLEXUS_SKIP_WITHOUT_GPU();
  std::mt19937 rng(5);
  const std::int64_t d = 300, vocab = 40, n = 2000;
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  std::uniform_int_distribution<std::int32_t> id(0, static_cast<std::int32_t>(vocab - 1));
  for (auto& i : ids) i = id(rng) % 7 == 0 ? 3 : id(rng);  // id 3 very often
  const auto dx = random_vec(n * d, rng, -100, 100);
  auto want = random_vec(vocab * d, rng);
  auto got = want;
  RefTrainOps ref;
  ref.embed_backward(dx.data(), ids, d, want.data());
  CudaTrainOps cuda;
  DeviceRoundTrip gpu(cuda);
  gpu.embed_backward(dx.data(), ids, d, got.data());
  EXPECT_TRUE(got == want);
}

// A loss over a real vocabulary size (rows of 32000 logits, a block-strided max and sum).
TEST(CudaTrainOps, CrossEntropyOfALargeVocabulary) {
  PLEXUS_SKIP_WITHOUT_GPU();
  std::mt19937 rng(6);
  const std::int64_t vocab = 32000;
  const std::vector<std::int32_t> targets = {0, 31999, 12345, 7, 7};
  auto want = random_vec(static_cast<std::int64_t>(targets.size()) * vocab, rng, -20, 20);
  auto got = want;
  RefTrainOps ref;
  CudaTrainOps cuda;
  DeviceRoundTrip gpu(cuda);
  const double lw = ref.cross_entropy(want.data(), targets, vocab, 1.0f / 5);
  const double lg = gpu.cross_entropy(got.data(), targets, vocab, 1.0f / 5);
  EXPECT_NEAR(lg, lw, 1e-5 * (1 + lw));
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6 + 1e-5 * std::abs(want[i])) << i;
}

// AdamW on the GPU gives the CPU's bits (one element arithmetic, no fused multiply-adds), and the
// same bounds and overflow verdicts.
TEST(CudaOptimizer, AdamwIsBitwiseTheCpus) {
  PLEXUS_SKIP_WITHOUT_GPU();
  std::mt19937 rng(7);
  OptimizerOptions o;
  o.lr = 3e-3;
  o.weight_decay = 0.1;
  CudaTrainOps ops;
  CudaOptimizer opt(ops.stream());
  for (const std::int64_t n : {1, 1000, 100003}) {
    auto p = random_vec(n, rng), g = random_vec(n, rng, -5, 5), m = random_vec(n, rng, -0.1f, 0.1f),
         v = random_vec(n, rng, 0, 0.01f);
    F dp(p), dg(g), dm(m), dv(v);
    for (const std::int64_t step : {1, 7}) {
      const float coef = step == 1 ? 1.0f : 0.5f;
      EXPECT_EQ(opt.adamw_update_stays_finite(o, step, coef, dp.get(), dg.get(), dm.get(), dv.get(), n),
                adamw_update_stays_finite(o, step, coef, p.data(), g.data(), m.data(), v.data(), n));
      const AdamwBounds want = adamw_update(o, step, coef, p.data(), g.data(), m.data(), v.data(), n);
      const AdamwBounds got = opt.adamw_update(o, step, coef, dp.get(), dg.get(), dm.get(), dv.get(), n);
      EXPECT_TRUE(dp.download() == p) << "weights, n " << n << " step " << step;
      EXPECT_TRUE(dm.download() == m) << "exp_avg, n " << n << " step " << step;
      EXPECT_TRUE(dv.download() == v) << "exp_avg_sq, n " << n << " step " << step;
      EXPECT_EQ(got.p, want.p);
      EXPECT_EQ(got.m, want.m);
      EXPECT_EQ(got.v, want.v);
      const AdamwBounds b = opt.adamw_bounds(dp.get(), dm.get(), dv.get(), n);
      EXPECT_EQ(b.p, want.p);
      EXPECT_EQ(b.v, want.v);
    }
    // A gradient whose square overflows: both say the update does not stay finite.
    g[static_cast<std::size_t>(n / 2)] = 1e30f;
    dg.upload(g);
    EXPECT_FALSE(opt.adamw_update_stays_finite(o, 3, 1.0f, dp.get(), dg.get(), dm.get(), dv.get(), n));
    EXPECT_FALSE(adamw_update_stays_finite(o, 3, 1.0f, p.data(), g.data(), m.data(), v.data(), n));
    // A NaN moment: no bounds.
    v[0] = std::numeric_limits<float>::quiet_NaN();
    dv.upload(v);
    EXPECT_TRUE(std::isnan(opt.adamw_bounds(dp.get(), dm.get(), dv.get(), n).v));
  }
}

// The gradient norm over the CPU's blocks of 65536 (tensors below, at and past a block): double
// sums of exact squares, only their order differs, so within 1e-11 relative.
TEST(CudaOptimizer, GradNormIsTheCpus) {
  PLEXUS_SKIP_WITHOUT_GPU();
  std::mt19937 rng(8);
  std::vector<ParamSlot> slots;
  std::int64_t offset = 0;
  for (const std::int64_t count : {1, 65536, 65537, 200000, 17}) {
    ParamSlot s;
    s.name = "t" + std::to_string(slots.size());
    s.shape = {count};
    s.offset = offset;
    s.count = count;
    slots.push_back(s);
    offset += count + 64;  // a gap the norm must not read
  }
  auto g = random_vec(offset, rng, -3, 3);
  CudaTrainOps ops;
  CudaOptimizer opt(ops.stream());
  F dg(g);
  const double want = grad_norm(slots, g.data());
  EXPECT_NEAR(opt.grad_norm(slots, dg.get()), want, 1e-11 * want);
  EXPECT_EQ(opt.grad_norm(slots, dg.get()), opt.grad_norm(slots, dg.get()));
  g[70000] = std::numeric_limits<float>::infinity();
  dg.upload(g);
  EXPECT_FALSE(std::isfinite(opt.grad_norm(slots, dg.get())));
}

}  // namespace
}  // namespace plexus::cuda
