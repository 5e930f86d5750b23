// AdamW against a double-precision transcription of torch's formula and against torch.optim.AdamW
// itself (/usr/bin/python3 with torch; skipped with the reason where torch is missing), and
// clip_grad_norm_'s norm and factor.
#include "train/adamw.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/thread_pool.h"
#include "test_util.h"
#include "train/grad_clip.h"

namespace plexus {
namespace {

std::vector<float> random_values(std::size_t n, std::uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// torch.optim.AdamW's formula, step by step, in double.
struct DoubleAdamW {
  std::vector<double> p, m, v;
  void step(const OptimizerOptions& o, std::int64_t step, const std::vector<float>& g) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - o.lr * o.weight_decay;
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * static_cast<double>(g[i]) * g[i];
      const double bc1 = 1 - std::pow(o.beta1, static_cast<double>(step));
      const double bc2 = 1 - std::pow(o.beta2, static_cast<double>(step));
      p[i] -= o.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + o.eps);
    }
  }
};

TEST(AdamW, MatchesTorchsFormulaInDoubleOverSteps) {
  // beta1 0.9 takes lerp's first branch (weight 0.1), 0.3 its second (weight 0.7).
  for (const double beta1 : {0.9, 0.3}) {
    OptimizerOptions o;
    o.lr = 1e-2;
    o.beta1 = beta1;
    o.beta2 = 0.99;
    o.eps = 1e-8;
    o.weight_decay = 0.1;
    const std::size_t n = 301;
    std::vector<float> p = random_values(n, 1, 1.0f), m(n, 0.0f), v(n, 0.0f);
    DoubleAdamW ref{std::vector<double>(p.begin(), p.end()), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
    for (std::int64_t step = 1; step <= 6; ++step) {
      const std::vector<float> g = random_values(n, 100 + static_cast<std::uint32_t>(step), 0.5f);
      adamw_update(o, step, 1.0f, p.data(), g.data(), m.data(), v.data(), static_cast<std::int64_t>(n));
      ref.step(o, step, g);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(p[i], ref.p[i], 2e-6 * (1 + std::abs(ref.p[i]))) << "beta1 " << beta1 << " step " << step << " i " << i;
        ASSERT_NEAR(m[i], ref.m[i], 1e-6 * (1 + std::abs(ref.m[i])));
        ASSERT_NEAR(v[i], ref.v[i], 1e-6 * std::abs(ref.v[i]) + 1e-12);
      }
    }
    // Weight decay pulled every weight towards zero beyond what the gradient steps did: a run
    // without it ends elsewhere.
    std::vector<float> q = random_values(n, 1, 1.0f), m2(n, 0.0f), v2(n, 0.0f);
    o.weight_decay = 0;
    for (std::int64_t step = 1; step <= 6; ++step) {
      const std::vector<float> g = random_values(n, 100 + static_cast<std::uint32_t>(step), 0.5f);
      adamw_update(o, step, 1.0f, q.data(), g.data(), m2.data(), v2.data(), static_cast<std::int64_t>(n));
    }
    double moved = 0;
    for (std::size_t i = 0; i < n; ++i) moved += std::abs(p[i] - q[i]);
    EXPECT_GT(moved / static_cast<double>(n), 1e-3);
  }
}

TEST(AdamW, AnySplitOfTheBufferGivesTheSameBits) {
  OptimizerOptions o;
  o.weight_decay = 0.01;
  const std::size_t n = 5000;
  const std::vector<float> g = random_values(n, 7, 1.0f);
  std::vector<float> p1 = random_values(n, 8, 1.0f), m1(n, 0.1f), v1(n, 0.2f);
  std::vector<float> p2 = p1, m2 = m1, v2 = v1, p3 = p1, m3 = m1, v3 = v1;
  adamw_update(o, 3, 0.5f, p1.data(), g.data(), m1.data(), v1.data(), static_cast<std::int64_t>(n));
  // Two shards of uneven size (a ZeRO-1 split).
  adamw_update(o, 3, 0.5f, p2.data(), g.data(), m2.data(), v2.data(), 1234);
  adamw_update(o, 3, 0.5f, p2.data() + 1234, g.data() + 1234, m2.data() + 1234, v2.data() + 1234,
               static_cast<std::int64_t>(n) - 1234);
  ThreadPool pool(3, WaitPolicy::kPassive);
  adamw_update(o, 3, 0.5f, p3.data(), g.data(), m3.data(), v3.data(), static_cast<std::int64_t>(n), &pool);
  EXPECT_EQ(std::memcmp(p1.data(), p2.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(m1.data(), m2.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(v1.data(), v2.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(p1.data(), p3.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(v1.data(), v3.data(), n * sizeof(float)), 0);
}

std::vector<ParamSlot> two_tensors() {
  std::vector<ParamSlot> t(2);
  t[0].name = "a";
  t[0].offset = 0;
  t[0].count = 37;
  t[1].name = "b";
  t[1].offset = 48;
  t[1].count = 50;
  return t;
}

// The bound that spares most steps the overflow check (adamw_update_surely_finite) is never
// wrong: whenever it says "finite", the update computed element by element is finite, over
// ranges whose magnitudes span f32's exponents and over extreme hyper-parameters; on ordinary
// training values it does say "finite", so the check's pass is not run.
TEST(AdamW, TheOverflowBoundNeverClearsAnOverflowingUpdate) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-40, 38.5), unit(0, 1);
  const auto magnitude = [&] { return static_cast<float>((unit(rng) < 0.5 ? -1 : 1) * std::pow(10.0, exponent(rng))); };
  int cleared = 0, overflowing = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const std::size_t n = 1 + rng() % 8;
    std::vector<float> p(n), g(n), m(n), v(n);
    const double scale = std::pow(10.0, exponent(rng) / 2);  // each trial its own order of magnitude
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = unit(rng) < 0.2 ? magnitude() : static_cast<float>(scale * (unit(rng) - 0.5));
      g[i] = unit(rng) < 0.2 ? magnitude() : static_cast<float>(scale * (unit(rng) - 0.5));
      m[i] = unit(rng) < 0.2 ? magnitude() : static_cast<float>(scale * (unit(rng) - 0.5));
      v[i] = std::fabs(unit(rng) < 0.2 ? magnitude() : static_cast<float>(scale * scale * unit(rng)));
    }
    OptimizerOptions o;
    o.lr = std::pow(10.0, -6 + 9 * unit(rng));
    o.weight_decay = unit(rng) < 0.5 ? 0 : std::pow(10.0, -4 + 7 * unit(rng));
    o.beta1 = unit(rng) < 0.2 ? 0 : 1 - std::pow(10.0, -8 * unit(rng));
    o.beta2 = unit(rng) < 0.2 ? 0 : 1 - std::pow(10.0, -15 * unit(rng));
    o.eps = std::pow(10.0, -44 + 44 * unit(rng));
    const std::int64_t step = 1 + static_cast<std::int64_t>(rng() % 1000);
    const float coef = static_cast<float>(unit(rng) < 0.5 ? 1.0 : std::pow(10.0, -30 * unit(rng)));
    double sq = 0;
    for (float x : g) sq += static_cast<double>(x) * x;
    const double norm = std::sqrt(sq);
    const bool sure = adamw_update_surely_finite(o, step, coef, norm, adamw_bounds(p.data(), m.data(), v.data(), static_cast<std::int64_t>(n)));
    const bool exact = adamw_update_stays_finite(o, step, coef, p.data(), g.data(), m.data(), v.data(), static_cast<std::int64_t>(n));
    std::vector<float> p2 = p, m2 = m, v2 = v;
    adamw_update(o, step, coef, p2.data(), g.data(), m2.data(), v2.data(), static_cast<std::int64_t>(n));
    bool finite = true;
    for (std::size_t i = 0; i < n; ++i) finite = finite && std::isfinite(p2[i]) && std::isfinite(m2[i]) && std::isfinite(v2[i]);
    EXPECT_EQ(exact, finite) << "trial " << trial;
    EXPECT_TRUE(!sure || finite) << "trial " << trial << ": the bound cleared an update that overflows";
    cleared += sure;
    overflowing += !finite;
  }
  EXPECT_GT(cleared, 300);      // the bound is not vacuous...
  EXPECT_GT(overflowing, 100);  // ...and the trials do overflow
  // Ordinary training: weights ~0.02, moments from gradients of norm ~1, default AdamW.
  std::vector<float> p = random_values(4096, 1, 0.02f), g = random_values(4096, 2, 0.015f), m(4096, 0.0f), v(4096, 0.0f);
  AdamwBounds b = adamw_bounds(p.data(), m.data(), v.data(), 4096);
  const OptimizerOptions o;
  for (int step = 1; step <= 20; ++step) {
    ASSERT_TRUE(adamw_update_surely_finite(o, step, 1.0f, 1.0, b)) << "step " << step;
    b = adamw_update(o, step, 1.0f, p.data(), g.data(), m.data(), v.data(), 4096);
  }
  // A NaN or a negative second moment in the state (a corrupt checkpoint) clears nothing.
  v[7] = -1.0f;
  EXPECT_FALSE(adamw_update_surely_finite(o, 21, 1.0f, 1.0, adamw_bounds(p.data(), m.data(), v.data(), 4096)));
  v[7] = 0.0f;
  m[9] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(adamw_update_surely_finite(o, 21, 1.0f, 1.0, adamw_bounds(p.data(), m.data(), v.data(), 4096)));
}

TEST(GradClip, NormOfTensorNormsAndTheFactor) {
  std::vector<ParamSlot> t = two_tensors();
  std::vector<float> g(98, 0.0f);
  g[0] = 3;
  g[36] = 4;   // ‖a‖ = 5
  g[48] = 12;  // ‖b‖ = 12
  EXPECT_DOUBLE_EQ(grad_norm(t, g.data()), 13.0);
  EXPECT_DOUBLE_EQ(clip_coefficient(13.0, 1.0), 1.0 / (13.0 + 1e-6));
  EXPECT_DOUBLE_EQ(clip_coefficient(0.5, 1.0), 1.0);  // below max_norm: not scaled
  EXPECT_DOUBLE_EQ(clip_coefficient(1.0, 1.0), 1.0 / (1.0 + 1e-6));  // torch's 1e-6 scales it just below
  EXPECT_DOUBLE_EQ(clip_coefficient(1e6, 0.0), 1.0);   // max_norm 0: no clipping
  g[60] = std::nanf("");
  EXPECT_TRUE(std::isnan(grad_norm(t, g.data())));
  g[60] = INFINITY;
  EXPECT_FALSE(std::isfinite(grad_norm(t, g.data())));
}

TEST(GradClip, NormIsTheSameBitsOnAnyNumberOfThreads) {
  std::vector<ParamSlot> t(3);
  const std::int64_t counts[3] = {200000, 77, 150001};
  std::int64_t at = 0;
  for (int i = 0; i < 3; ++i) {
    t[static_cast<std::size_t>(i)].offset = at;
    t[static_cast<std::size_t>(i)].count = counts[i];
    at += (counts[i] + 15) / 16 * 16;
  }
  const std::vector<float> r = random_values(static_cast<std::size_t>(at), 3, 1e-2f);
  std::vector<float> g(r.size(), 0.0f);  // the padding between tensors stays zero
  for (const ParamSlot& s : t) std::copy_n(r.begin() + s.offset, s.count, g.begin() + s.offset);
  const double one = grad_norm(t, g.data());
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads, WaitPolicy::kPassive);
    const double n = grad_norm(t, g.data(), &pool);
    EXPECT_EQ(std::memcmp(&n, &one, sizeof n), 0) << threads << " threads";
  }
  double sq = 0;
  for (float x : g) sq += static_cast<double>(x) * x;
  EXPECT_NEAR(one, std::sqrt(sq), 1e-12 * one);
}

bool torch_importable(std::string& why) {
  const testing::ProcessResult r = testing::run_command("/usr/bin/python3 -c 'import torch' 2>&1");
  if (r.exit_code == 0) return true;
  why = "/usr/bin/python3 cannot import torch (install Debian's python3-torch, scripts/setup.sh): " + r.out + r.err;
  return false;
}

// Four steps on two tensors, the gradients large enough that some steps are clipped and some not.
TEST(AdamW, MatchesTorchOptimAdamWWithClipGradNorm) {
  std::string why;
  if (!torch_importable(why)) GTEST_SKIP() << why;
  testing::TempDir dir("adamw_torch");
  OptimizerOptions o;
  o.lr = 3e-2;
  o.beta1 = 0.9;
  o.beta2 = 0.95;
  o.eps = 1e-6;
  o.weight_decay = 0.05;
  o.max_grad_norm = 1.0;
  const std::vector<ParamSlot> t = two_tensors();
  const std::size_t total = 98;
  std::vector<float> p(total, 0.0f);
  const std::vector<float> init = random_values(total, 11, 1.0f);
  for (const ParamSlot& s : t) std::copy_n(init.begin() + s.offset, s.count, p.begin() + s.offset);
  Json in = Json::object({{"lr", o.lr}, {"beta1", o.beta1}, {"beta2", o.beta2}, {"eps", o.eps},
                          {"weight_decay", o.weight_decay}, {"max_grad_norm", o.max_grad_norm}});
  auto tensors_of = [&](const std::vector<float>& buf) {
    Json j = Json::array();
    for (const ParamSlot& s : t) j.push_back(std::vector<float>(buf.begin() + s.offset, buf.begin() + s.offset + s.count));
    return j;
  };
  in["params"] = tensors_of(p);
  const float scales[4] = {0.5f, 0.02f, 0.3f, 0.01f};  // norms ≈ 5, 0.2, 3, 0.1
  std::vector<std::vector<float>> grads;
  in["grads"] = Json::array();
  for (int s = 0; s < 4; ++s) {
    std::vector<float> g(total, 0.0f);
    const std::vector<float> r = random_values(total, 20 + static_cast<std::uint32_t>(s), scales[s]);
    for (const ParamSlot& sl : t) std::copy_n(r.begin() + sl.offset, sl.count, g.begin() + sl.offset);
    in["grads"].push_back(tensors_of(g));
    grads.push_back(g);
  }
  std::ofstream(dir / "in.json") << in.dump();
  const testing::ProcessResult r = testing::run_command(
      "/usr/bin/python3 " + testing::shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/train/tools/adamw_torch.py") +
      " " + testing::shell_quote(dir / "in.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json out = parse_json(r.out, "adamw_torch.py");
  std::vector<float> m(total, 0.0f), v(total, 0.0f);
  int clipped = 0;
  for (int s = 0; s < 4; ++s) {
    const double norm = grad_norm(t, grads[static_cast<std::size_t>(s)].data());
    const double coef = clip_coefficient(norm, o.max_grad_norm);
    clipped += coef < 1.0;
    adamw_update(o, s + 1, static_cast<float>(coef), p.data(), grads[static_cast<std::size_t>(s)].data(), m.data(),
                 v.data(), static_cast<std::int64_t>(total));
    const Json& want = out["steps"][static_cast<std::size_t>(s)];
    EXPECT_NEAR(norm, want["norm"].get<double>(), 1e-6 * norm) << "step " << s;
    // f32 rounding apart (torch 1.13 forms m as β1·m + (1−β1)·g, 2.x as lerp; its clip factor is
    // f32, ours double rounded to f32), the same numbers: errors relative to each buffer's scale.
    double dp = 0, dm = 0, dv = 0, sm = 0, sv = 0;
    for (std::size_t k = 0; k < t.size(); ++k) {
      for (std::int64_t i = 0; i < t[k].count; ++i) {
        const std::size_t at = static_cast<std::size_t>(t[k].offset + i);
        const double wp = want["params"][k][static_cast<std::size_t>(i)].get<double>();
        const double wm = want["exp_avg"][k][static_cast<std::size_t>(i)].get<double>();
        const double wv = want["exp_avg_sq"][k][static_cast<std::size_t>(i)].get<double>();
        dp = std::max(dp, std::abs(p[at] - wp));
        dm = std::max(dm, std::abs(m[at] - wm));
        dv = std::max(dv, std::abs(v[at] - wv));
        sm = std::max(sm, std::abs(wm));
        sv = std::max(sv, std::abs(wv));
      }
    }
    EXPECT_LT(dp, 1e-6) << "step " << s;
    EXPECT_LT(dm, 1e-6 * sm) << "step " << s;
    EXPECT_LT(dv, 1e-6 * sv) << "step " << s;
  }
  EXPECT_EQ(clipped, 2);  // the test covered both cases
}

}  // namespace
}  // namespace plexus
