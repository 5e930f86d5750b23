// The cases every TrainOps implementation is checked on against RefTrainOps (train_ops_cases.h).
#include "train_ops_cases.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace plexus::testing_train {

std::vector<float> random_vec(std::int64_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

namespace {

void run_linears(TrainOps& ops, Outputs& o) {
  struct Shape {
    std::int64_t n, in, out;
  };
  std::mt19937 rng(11);
  for (const Shape s : {Shape{1, 1, 1}, Shape{3, 17, 65}, Shape{65, 3, 17}, Shape{17, 65, 3}, Shape{5, 1100, 2050},
                        Shape{1540, 5, 3}, Shape{3, 7, 1540}, Shape{64, 96, 128}, Shape{515, 17, 33}, Shape{0, 5, 3}}) {
    const std::string tag = std::to_string(s.n) + "x" + std::to_string(s.in) + "x" + std::to_string(s.out);
    const auto x = random_vec(s.n * s.in, rng), w = random_vec(s.out * s.in, rng), bias = random_vec(s.out, rng);
    const auto dy = random_vec(s.n * s.out, rng);
    std::vector<float> y(static_cast<std::size_t>(s.n * s.out));
    ops.linear(x.data(), w.data(), nullptr, s.n, s.in, s.out, y.data());
    o.put("linear " + tag, y, s.in);
    ops.linear(x.data(), w.data(), bias.data(), s.n, s.in, s.out, y.data());
    o.put("linear+bias " + tag, y, s.in);
    std::vector<float> dx(static_cast<std::size_t>(s.n * s.in), 5.0f);
    ops.linear_backward_input(dy.data(), w.data(), s.n, s.in, s.out, dx.data(), false);
    o.put("dx " + tag, dx, s.out);
    ops.linear_backward_input(dy.data(), w.data(), s.n, s.in, s.out, dx.data(), true);
    o.put("dx+= " + tag, dx, s.out);
    auto dw = random_vec(s.out * s.in, rng);
    auto db = random_vec(s.out, rng);
    ops.linear_backward_weight(dy.data(), x.data(), s.n, s.in, s.out, dw.data(), db.data());
    o.put("dw " + tag, dw, s.n);
    o.put("dbias " + tag, db, s.n);
  }
}

void run_rowwise(TrainOps& ops, Outputs& o) {
  std::mt19937 rng(12);
  for (std::int64_t d : {1, 3, 65}) {
    const std::int64_t rows = 17;
    const std::string tag = " d=" + std::to_string(d);
    const auto x = random_vec(rows * d, rng), w = random_vec(d, rng), dy = random_vec(rows * d, rng);
    std::vector<float> y(x.size()), rstd(static_cast<std::size_t>(rows));
    ops.rmsnorm(x.data(), w.data(), rows, d, 1e-5f, y.data(), rstd.data());
    o.put("rmsnorm" + tag, y, d);
    o.put("rstd" + tag, rstd, d);
    auto dx = random_vec(rows * d, rng), dw = random_vec(d, rng);
    ops.rmsnorm_backward(dy.data(), x.data(), w.data(), rstd.data(), rows, d, dx.data(), dw.data());
    o.put("rmsnorm dx" + tag, dx, d);
    o.put("rmsnorm dw" + tag, dw, rows);
  }
  for (std::int64_t n : {1, 17, 65, 5000}) {
    const auto gate = random_vec(n, rng, -8, 8), up = random_vec(n, rng), dout = random_vec(n, rng);
    std::vector<float> out(static_cast<std::size_t>(n));
    ops.silu_mul(gate.data(), up.data(), out.data(), n);
    o.put("silu_mul " + std::to_string(n), out, 1);
    auto g = gate, u = up;  // in place
    ops.silu_mul_backward(dout.data(), g.data(), u.data(), g.data(), u.data(), n);
    o.put("silu_mul dgate " + std::to_string(n), g, 1);
    o.put("silu_mul dup " + std::to_string(n), u, 1);
  }
  for (std::int64_t vocab : {1, 17, 65, 1000}) {
    const std::vector<std::int32_t> targets = {0, static_cast<std::int32_t>(vocab - 1),
                                               static_cast<std::int32_t>(vocab / 3)};
    auto logits = random_vec(3 * vocab, rng, -6, 6);
    o.losses.push_back(ops.cross_entropy(logits.data(), targets, vocab, 0.25f));
    o.put("cross_entropy grad " + std::to_string(vocab), logits, vocab);
  }
  {
    const std::int64_t d = 17, vocab = 7;
    const std::vector<std::int32_t> ids = {3, 0, 3, 6, 3, 1};
    const auto table = random_vec(vocab * d, rng), dxe = random_vec(static_cast<std::int64_t>(ids.size()) * d, rng);
    std::vector<float> x(ids.size() * static_cast<std::size_t>(d));
    ops.embed(table.data(), ids, d, x.data());
    o.put("embed", x, 1);
    auto dt = random_vec(vocab * d, rng);
    ops.embed_backward(dxe.data(), ids, d, dt.data());
    o.put("embed dtable", dt, 4);
  }
  {
    const std::int64_t b = 2, T = 17, heads = 3, hd = 8, half = hd / 2;
    std::vector<double> inv_freq(static_cast<std::size_t>(half));
    for (std::int64_t i = 0; i < half; ++i) inv_freq[static_cast<std::size_t>(i)] = std::pow(10000.0, -2.0 * i / hd);
    std::vector<float> cos(static_cast<std::size_t>(T * half)), sin(cos.size());
    ops.rope_table(inv_freq, T, cos.data(), sin.data());
    o.put("rope cos", cos, 1);
    o.put("rope sin", sin, 1);
    auto x = random_vec(b * T * heads * hd, rng);
    ops.rope(x.data(), b, T, heads, hd, cos.data(), sin.data(), false);
    o.put("rope", x, 2);
    ops.rope(x.data(), b, T, heads, hd, cos.data(), sin.data(), true);
    o.put("rope inverse", x, 4);
  }
  {
    auto x = random_vec(5000, rng);
    const auto y = random_vec(5000, rng);
    ops.add(x.data(), y.data(), 5000);
    o.put("add", x, 1);
    ops.zero(x.data(), 4999);
    o.put("zero", x, 1);
  }
}

}  // namespace

void run_attention(TrainOps& ops, Outputs& o, std::span<const AttentionCase> cases) {
  std::mt19937 rng(13);
  for (const AttentionCase c : cases) {
    AttentionShape s;
    s.n_heads = c.n_heads, s.n_kv_heads = c.n_kv_heads, s.head_dim = c.hd, s.window = c.window;
    s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.hd)));
    const std::string tag =
        " T=" + std::to_string(c.T) + " hd=" + std::to_string(c.hd) + " window=" + std::to_string(c.window);
    const std::int64_t qn = c.b * c.T * c.n_heads * c.hd, kn = c.b * c.T * c.n_kv_heads * c.hd;
    const auto q = random_vec(qn, rng, -2, 2), k = random_vec(kn, rng, -2, 2), v = random_vec(kn, rng),
               dout = random_vec(qn, rng);
    std::vector<float> out(static_cast<std::size_t>(qn)), lse(static_cast<std::size_t>(c.b * c.n_heads * c.T));
    ops.attention(q.data(), k.data(), v.data(), c.b, c.T, s, out.data(), lse.data());
    o.put("attention out" + tag, out, c.T);
    o.put("attention lse" + tag, lse, c.T);
    std::vector<float> dq(out.size(), 3.0f), dk(k.size(), 3.0f), dv(k.size(), 3.0f);
    ops.attention_backward(dout.data(), q.data(), k.data(), v.data(), out.data(), lse.data(), c.b, c.T, s, dq.data(),
                           dk.data(), dv.data());
    o.put("attention dq" + tag, dq, c.T * c.hd);
    o.put("attention dk" + tag, dk, c.T * c.hd);
    o.put("attention dv" + tag, dv, c.T * c.hd);
  }
}

Outputs run_all(TrainOps& ops) {
  static constexpr AttentionCase kCases[] = {{2, 1, 2, 1, 4, 0},    {2, 17, 4, 2, 8, 0},  {2, 17, 4, 2, 3, 5},
                                             {1, 65, 6, 2, 16, 0},  {2, 65, 4, 2, 8, 20}, {2, 100, 6, 3, 8, 50},
                                             {1, 150, 2, 2, 5, 0}};
  Outputs o;
  run_linears(ops, o);
  run_rowwise(ops, o);
  run_attention(ops, o, kCases);
  return o;
}

int expect_near(const Outputs& got, const Outputs& want, const std::string& label, double rel) {
  return expect_near(got, want, label,
                     [&](std::size_t i) { return rel * (4 + std::sqrt(static_cast<double>(want.depth[i]))); });
}

int expect_near(const Outputs& got, const Outputs& want, const std::string& label,
                const std::function<double(std::size_t)>& tolerance) {
  EXPECT_EQ(got.named.size(), want.named.size()) << label;
  if (got.named.size() != want.named.size()) return 1;
  int failures = 0;
  for (std::size_t i = 0; i < want.named.size(); ++i) {
    const auto& [name, w] = want.named[i];
    const auto& g = got.named[i].second;
    EXPECT_EQ(g.size(), w.size()) << label << " " << name;
    if (g.size() != w.size()) {
      ++failures;
      continue;
    }
    const double tol = tolerance(i);
    int bad = 0;
    for (std::size_t j = 0; j < w.size() && bad < 5; ++j)
      if (!(std::abs(g[j] - w[j]) <= tol * (1 + std::abs(w[j])))) {
        ++bad;
        ADD_FAILURE() << label << " " << name << " [" << j << "]: " << g[j] << " vs " << w[j];
      }
    failures += bad;
  }
  EXPECT_EQ(got.losses.size(), want.losses.size()) << label;
  for (std::size_t i = 0; i < want.losses.size() && i < got.losses.size(); ++i)
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-5 * (1 + want.losses[i])) << label << " loss " << i;
  return failures;
}

void expect_bitwise(const Outputs& a, const Outputs& b, const std::string& label) {
  ASSERT_EQ(a.named.size(), b.named.size()) << label;
  for (std::size_t i = 0; i < a.named.size(); ++i)
    EXPECT_TRUE(a.named[i].second == b.named[i].second) << label << " " << a.named[i].first;
  EXPECT_EQ(a.losses, b.losses) << label;
}

Outputs run_family_ops(TrainOps& ops) {
  Outputs o;
  std::mt19937 rng(14);
  for (std::int64_t n : {1, 17, 65, 5000}) {
    const auto gate = random_vec(n, rng, -6, 6), up = random_vec(n, rng), dout = random_vec(n, rng);
    std::vector<float> out(static_cast<std::size_t>(n));
    ops.gelu_tanh_mul(gate.data(), up.data(), out.data(), n);
    o.put("gelu_tanh_mul " + std::to_string(n), out, 1);
    auto g = gate, u = up;  // in place
    ops.gelu_tanh_mul_backward(dout.data(), g.data(), u.data(), g.data(), u.data(), n);
    o.put("gelu_tanh_mul dgate " + std::to_string(n), g, 1);
    o.put("gelu_tanh_mul dup " + std::to_string(n), u, 1);
    auto x = random_vec(n, rng);
    ops.scale(x.data(), 1.75f, n);
    o.put("scale " + std::to_string(n), x, 1);
    std::vector<float> y(static_cast<std::size_t>(n));
    ops.add_constant(x.data(), 1.0f, y.data(), n);
    o.put("add_constant " + std::to_string(n), y, 1);
  }
  // Gemma 2's soft-capping: the loss on capped logits, scores capped in attention (GQA, a window).
  for (std::int64_t vocab : {1, 17, 1000}) {
    const std::vector<std::int32_t> targets = {0, static_cast<std::int32_t>(vocab - 1), static_cast<std::int32_t>(vocab / 3)};
    auto logits = random_vec(3 * vocab, rng, -6, 6);
    o.losses.push_back(ops.softcap_cross_entropy(logits.data(), targets, vocab, 0.25f, 1.5f));
    o.put("softcap_cross_entropy grad " + std::to_string(vocab), logits, vocab);
  }
  for (const std::int64_t window : {0, 5}) {
    const std::int64_t b = 2, T = 53, nh = 4, nkv = 2, hd = 8;  // T past one 48-query block
    AttentionShape s{nh, nkv, hd, window, 0.9f};
    s.softcap = 0.8f;
    const auto q = random_vec(b * T * nh * hd, rng, -2, 2), k = random_vec(b * T * nkv * hd, rng, -2, 2);
    const auto v = random_vec(b * T * nkv * hd, rng), dout = random_vec(b * T * nh * hd, rng);
    std::vector<float> out(q.size()), lse(static_cast<std::size_t>(b * nh * T)), dq(q.size()), dk(k.size()), dv(v.size());
    ops.attention(q.data(), k.data(), v.data(), b, T, s, out.data(), lse.data());
    ops.attention_backward(dout.data(), q.data(), k.data(), v.data(), out.data(), lse.data(), b, T, s, dq.data(),
                           dk.data(), dv.data());
    const std::string tag = " softcap window " + std::to_string(window);
    o.put("attention out" + tag, out, T);
    o.put("attention lse" + tag, lse, T);
    o.put("attention dq" + tag, dq, T);
    o.put("attention dk" + tag, dk, 2 * T);
    o.put("attention dv" + tag, dv, 2 * T);
  }
  // Phi-3's shape: 12 of head_dim 16 rotated, the tables head_dim / 2 wide with zero frequencies
  // past rotary_dim / 2 (model/llama_family's rope_inv_freq).
  for (const std::int64_t rotary_dim : {12, 16, 2}) {
    const std::int64_t b = 2, T = 9, heads = 3, hd = 16, half = hd / 2;
    std::vector<double> inv_freq(static_cast<std::size_t>(half), 0.0);
    for (std::int64_t i = 0; i < rotary_dim / 2; ++i)
      inv_freq[static_cast<std::size_t>(i)] = std::pow(10000.0, -2.0 * i / rotary_dim);
    std::vector<float> cos(static_cast<std::size_t>(T * half)), sin(cos.size());
    ops.rope_table(inv_freq, T, cos.data(), sin.data());
    auto x = random_vec(b * T * heads * hd, rng);
    const std::string tag = " rotary " + std::to_string(rotary_dim);
    ops.rope_partial(x.data(), b, T, heads, hd, rotary_dim, cos.data(), sin.data(), false);
    o.put("rope_partial" + tag, x, 2);
    ops.rope_partial(x.data(), b, T, heads, hd, rotary_dim, cos.data(), sin.data(), true);
    o.put("rope_partial inverse" + tag, x, 4);
  }
  return o;
}

}  // namespace plexus::testing_train
