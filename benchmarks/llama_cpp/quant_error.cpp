// plexus's quantisers beside llama.cpp's (ggml_quantize_chunk, no importance matrix) on the same
// rows: bytes that differ and each side's relative RMS error after dequantising (plexus's oracle).
// By hand, never by the tests; the numbers back tests/kernels/quantize_test.cpp's bounds.
// Build (peer from setup_peer.sh, plexus from `cmake --build build --target plexus_kernels`):
//   P=benchmarks/llama_cpp/peer; g++ -O2 -std=c++20 -I$P/llama.cpp/ggml/include -Isrc
//     benchmarks/llama_cpp/quant_error.cpp build/src/kernels/libplexus_kernels.a build/src/core/libplexus_core.a
//     $P/build/ggml/src/libggml-base.a -fopenmp -lpthread -lm -o /tmp/quant_error
// usage: /tmp/quant_error [outliers]   64 rows of 4096 N(0, 0.05); "outliers": every 97th ×8, first 64 zero
#include <cstdio>
#include <cstring>
#include <cmath>
#include <random>
#include <vector>
#include "ggml.h"
#include "kernels/quantize.h"
#include "kernels/ref/dequantize.h"
using namespace plexus;
namespace {
struct T {
  DType p;
  ggml_type g;
  const char* name;
};
}  // namespace

int main(int argc, char**) {
  const T ts[] = {{DType::kQ8_0, GGML_TYPE_Q8_0, "Q8_0"}, {DType::kQ4_0, GGML_TYPE_Q4_0, "Q4_0"}, {DType::kQ4_1, GGML_TYPE_Q4_1, "Q4_1"},
                  {DType::kQ5_0, GGML_TYPE_Q5_0, "Q5_0"}, {DType::kQ5_1, GGML_TYPE_Q5_1, "Q5_1"}, {DType::kIQ4_NL, GGML_TYPE_IQ4_NL, "IQ4_NL"},
                  {DType::kIQ4_XS, GGML_TYPE_IQ4_XS, "IQ4_XS"}, {DType::kQ2_K, GGML_TYPE_Q2_K, "Q2_K"}, {DType::kQ3_K, GGML_TYPE_Q3_K, "Q3_K"},
                  {DType::kQ4_K, GGML_TYPE_Q4_K, "Q4_K"}, {DType::kQ5_K, GGML_TYPE_Q5_K, "Q5_K"}, {DType::kQ6_K, GGML_TYPE_Q6_K, "Q6_K"},
                  {DType::kMXFP4, GGML_TYPE_MXFP4, "MXFP4"}};
  const int rows = 64, n = 4096;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> x(rows * n);
  for (auto& v : x) v = nd(rng);
  if (argc > 1) { for (int i = 0; i < rows * n; i += 97) x[i] *= 8; for (int i = 0; i < 64; ++i) x[i] = 0; }
  ggml_quantize_init(GGML_TYPE_IQ4_NL);
  for (const T& t : ts) {
    const size_t rb = dtype_row_bytes(t.p, n);
    std::vector<uint8_t> a(rb * rows), b(rb * rows);
    ggml_quantize_chunk(t.g, x.data(), a.data(), 0, rows, n, nullptr);
    for (int r = 0; r < rows; ++r) quantize_row(t.p, x.data() + r * n, b.data() + r * rb, n);
    size_t diff = 0; for (size_t i = 0; i < a.size(); ++i) diff += a[i] != b[i];
    double ea = 0, eb = 0, s = 0;
    std::vector<float> ya(n), yb(n);
    for (int r = 0; r < rows; ++r) {
      dequantize_row(t.p, a.data() + r * rb, ya.data(), n);
      dequantize_row(t.p, b.data() + r * rb, yb.data(), n);
      for (int i = 0; i < n; ++i) { double v = x[r*n+i]; ea += (ya[i]-v)*(ya[i]-v); eb += (yb[i]-v)*(yb[i]-v); s += v*v; }
    }
    printf("%-7s bytes differing %8zu / %8zu   rel rms: llama %.5f  plexus %.5f\n", t.name, diff, a.size(), std::sqrt(ea/s), std::sqrt(eb/s));
  }
}
