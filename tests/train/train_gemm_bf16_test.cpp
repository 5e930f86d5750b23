// train_gemm's bf16 products (GemmArgs::bf16) against their oracle, kernels/ref/gemm_bf16_ref:
// bitwise, on every ISA this CPU runs (vdpbf16ps where it has AVX512_BF16, the plain emulation
// elsewhere) and with 1 and 3 threads, for the three stride forms of the linear layers, odd sizes,
// k across the 256-blocks and 1024-chunks, accumulation, and values small enough to flush.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/train_gemm.h"
#include "kernels/ref/gemm_bf16_ref.h"

namespace plexus {
namespace {

struct Shape {
  std::int64_t m, n, k;
};

// The three forms CpuTrainOps uses: y = x·wᵀ, dx = dy·w, dw += dyᵀ·x.
enum class Form { kForward, kInput, kWeight };

std::vector<float> values(std::int64_t n, std::mt19937& rng, bool tiny) {
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = tiny ? std::ldexp(u(rng), -64 - static_cast<int>(rng() % 4)) : u(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(TrainGemmBf16, BitwiseTheOracleOnEveryIsaAndThreadCount) {
  std::vector<Isa> isas;
  for (Isa i : {Isa::kGeneric, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16})
    if (isa_supported(i)) isas.push_back(i);
  std::mt19937 rng(5);
  int checked = 0;
  for (const Shape s : {Shape{1, 1, 1}, Shape{3, 17, 65}, Shape{13, 33, 257}, Shape{25, 70, 1100}, Shape{50, 3, 2},
                        Shape{7, 40, 2049}, Shape{1600, 9, 5}})
    for (Form form : {Form::kForward, Form::kInput, Form::kWeight})
      for (bool accumulate : {false, true})
        for (bool tiny : {false, true}) {
          // A (m, k), B (k, n) as the form lays them out in memory.
          const auto a = values(s.m * s.k, rng, tiny), b = values(s.k * s.n, rng, tiny);
          GemmArgs g;
          g.m = s.m, g.n = s.n, g.k = s.k;
          g.a = a.data(), g.b = b.data();
          if (form == Form::kWeight) {
            g.a_rs = 1, g.a_cs = s.m;  // A = dyᵀ
          } else {
            g.a_rs = s.k, g.a_cs = 1;
          }
          if (form == Form::kForward) {
            g.b_rs = 1, g.b_cs = s.k;  // B = wᵀ
          } else {
            g.b_rs = s.n, g.b_cs = 1;
          }
          g.ldc = s.n + 3;
          g.accumulate = accumulate;
          g.bf16 = true;
          const std::vector<float> start = values(s.m * g.ldc, rng, tiny);
          std::vector<float> want = start;
          gemm_bf16_ref(g.m, g.n, g.k, g.a, g.a_rs, g.a_cs, g.b, g.b_rs, g.b_cs, want.data(), g.ldc, accumulate);
          const std::string tag = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                                  " form " + std::to_string(static_cast<int>(form)) + (accumulate ? " +=" : "") +
                                  (tiny ? " tiny" : "");
          for (Isa isa : isas)
            for (int threads : {1, 3}) {
              ThreadPool pool(threads);
              std::vector<float> got = start;
              g.c = got.data();
              train_gemm(isa, pool, g);
              EXPECT_TRUE(same_bits(got, want)) << isa_name(isa) << " " << threads << " threads " << tag;
              ++checked;
            }
          if (!tiny && s.k > 1) {  // not f32: the rounding shows
            GemmArgs f = g;
            f.bf16 = false;
            std::vector<float> f32 = start;
            f.c = f32.data();
            train_gemm_serial(Isa::kGeneric, f);
            EXPECT_FALSE(same_bits(f32, want)) << tag;
          }
        }
  EXPECT_GT(checked, 84);
}

}  // namespace
}  // namespace plexus
