// CpuTrainOps against RefTrainOps on random shapes with odd sizes (1, 3, 17, 65, and GEMMs that
// cross the packing chunks), for every ISA this CPU runs, in f32 and bf16 (against the oracle's
// bf16, and apart from f32); and bitwise the same results with 1, 2 and 3 threads.
#include "train/cpu_train_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "train/ref_train_ops.h"

namespace plexus {
namespace {

std::vector<float> random_vec(std::int64_t n, std::mt19937& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// Every op's outputs by name, for one implementation; the inputs are fixed by the seed.
struct Outputs {
  std::vector<std::pair<std::string, std::vector<float>>> named;
  std::vector<double> losses;
  // The reduction length behind each output (for its tolerance).
  std::vector<std::int64_t> depth;
  void put(std::string name, std::vector<float> v, std::int64_t k) {
    named.emplace_back(std::move(name), std::move(v));
    depth.push_back(k);
  }
};

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

void run_attention(TrainOps& ops, Outputs& o) {
  std::mt19937 rng(13);
  struct Case {
    std::int64_t b, T, n_heads, n_kv_heads, hd, window;
  };
  for (const Case c :
       {Case{2, 1, 2, 1, 4, 0}, Case{2, 17, 4, 2, 8, 0}, Case{2, 17, 4, 2, 3, 5}, Case{1, 65, 6, 2, 16, 0},
        Case{2, 65, 4, 2, 8, 20}, Case{2, 100, 6, 3, 8, 50}, Case{1, 150, 2, 2, 5, 0}}) {
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
  Outputs o;
  run_linears(ops, o);
  run_rowwise(ops, o);
  run_attention(ops, o);
  return o;
}

std::vector<Isa> isas() {
  std::vector<Isa> v;
  for (Isa i : {Isa::kGeneric, Isa::kAvx2, Isa::kAvx512})
    if (isa_supported(i)) v.push_back(i);
  return v;
}

// Float sums of `depth` terms of size ~1: error grows like sqrt(depth).
double f32_tolerance(std::int64_t depth) { return 2e-6 * (4 + std::sqrt(static_cast<double>(depth))); }

// Elements of `got` farther than tol(i) · (1 + |want|) from `want` (ADD_FAILURE for the first 5 of each output).
void expect_near(const Outputs& got, const Outputs& want, const std::string& label,
                 const std::function<double(std::size_t)>& tol) {
  ASSERT_EQ(got.named.size(), want.named.size());
  for (std::size_t i = 0; i < want.named.size(); ++i) {
    const auto& [name, w] = want.named[i];
    const auto& g = got.named[i].second;
    ASSERT_EQ(g.size(), w.size()) << name;
    int bad = 0;
    for (std::size_t j = 0; j < w.size() && bad < 5; ++j)
      if (!(std::abs(g[j] - w[j]) <= tol(i) * (1 + std::abs(w[j])))) {
        ++bad;
        ADD_FAILURE() << label << " " << name << " [" << j << "]: " << g[j] << " vs " << w[j];
      }
  }
  for (std::size_t i = 0; i < want.losses.size(); ++i)
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-5 * (1 + want.losses[i])) << label;
}

TEST(CpuTrainOps, MatchesRefTrainOps) {
  RefTrainOps ref;
  const Outputs want = run_all(ref);
  for (Isa isa : isas()) {
    ThreadPool pool(2);
    CpuTrainOps ops(pool, isa);
    expect_near(run_all(ops), want, std::string(isa_name(isa)),
                [&](std::size_t i) { return f32_tolerance(want.depth[i]); });
  }
}

// The outputs of the matrix products (what bf16 rounds), by name.
bool is_product(const std::string& name) {
  for (const char* p : {"linear", "dx", "dw ", "attention out", "attention dq", "attention dk", "attention dv"})
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

// Under bf16 the products' inputs are rounded alike in both, so the linear forms agree as f32's
// do. Attention's P is computed in f32 here and in double by the oracle, so a probability that
// lies within ~1e-7 of a bf16 rounding boundary may round the other way (a 2^-8 relative step of
// one term; dS = P·(dP − D) cancels, so its flips are the likelier): its outputs get 5e-4 (seen
// up to 3.2e-4; bf16 against f32 differs by 2.2e-3 or more below).
TEST(CpuTrainOps, MatchesRefTrainOpsInBf16) {
  RefTrainOps ref(TrainPrecision::kBf16);
  const Outputs want = run_all(ref);
  for (Isa isa : isas()) {
    ThreadPool pool(2);
    CpuTrainOps ops(pool, isa, TrainPrecision::kBf16);
    EXPECT_EQ(ops.precision(), TrainPrecision::kBf16);
    expect_near(run_all(ops), want, std::string(isa_name(isa)) + " bf16", [&](std::size_t i) {
      return want.named[i].first.rfind("attention", 0) == 0 ? 5e-4 : f32_tolerance(want.depth[i]);
    });
  }
}

// bf16 is not f32 under another name: every product of more than one term differs from the
// f32 oracle's somewhere by far more than the bf16 comparison above allows, and the other ops
// (f32 in both precisions) are bitwise those of f32.
TEST(CpuTrainOps, Bf16DiffersFromF32InTheProductsAlone) {
  RefTrainOps ref;
  const Outputs f32 = run_all(ref);
  ThreadPool pool(2);
  CpuTrainOps f32_ops(pool);
  const Outputs cpu_f32 = run_all(f32_ops);
  CpuTrainOps ops(pool, TrainPrecision::kBf16);
  const Outputs bf16 = run_all(ops);
  ASSERT_EQ(bf16.named.size(), f32.named.size());
  int products = 0;
  for (std::size_t i = 0; i < f32.named.size(); ++i) {
    const auto& [name, w] = f32.named[i];
    const auto& g = bf16.named[i].second;
    if (!is_product(name)) {
      if (name.rfind("attention lse", 0) != 0) {  // lse is a sum of exp(q·k): a product's output
        EXPECT_TRUE(g == cpu_f32.named[i].second) << name << " is not a product: bf16 must leave it f32";
      }
      continue;
    }
    // A single term, or attention over one token (dq = dk = 0 up to rounding), has nothing to show.
    if (f32.depth[i] < 3 || w.empty() || name.find(" T=1 ") != std::string::npos) continue;
    double worst = 0;
    for (std::size_t j = 0; j < w.size(); ++j) worst = std::max(worst, std::abs(static_cast<double>(g[j]) - w[j]) / (1 + std::abs(w[j])));
    EXPECT_GT(worst, 1.5e-3) << name << ": bf16 within " << worst << " of f32";
    ++products;
  }
  EXPECT_GT(products, 40);
}

TEST(CpuTrainOps, BitwiseIndependentOfThreadCount) {
  for (TrainPrecision precision : {TrainPrecision::kF32, TrainPrecision::kBf16}) {
    for (Isa isa : isas()) {
      std::vector<Outputs> runs;
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        CpuTrainOps ops(pool, isa, precision);
        runs.push_back(run_all(ops));
      }
      for (std::size_t r = 1; r < runs.size(); ++r) {
        ASSERT_EQ(runs[r].named.size(), runs[0].named.size());
        for (std::size_t i = 0; i < runs[0].named.size(); ++i)
          EXPECT_TRUE(runs[r].named[i].second == runs[0].named[i].second)
              << isa_name(isa) << " " << precision_name(precision) << " " << runs[0].named[i].first << ": " << (r + 1)
              << " threads differ from 1";
        EXPECT_EQ(runs[r].losses, runs[0].losses) << isa_name(isa);
      }
    }
  }
}

}  // namespace
}  // namespace plexus
