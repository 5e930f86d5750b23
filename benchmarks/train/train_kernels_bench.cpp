// Training kernels on the 135M SmolLM shapes (hidden 576, intermediate 1536, 9 heads, 3 kv
// heads, vocab 32000, 30 layers): GFLOP/s of the three GEMM forms (y = x·wᵀ, dx = dy·w,
// dw += dyᵀ·x) per weight shape, and of a whole layer's forward + backward and the head through
// CpuTrainOps (6 FLOP per parameter per token), each against the fp32 FMA peak measured in the
// same run with the same threads. Medians of --repeats.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "ceilings.h"
#include "core/args.h"
#include "core/error.h"
#include "core/timer.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/train_gemm.h"
#include "train/cpu_train_ops.h"

using namespace plexus;

namespace {

constexpr std::int64_t kHidden = 576, kInter = 1536, kHeads = 9, kKvHeads = 3, kHeadDim = 64, kVocab = 32000;
constexpr std::int64_t kKv = kKvHeads * kHeadDim;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// One thread's FMA peak in FLOP per second of its CPU time (the probe of bench::fma_peak).
double cpu_time_fma_peak() {
  const bool avx512 = std::string_view(bench::fma_peak_isa()) == "avx512";
  const std::int64_t iterations = 20'000'000;
  const double t0 = thread_cpu_seconds();
  volatile float sink = avx512 ? bench::fma_loop_avx512(iterations) : bench::fma_loop_avx2(iterations);
  (void)sink;
  const double s = thread_cpu_seconds() - t0;
  return (avx512 ? bench::kFlopPerIterationAvx512 : bench::kFlopPerIterationAvx2) * static_cast<double>(iterations) / s;
}

// The host is shared and busy. Each repeat measures the FMA peak right before the kernel, and
// the ratio reported is the median of the per-repeat ratios (GFLOP/s and peak: their medians).
// With one thread (cpu_time) both are timed in the thread's CPU time, which other processes on
// the host do not inflate.
struct Measured {
  double seconds, flop_per_s, peak, ratio;
};

template <class F>
Measured measure(ThreadPool& pool, int repeats, double flop, bool cpu_time, F&& f) {
  f();
  std::vector<double> s, rate, peak, ratio;
  for (int i = 0; i < repeats; ++i) {
    const double p = cpu_time ? cpu_time_fma_peak() : bench::fma_peak(pool, 1);
    Timer t;
    const double c0 = thread_cpu_seconds();
    f();
    const double sec = cpu_time ? thread_cpu_seconds() - c0 : t.seconds();
    s.push_back(sec), rate.push_back(flop / sec), peak.push_back(p), ratio.push_back(flop / sec / p);
  }
  return {median(s), median(rate), median(peak), median(ratio)};
}

std::vector<float> filled(std::int64_t n, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uint64_t s = 88172645463325252ull;
  for (float& x : v) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x = scale * (static_cast<float>(s >> 40) / static_cast<float>(1 << 24) - 0.5f);
  }
  return v;
}

struct Shape {
  const char* name;
  std::int64_t in, out;
};
constexpr Shape kShapes[] = {{"q/o 576x576", kHidden, kHidden},
                             {"k/v 576->192", kHidden, kKv},
                             {"gate/up 576->1536", kHidden, kInter},
                             {"down 1536->576", kInter, kHidden},
                             {"lm_head 576->32000", kHidden, kVocab}};

// Parameters of the model the step figures count (tied embedding once).
double parameters(std::int64_t layers) {
  const double layer = 2.0 * kHidden * kHidden + 2.0 * kHidden * kKv + 3.0 * kHidden * kInter + 2.0 * kHidden;
  return static_cast<double>(kVocab) * kHidden + static_cast<double>(layers) * layer + kHidden;
}

// One decoder layer's buffers and weights; forward then backward as the training model runs them.
struct Layer {
  std::int64_t n, b, T;
  AttentionShape s;
  std::vector<float> wq, wk, wv, wo, wg, wu, wd, n1, n2;
  std::vector<float> gq, gk, gv, go, gg, gu, gd, gn1, gn2;
  std::vector<float> x, xn, q, k, v, att, lse, x1, xn2, gate, up, act, x2, r1, r2, cos, sin;
  std::vector<float> dx2, dact, dgate, dup, dxn2, dx1, datt, dq, dk, dv, dxn, dx;
  // Seconds per op name (thread CPU time: meaningful with one thread), while `profile` is set.
  bool profile = false;
  std::vector<std::pair<std::string, double>> op_seconds;
  template <class F>
  void timed(const char* name, F&& f) {
    if (!profile) return f();
    const double t0 = thread_cpu_seconds();
    f();
    const double s = thread_cpu_seconds() - t0;
    for (auto& [n, v] : op_seconds)
      if (n == name) {
        v += s;
        return;
      }
    op_seconds.emplace_back(name, s);
  }
  Layer(std::int64_t tokens, std::int64_t seq) : n(tokens), b(tokens / seq), T(seq) {
    s.n_heads = kHeads, s.n_kv_heads = kKvHeads, s.head_dim = kHeadDim, s.scale = 0.125f;
    wq = filled(kHidden * kHidden, 0.1f), wk = filled(kKv * kHidden, 0.1f), wv = wk, wo = wq;
    wg = filled(kInter * kHidden, 0.1f), wu = wg, wd = filled(kHidden * kInter, 0.1f);
    n1 = n2 = std::vector<float>(kHidden, 1.0f);
    gq = gq.empty() ? std::vector<float>(wq.size()) : gq, gk = std::vector<float>(wk.size()), gv = gk, go = gq;
    gg = std::vector<float>(wg.size()), gu = gg, gd = std::vector<float>(wd.size()), gn1 = gn2 = n1;
    auto buf = [&](std::int64_t cols) { return std::vector<float>(static_cast<std::size_t>(n * cols)); };
    x = filled(n * kHidden, 2.0f), xn = buf(kHidden), q = buf(kHidden), k = buf(kKv), v = buf(kKv), att = buf(kHidden);
    lse = buf(kHeads), x1 = buf(kHidden), xn2 = buf(kHidden), gate = buf(kInter), up = buf(kInter), act = buf(kInter);
    x2 = buf(kHidden), r1 = buf(1), r2 = buf(1);
    cos = std::vector<float>(static_cast<std::size_t>(T * kHeadDim / 2), 1.0f), sin = cos;
    dx2 = filled(n * kHidden, 0.01f), dact = buf(kInter), dgate = buf(kInter), dup = buf(kInter), dxn2 = buf(kHidden);
    dx1 = buf(kHidden), datt = buf(kHidden), dq = buf(kHidden), dk = buf(kKv), dv = buf(kKv), dxn = buf(kHidden);
    dx = buf(kHidden);
  }
  void forward(TrainOps& o) {
    timed("rmsnorm", [&] { o.rmsnorm(x.data(), n1.data(), n, kHidden, 1e-5f, xn.data(), r1.data()); });
    timed("linear", [&] { o.linear(xn.data(), wq.data(), nullptr, n, kHidden, kHidden, q.data()); });
    timed("linear", [&] { o.linear(xn.data(), wk.data(), nullptr, n, kHidden, kKv, k.data()); });
    timed("linear", [&] { o.linear(xn.data(), wv.data(), nullptr, n, kHidden, kKv, v.data()); });
    timed("rope", [&] { o.rope(q.data(), b, T, kHeads, kHeadDim, cos.data(), sin.data(), false); });
    timed("rope", [&] { o.rope(k.data(), b, T, kKvHeads, kHeadDim, cos.data(), sin.data(), false); });
    timed("attention", [&] { o.attention(q.data(), k.data(), v.data(), b, T, s, att.data(), lse.data()); });
    timed("linear", [&] { o.linear(att.data(), wo.data(), nullptr, n, kHidden, kHidden, x1.data()); });
    timed("add", [&] { o.add(x1.data(), x.data(), n * kHidden); });
    timed("rmsnorm", [&] { o.rmsnorm(x1.data(), n2.data(), n, kHidden, 1e-5f, xn2.data(), r2.data()); });
    timed("linear", [&] { o.linear(xn2.data(), wg.data(), nullptr, n, kHidden, kInter, gate.data()); });
    timed("linear", [&] { o.linear(xn2.data(), wu.data(), nullptr, n, kHidden, kInter, up.data()); });
    timed("silu_mul", [&] { o.silu_mul(gate.data(), up.data(), act.data(), n * kInter); });
    timed("linear", [&] { o.linear(act.data(), wd.data(), nullptr, n, kInter, kHidden, x2.data()); });
    timed("add", [&] { o.add(x2.data(), x1.data(), n * kHidden); });
  }
  void backward(TrainOps& o) {
    timed("linear_backward_weight",
          [&] { o.linear_backward_weight(dx2.data(), act.data(), n, kInter, kHidden, gd.data(), nullptr); });
    timed("linear_backward_input",
          [&] { o.linear_backward_input(dx2.data(), wd.data(), n, kInter, kHidden, dact.data(), false); });
    timed("silu_mul_backward",
          [&] { o.silu_mul_backward(dact.data(), gate.data(), up.data(), dgate.data(), dup.data(), n * kInter); });
    timed("linear_backward_weight",
          [&] { o.linear_backward_weight(dgate.data(), xn2.data(), n, kHidden, kInter, gg.data(), nullptr); });
    timed("linear_backward_weight",
          [&] { o.linear_backward_weight(dup.data(), xn2.data(), n, kHidden, kInter, gu.data(), nullptr); });
    timed("linear_backward_input",
          [&] { o.linear_backward_input(dgate.data(), wg.data(), n, kHidden, kInter, dxn2.data(), false); });
    timed("linear_backward_input",
          [&] { o.linear_backward_input(dup.data(), wu.data(), n, kHidden, kInter, dxn2.data(), true); });
    dx1 = dx2;
    timed("rmsnorm_backward", [&] {
      o.rmsnorm_backward(dxn2.data(), x1.data(), n2.data(), r2.data(), n, kHidden, dx1.data(), gn2.data());
    });
    timed("linear_backward_weight",
          [&] { o.linear_backward_weight(dx1.data(), att.data(), n, kHidden, kHidden, go.data(), nullptr); });
    timed("linear_backward_input",
          [&] { o.linear_backward_input(dx1.data(), wo.data(), n, kHidden, kHidden, datt.data(), false); });
    timed("attention_backward", [&] {
      o.attention_backward(datt.data(), q.data(), k.data(), v.data(), att.data(), lse.data(), b, T, s, dq.data(),
                           dk.data(), dv.data());
    });
    timed("rope", [&] { o.rope(dq.data(), b, T, kHeads, kHeadDim, cos.data(), sin.data(), true); });
    timed("rope", [&] { o.rope(dk.data(), b, T, kKvHeads, kHeadDim, cos.data(), sin.data(), true); });
    timed("linear_backward_weight",
          [&] { o.linear_backward_weight(dq.data(), xn.data(), n, kHidden, kHidden, gq.data(), nullptr); });
    timed("linear_backward_weight",
          [&] { o.linear_backward_weight(dk.data(), xn.data(), n, kHidden, kKv, gk.data(), nullptr); });
    timed("linear_backward_weight",
          [&] { o.linear_backward_weight(dv.data(), xn.data(), n, kHidden, kKv, gv.data(), nullptr); });
    timed("linear_backward_input",
          [&] { o.linear_backward_input(dq.data(), wq.data(), n, kHidden, kHidden, dxn.data(), false); });
    timed("linear_backward_input",
          [&] { o.linear_backward_input(dk.data(), wk.data(), n, kHidden, kKv, dxn.data(), true); });
    timed("linear_backward_input",
          [&] { o.linear_backward_input(dv.data(), wv.data(), n, kHidden, kKv, dxn.data(), true); });
    dx = dx1;
    timed("rmsnorm_backward",
          [&] { o.rmsnorm_backward(dxn.data(), x.data(), n1.data(), r1.data(), n, kHidden, dx.data(), gn1.data()); });
  }
};

// The head: final norm, tied lm_head, cross-entropy, both lm_head backward products, embedding.
struct Head {
  std::int64_t n;
  std::vector<float> table, dtable, x, xn, r, norm, dnorm, logits, dxn, dx;
  std::vector<std::int32_t> ids;
  explicit Head(std::int64_t tokens) : n(tokens) {
    table = filled(kVocab * kHidden, 0.1f), dtable = std::vector<float>(table.size());
    x = filled(n * kHidden, 2.0f), xn = x, r = std::vector<float>(static_cast<std::size_t>(n));
    norm = dnorm = std::vector<float>(kHidden, 1.0f), logits = std::vector<float>(static_cast<std::size_t>(n * kVocab));
    dxn = xn, dx = xn;
    for (std::int64_t i = 0; i < n; ++i) ids.push_back(static_cast<std::int32_t>((i * 7919) % kVocab));
  }
  void run(TrainOps& o) {
    o.embed(table.data(), ids, kHidden, x.data());
    o.rmsnorm(x.data(), norm.data(), n, kHidden, 1e-5f, xn.data(), r.data());
    o.linear(xn.data(), table.data(), nullptr, n, kHidden, kVocab, logits.data());
    o.cross_entropy(logits.data(), ids, kVocab, 1.0f / static_cast<float>(n));
    o.linear_backward_weight(logits.data(), xn.data(), n, kHidden, kVocab, dtable.data(), nullptr);
    o.linear_backward_input(logits.data(), table.data(), n, kHidden, kVocab, dxn.data(), false);
    o.rmsnorm_backward(dxn.data(), x.data(), norm.data(), r.data(), n, kHidden, dx.data(), dnorm.data());
    o.embed_backward(dx.data(), ids, kHidden, dtable.data());
  }
};

}  // namespace

int main(int argc, char** argv) {
  Args args("train_kernels_bench", "Training kernels (135M SmolLM shapes) against this machine's fp32 FMA peak.");
  args.option("--threads", "N", "threads (0: all)", "0")
      .option("--wait", "POLICY", "how idle threads wait: spin, passive or auto", "auto")
      .option("--tokens", "N", "tokens per product (the GEMM's n)", "256")
      .option("--seq-len", "T", "sequence length of the layer figures (tokens a multiple of it)", "256")
      .option("--layers", "N", "layers the step figure counts", "30")
      .option("--repeats", "N", "repeats (median reported)", "5");
  try {
    if (!args.parse(argc - 1, argv + 1)) return 0;
    const std::int64_t n = args.get_int("--tokens"), T = args.get_int("--seq-len"), layers = args.get_int("--layers");
    const int repeats = static_cast<int>(args.get_int("--repeats"));
    if (n < 1 || T < 1 || n % T != 0 || layers < 1 || repeats < 1)
      throw InputError("--tokens, --seq-len, --layers and --repeats must be >= 1, --tokens a multiple of --seq-len");
    ThreadPool pool(static_cast<int>(args.get_int("--threads")), wait_policy_flag(args.get("--wait")));
    CpuTrainOps ops(pool);
    const IsaKernels& k = isa_kernels(ops.isa());
    const bool cpu_time = pool.size() == 1;
    std::printf(
        "train kernels: %s, %d threads, %lld tokens; ratios to the fp32 FMA peak (%s probe) measured "
        "before each repeat, in %s\n",
        std::string(isa_name(ops.isa())).c_str(), pool.size(), static_cast<long long>(n), bench::fma_peak_isa(),
        cpu_time ? "the thread's CPU time" : "wall-clock time");
    auto line = [&](const char* what, const char* shape, double flop, auto&& f) {
      const Measured m = measure(pool, repeats, flop, cpu_time, f);
      std::printf("  %-24s %-20s %7.1f GFLOP/s  %5.1f%% of peak (%.0f GFLOP/s)\n", what, shape, m.flop_per_s / 1e9,
                  100 * m.ratio, m.peak / 1e9);
      return m;
    };
    for (const Shape& sh : kShapes) {
      const auto x = filled(n * sh.in, 1.0f), w = filled(sh.out * sh.in, 0.1f), dy = filled(n * sh.out, 0.1f);
      std::vector<float> y(static_cast<std::size_t>(n * sh.out)), dx(static_cast<std::size_t>(n * sh.in)),
          dw(static_cast<std::size_t>(sh.out * sh.in));
      const double flop = 2.0 * static_cast<double>(n) * static_cast<double>(sh.in) * static_cast<double>(sh.out);
      // CpuTrainOps::linear takes matmul below 512 tokens and train_gemm from there.
      GemmArgs g;
      g.m = n, g.n = sh.out, g.k = sh.in, g.a = x.data(), g.a_rs = sh.in, g.a_cs = 1;
      g.b = w.data(), g.b_rs = 1, g.b_cs = sh.in, g.c = y.data(), g.ldc = sh.out;
      line("y = x.wT (train_gemm)", sh.name, flop, [&] { train_gemm(ops.isa(), pool, g); });
      const MatmulPart part{WeightMatrix{w.data(), DType::kF32, sh.out, sh.in}, y.data(), sh.out};
      line("y = x.wT (matmul)", sh.name, flop, [&] { matmul(k, pool, {&part, 1}, x.data(), n, sh.in); });
      line("dx = dy.w", sh.name, flop,
           [&] { ops.linear_backward_input(dy.data(), w.data(), n, sh.in, sh.out, dx.data(), false); });
      line("dw += dyT.x", sh.name, flop,
           [&] { ops.linear_backward_weight(dy.data(), x.data(), n, sh.in, sh.out, dw.data(), nullptr); });
    }
    Layer layer(n, T);
    const double layer_params = 2.0 * kHidden * kHidden + 2.0 * kHidden * kKv + 3.0 * kHidden * kInter;
    const Measured tf = line("layer forward", "(2 FLOP/param/token)", 2 * layer_params * static_cast<double>(n),
                             [&] { layer.forward(ops); });
    const Measured tb = line("layer backward", "(4 FLOP/param/token)", 4 * layer_params * static_cast<double>(n),
                             [&] { layer.backward(ops); });
    if (cpu_time) {  // where one layer's forward + backward spends its time, by op
      layer.profile = true;
      for (int i = 0; i < repeats; ++i) {
        layer.forward(ops);
        layer.backward(ops);
      }
      double total = 0;
      for (const auto& [name, sec] : layer.op_seconds) total += sec;
      std::printf("  layer time by op:");
      for (const auto& [name, sec] : layer.op_seconds) std::printf(" %s %.1f%%", name.c_str(), 100 * sec / total);
      std::printf("\n");
      layer.profile = false;
    }
    Head head(n);
    const Measured th = line("head fwd+bwd", "(6 FLOP/param/token)", 6.0 * kVocab * kHidden * static_cast<double>(n),
                             [&] { head.run(ops); });
    // The step from the parts' medians; its ratio from the parts' ratios (each part's time at the
    // peak of its own repeats).
    const double step = static_cast<double>(layers) * (tf.seconds + tb.seconds) + th.seconds;
    const double at_peak = static_cast<double>(layers) * (tf.seconds * tf.ratio + tb.seconds * tb.ratio) +
                           th.seconds * th.ratio;  // seconds the same FLOP take at the peak
    const double flop = 6.0 * parameters(layers) * static_cast<double>(n);
    std::printf(
        "  step of %lld layers + head: %.3f s for %lld tokens, %.0f tokens/s, %.1f GFLOP/s = %.1f%% of peak "
        "(6 FLOP/param/token, %.1fM params)\n",
        static_cast<long long>(layers), step, static_cast<long long>(n), static_cast<double>(n) / step,
        flop / step / 1e9, 100 * at_peak / step, parameters(layers) / 1e6);
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "train_kernels_bench: %s\n", e.what());
    return 2;
  }
}
