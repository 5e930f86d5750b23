// Every backward of RefTrainOps against central finite differences of a scalar loss Σ r·y
// (random r) on small random shapes, odd sizes included; the accumulating outputs (+=) too.
#include "train/ref_train_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace plexus {
namespace {

std::vector<float> uniform_values(std::size_t n, std::mt19937& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

double dot(const std::vector<float>& r, const std::vector<float>& y) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += static_cast<double>(r[i]) * y[i];
  return s;
}

// The gradient of loss() with respect to x, by central differences (step h); loss reads x.
std::vector<double> numeric_grad(std::vector<float>& x, const std::function<double()>& loss, float h = 1e-2f) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float keep = x[i];
    x[i] = keep + h;
    const float up = x[i];
    const double lp = loss();
    x[i] = keep - h;
    const float down = x[i];
    const double lm = loss();
    x[i] = keep;
    g[i] = (lp - lm) / (static_cast<double>(up) - down);
  }
  return g;
}

// analytic ≈ numeric within float noise: 2e-3 of the largest magnitude plus 1e-2 relative.
void expect_grad(const std::vector<float>& analytic, const std::vector<double>& numeric, const std::string& what) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  double scale = 1;
  for (double v : numeric) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < numeric.size(); ++i)
    EXPECT_NEAR(analytic[i], numeric[i], 2e-3 * scale + 1e-2 * std::abs(numeric[i])) << what << " element " << i;
}

// analytic = after − before for an accumulating (+=) output.
std::vector<float> minus(const std::vector<float>& after, const std::vector<float>& before) {
  std::vector<float> d(after.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = after[i] - before[i];
  return d;
}

TEST(RefTrainOpsGrad, Rmsnorm) {
  RefTrainOps ops;
  std::mt19937 rng(1);
  for (std::int64_t d : {1, 3, 17}) {
    const std::int64_t rows = 3;
    const float eps = 1e-2f;
    auto x = uniform_values(static_cast<std::size_t>(rows * d), rng), w = uniform_values(static_cast<std::size_t>(d), rng);
    const auto r = uniform_values(x.size(), rng);
    std::vector<float> y(x.size()), rstd(static_cast<std::size_t>(rows));
    auto loss = [&] {
      ops.rmsnorm(x.data(), w.data(), rows, d, eps, y.data(), rstd.data());
      return dot(r, y);
    };
    loss();
    const auto dx0 = uniform_values(x.size(), rng), dw0 = uniform_values(w.size(), rng);
    auto dx = dx0, dw = dw0;
    ops.rmsnorm_backward(r.data(), x.data(), w.data(), rstd.data(), rows, d, dx.data(), dw.data());
    expect_grad(minus(dx, dx0), numeric_grad(x, loss), "rmsnorm dx d=" + std::to_string(d));
    expect_grad(minus(dw, dw0), numeric_grad(w, loss), "rmsnorm dw d=" + std::to_string(d));
  }
}

TEST(RefTrainOpsGrad, Linear) {
  RefTrainOps ops;
  std::mt19937 rng(2);
  struct Shape {
    std::int64_t n, in, out;
    bool bias;
  };
  for (const Shape sh : {Shape{3, 17, 5, true}, Shape{1, 1, 3, false}, Shape{17, 3, 1, true}}) {
    const std::string tag = "n=" + std::to_string(sh.n) + " in=" + std::to_string(sh.in);
    auto x = uniform_values(static_cast<std::size_t>(sh.n * sh.in), rng);
    auto w = uniform_values(static_cast<std::size_t>(sh.out * sh.in), rng);
    auto b = uniform_values(static_cast<std::size_t>(sh.out), rng);
    const auto r = uniform_values(static_cast<std::size_t>(sh.n * sh.out), rng);
    std::vector<float> y(r.size());
    auto loss = [&] {
      ops.linear(x.data(), w.data(), sh.bias ? b.data() : nullptr, sh.n, sh.in, sh.out, y.data());
      return dot(r, y);
    };
    std::vector<float> dx(x.size(), 7.0f);
    ops.linear_backward_input(r.data(), w.data(), sh.n, sh.in, sh.out, dx.data(), false);
    expect_grad(dx, numeric_grad(x, loss), "linear dx " + tag);
    const auto dx0 = uniform_values(x.size(), rng);
    auto dxa = dx0;
    ops.linear_backward_input(r.data(), w.data(), sh.n, sh.in, sh.out, dxa.data(), true);
    expect_grad(minus(dxa, dx0), numeric_grad(x, loss), "linear dx accumulate " + tag);
    const auto dw0 = uniform_values(w.size(), rng), db0 = uniform_values(b.size(), rng);
    auto dw = dw0, db = db0;
    ops.linear_backward_weight(r.data(), x.data(), sh.n, sh.in, sh.out, dw.data(), sh.bias ? db.data() : nullptr);
    expect_grad(minus(dw, dw0), numeric_grad(w, loss), "linear dw " + tag);
    if (sh.bias)
      expect_grad(minus(db, db0), numeric_grad(b, loss), "linear dbias " + tag);
    else
      EXPECT_EQ(db, db0);
  }
}

TEST(RefTrainOpsGrad, RopeInverseIsTheBackward) {
  RefTrainOps ops;
  std::mt19937 rng(3);
  for (std::int64_t hd : {2, 6, 8}) {
    const std::int64_t b = 2, T = 5, heads = 3, half = hd / 2;
    std::vector<double> inv_freq(static_cast<std::size_t>(half));
    for (std::int64_t i = 0; i < half; ++i) inv_freq[static_cast<std::size_t>(i)] = std::pow(100.0, -2.0 * i / hd);
    std::vector<float> cos(static_cast<std::size_t>(T * half)), sin(cos.size());
    ops.rope_table(inv_freq, T, cos.data(), sin.data());
    EXPECT_FLOAT_EQ(cos[0], 1.0f);
    EXPECT_FLOAT_EQ(sin[static_cast<std::size_t>(2 * half)], static_cast<float>(std::sin(2.0)));
    auto x = uniform_values(static_cast<std::size_t>(b * T * heads * hd), rng);
    const auto r = uniform_values(x.size(), rng);
    std::vector<float> y;
    auto loss = [&] {
      y = x;
      ops.rope(y.data(), b, T, heads, hd, cos.data(), sin.data(), false);
      return dot(r, y);
    };
    auto dx = r;
    ops.rope(dx.data(), b, T, heads, hd, cos.data(), sin.data(), true);
    expect_grad(dx, numeric_grad(x, loss), "rope hd=" + std::to_string(hd));
    // Inverse undoes the rotation.
    loss();
    ops.rope(y.data(), b, T, heads, hd, cos.data(), sin.data(), true);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-6);
  }
}

TEST(RefTrainOpsGrad, AttentionGqaWindowed) {
  RefTrainOps ops;
  std::mt19937 rng(4);
  for (const float softcap : {0.0f, 0.7f}) {  // 0.7: Gemma 2's soft-capped scores, capped hard
  for (std::int64_t window : {0, 3}) {
    for (std::int64_t hd : {3, 4}) {
      AttentionShape s;
      s.softcap = softcap;
      s.n_heads = 4;
      s.n_kv_heads = 2;
      s.head_dim = hd;
      s.window = window;
      s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
      const std::int64_t b = 2, T = 6;
      const std::string tag = "window=" + std::to_string(window) + " hd=" + std::to_string(hd) +
                              " softcap=" + std::to_string(softcap);
      auto q = uniform_values(static_cast<std::size_t>(b * T * s.n_heads * hd), rng, -2, 2);
      auto k = uniform_values(static_cast<std::size_t>(b * T * s.n_kv_heads * hd), rng, -2, 2);
      auto v = uniform_values(k.size(), rng);
      const auto r = uniform_values(q.size(), rng);
      std::vector<float> out(q.size()), lse(static_cast<std::size_t>(b * s.n_heads * T));
      auto loss = [&] {
        ops.attention(q.data(), k.data(), v.data(), b, T, s, out.data(), lse.data());
        return dot(r, out);
      };
      loss();
      // Query 0 of each sequence reads key 0 only: its output is v row 0 of its kv head.
      for (std::int64_t c = 0; c < hd; ++c)
        EXPECT_NEAR(out[static_cast<std::size_t>(c)], v[static_cast<std::size_t>(c)], 1e-6);
      std::vector<float> dq(q.size(), 9.0f), dk(k.size(), 9.0f), dv(v.size(), 9.0f);
      ops.attention_backward(r.data(), q.data(), k.data(), v.data(), out.data(), lse.data(), b, T, s, dq.data(),
                             dk.data(), dv.data());
      expect_grad(dq, numeric_grad(q, loss), "attention dq " + tag);
      expect_grad(dk, numeric_grad(k, loss), "attention dk " + tag);
      expect_grad(dv, numeric_grad(v, loss), "attention dv " + tag);
    }
  }
  }
}

TEST(RefTrainOpsGrad, SiluMul) {
  RefTrainOps ops;
  std::mt19937 rng(5);
  const std::int64_t n = 17;
  auto gate = uniform_values(n, rng, -4, 4), up = uniform_values(n, rng, -2, 2);
  const auto r = uniform_values(n, rng);
  std::vector<float> out(n);
  auto loss = [&] {
    ops.silu_mul(gate.data(), up.data(), out.data(), n);
    return dot(r, out);
  };
  std::vector<float> dgate(n), dup(n);
  ops.silu_mul_backward(r.data(), gate.data(), up.data(), dgate.data(), dup.data(), n);
  expect_grad(dgate, numeric_grad(gate, loss), "silu_mul dgate");
  expect_grad(dup, numeric_grad(up, loss), "silu_mul dup");
  // In place: dgate, dup alias gate, up.
  auto g2 = gate, u2 = up;
  ops.silu_mul_backward(r.data(), g2.data(), u2.data(), g2.data(), u2.data(), n);
  EXPECT_EQ(g2, dgate);
  EXPECT_EQ(u2, dup);
}

TEST(RefTrainOpsGrad, GeluTanhMul) {
  RefTrainOps ops;
  std::mt19937 rng(15);
  const std::int64_t n = 17;
  auto gate = uniform_values(n, rng, -4, 4), up = uniform_values(n, rng, -2, 2);
  const auto r = uniform_values(n, rng);
  std::vector<float> out(n);
  auto loss = [&] {
    ops.gelu_tanh_mul(gate.data(), up.data(), out.data(), n);
    return dot(r, out);
  };
  // gelu_tanh(1) = 0.5 · (1 + tanh(√(2/π) · 1.044715)) = 0.841192 (torch's gelu(approximate="tanh")).
  const float one = 1.0f, unit = 1.0f;
  float y = 0;
  ops.gelu_tanh_mul(&one, &unit, &y, 1);
  EXPECT_NEAR(y, 0.841192, 1e-6);
  std::vector<float> dgate(n), dup(n);
  ops.gelu_tanh_mul_backward(r.data(), gate.data(), up.data(), dgate.data(), dup.data(), n);
  expect_grad(dgate, numeric_grad(gate, loss), "gelu_tanh_mul dgate");
  expect_grad(dup, numeric_grad(up, loss), "gelu_tanh_mul dup");
  auto g2 = gate, u2 = up;  // in place
  ops.gelu_tanh_mul_backward(r.data(), g2.data(), u2.data(), g2.data(), u2.data(), n);
  EXPECT_EQ(g2, dgate);
  EXPECT_EQ(u2, dup);
}

// The partial rope's inverse is its backward, also with cos and sin scaled (LongRoPE's attention
// factor on a partial rotary: the transpose of s·R is s·Rᵀ); the dims past rotary_dim pass through.
TEST(RefTrainOpsGrad, RopePartialInverseIsTheBackward) {
  RefTrainOps ops;
  std::mt19937 rng(16);
  for (const float table_scale : {1.0f, 1.3f}) {
    const std::int64_t b = 2, T = 4, heads = 2, hd = 8, rotary = 6, half = hd / 2;
    std::vector<double> inv_freq = {1.0, 0.3, 0.05, 0.0};  // zero past rotary / 2, as rope_inv_freq
    std::vector<float> cos(static_cast<std::size_t>(T * half)), sin(cos.size());
    ops.rope_table(inv_freq, T, cos.data(), sin.data());
    ops.scale(cos.data(), table_scale, T * half);
    ops.scale(sin.data(), table_scale, T * half);
    auto x = uniform_values(static_cast<std::size_t>(b * T * heads * hd), rng);
    const auto r = uniform_values(x.size(), rng);
    std::vector<float> y;
    auto loss = [&] {
      y = x;
      ops.rope_partial(y.data(), b, T, heads, hd, rotary, cos.data(), sin.data(), false);
      return dot(r, y);
    };
    loss();
    for (std::int64_t row = 0; row < b * T * heads; ++row) {
      for (std::int64_t i = rotary; i < hd; ++i) EXPECT_EQ(y[static_cast<std::size_t>(row * hd + i)], x[static_cast<std::size_t>(row * hd + i)]);
    }
    auto dx = r;
    ops.rope_partial(dx.data(), b, T, heads, hd, rotary, cos.data(), sin.data(), true);
    expect_grad(dx, numeric_grad(x, loss), "rope_partial scale " + std::to_string(table_scale));
  }
}

// Gemma 2's final_logit_softcapping: the loss of cap·tanh(z / cap) and its gradient in z.
TEST(RefTrainOpsGrad, SoftcapCrossEntropy) {
  RefTrainOps ops;
  std::mt19937 rng(17);
  const std::int64_t vocab = 7;
  const std::vector<std::int32_t> targets = {2, 6, 0};
  auto z = uniform_values(3 * vocab, rng, -4, 4);
  auto loss = [&] {
    auto l = z;
    return ops.softcap_cross_entropy(l.data(), targets, vocab, 1.0f, 1.5f);
  };
  auto capped = z;  // the plain loss of the capped logits is the same number
  for (float& x : capped) x = static_cast<float>(1.5 * std::tanh(x / 1.5));
  EXPECT_NEAR(loss(), ops.cross_entropy(capped.data(), targets, vocab, 1.0f), 1e-5);
  auto g = z;
  ops.softcap_cross_entropy(g.data(), targets, vocab, 0.5f, 1.5f);
  for (float& x : g) x *= 2.0f;  // grad_scale 0.5
  expect_grad(g, numeric_grad(z, loss, 1e-3f), "softcap_cross_entropy");
}

TEST(RefTrainOpsGrad, CrossEntropyGradientOutput) {
  RefTrainOps ops;
  std::mt19937 rng(6);
  for (std::int64_t vocab : {1, 3, 17}) {
    const std::vector<std::int32_t> targets = {0, static_cast<std::int32_t>(vocab - 1),
                                               static_cast<std::int32_t>(vocab / 2)};
    auto logits = uniform_values(targets.size() * static_cast<std::size_t>(vocab), rng, -3, 3);
    auto loss = [&] {
      auto l = logits;
      return ops.cross_entropy(l.data(), targets, vocab, 1.0f);
    };
    // The loss itself: Σ −log softmax[target].
    double expect = 0;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const float* l = logits.data() + i * static_cast<std::size_t>(vocab);
      double sum = 0;
      for (std::int64_t j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(l[j]));
      expect += std::log(sum) - l[targets[i]];
    }
    EXPECT_NEAR(loss(), expect, 1e-9);
    auto grad = logits;
    ops.cross_entropy(grad.data(), targets, vocab, 0.5f);
    for (float& g : grad) g *= 2.0f;  // grad_scale 0.5
    expect_grad(grad, numeric_grad(logits, loss), "cross_entropy vocab=" + std::to_string(vocab));
  }
}

TEST(RefTrainOpsGrad, EmbedRepeatedIds) {
  RefTrainOps ops;
  std::mt19937 rng(7);
  const std::int64_t vocab = 5, d = 3;
  const std::vector<std::int32_t> ids = {2, 0, 2, 4, 2};
  auto table = uniform_values(static_cast<std::size_t>(vocab * d), rng);
  const auto r = uniform_values(ids.size() * static_cast<std::size_t>(d), rng);
  std::vector<float> x(r.size());
  auto loss = [&] {
    ops.embed(table.data(), ids, d, x.data());
    return dot(r, x);
  };
  loss();
  EXPECT_EQ(x[3], table[0]);
  const auto dt0 = uniform_values(table.size(), rng);
  auto dt = dt0;
  ops.embed_backward(r.data(), ids, d, dt.data());
  expect_grad(minus(dt, dt0), numeric_grad(table, loss), "embed dtable");
  // Row 1 (unused) untouched; row 2 sums its three uses in order.
  EXPECT_EQ(dt[3], dt0[3]);
  EXPECT_EQ(dt[6], ((dt0[6] + r[0]) + r[6]) + r[12]);
}

}  // namespace
}  // namespace plexus
