// Kernel figures for block-format weights (every GGUF block format plexus reads): the kernels'
// CPU time per block on one thread (weights in cache; robust on a busy host); decode matmuls (1
// and 4 tokens) in GB/s of weights read against the memory read bandwidth measured in the same
// run, on --mib of weights and on a 1B model's shapes; prefill matmuls in GOP/s by the int8
// kernels against dequantised f32 row blocks (the interim path); with the threads and the kernel
// table the engine would use.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "ceilings.h"
#include "core/args.h"
#include "core/error.h"
#include "core/timer.h"
#include "kernels/block_formats.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_x.h"

using namespace plexus;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Random block bytes with small f16 scales (MXFP4: 2^-10; any bytes are valid blocks).
std::vector<std::uint8_t> random_blocks(DType t, std::int64_t rows, std::int64_t cols) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(rows * dtype_row_bytes(t, cols)));
  std::uint64_t s = 88172645463325252ull;
  for (auto& b : bytes) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    b = static_cast<std::uint8_t>(s >> 24);
  }
  const std::uint16_t d = f32_to_f16(0.001f);
  for (std::size_t i = 0; i < bytes.size(); i += static_cast<std::size_t>(dtype_block_bytes(t))) {
    std::uint8_t* b = bytes.data() + i;
    switch (t) {
      case DType::kQ8_0: reinterpret_cast<BlockQ8_0*>(b)->d = d; break;
      case DType::kQ4_0: reinterpret_cast<BlockQ4_0*>(b)->d = d; break;
      case DType::kQ4_K: reinterpret_cast<BlockQ4_K*>(b)->d = reinterpret_cast<BlockQ4_K*>(b)->dmin = d; break;
      case DType::kQ6_K: reinterpret_cast<BlockQ6_K*>(b)->d = d; break;
      case DType::kQ4_1: reinterpret_cast<BlockQ4_1*>(b)->d = reinterpret_cast<BlockQ4_1*>(b)->m = d; break;
      case DType::kQ5_0: reinterpret_cast<BlockQ5_0*>(b)->d = d; break;
      case DType::kQ5_1: reinterpret_cast<BlockQ5_1*>(b)->d = reinterpret_cast<BlockQ5_1*>(b)->m = d; break;
      case DType::kIQ4_NL: reinterpret_cast<BlockIQ4_NL*>(b)->d = d; break;
      case DType::kQ2_K: reinterpret_cast<BlockQ2_K*>(b)->d = reinterpret_cast<BlockQ2_K*>(b)->dmin = d; break;
      case DType::kQ3_K: reinterpret_cast<BlockQ3_K*>(b)->d = d; break;
      case DType::kQ5_K: reinterpret_cast<BlockQ5_K*>(b)->d = reinterpret_cast<BlockQ5_K*>(b)->dmin = d; break;
      case DType::kIQ4_XS: reinterpret_cast<BlockIQ4_XS*>(b)->d = d; break;
      case DType::kMXFP4: reinterpret_cast<BlockMXFP4*>(b)->e = 117; break;
      case DType::kF32:
      case DType::kBF16:
      case DType::kF16: break;
    }
  }
  return bytes;
}

// Seconds of one matmul (median of repeats, after one untimed run).
template <class F>
double time_it(int repeats, F&& f) {
  f();
  std::vector<double> s;
  for (int i = 0; i < repeats; ++i) {
    Timer t;
    f();
    s.push_back(t.seconds());
  }
  return median(s);
}

// The interim prefill path: row blocks dequantised to f32, then the f32 tiles.
void matmul_dequantised(const IsaKernels& k, ThreadPool& pool, const MatmulPart& p, const float* x, std::int64_t n) {
  const std::int64_t cols = p.w.cols, step = 24;
  pool.parallel_for(p.w.rows, 16, [&](std::int64_t b, std::int64_t e) {
    thread_local std::vector<float> rows;
    rows.resize(static_cast<std::size_t>(step * cols));
    for (std::int64_t r = b; r < e; r += step) {
      const std::int64_t nr = std::min(step, e - r);
      k.to_f32(p.w.dtype, p.w.row(r), rows.data(), nr * cols);
      k.dot_tile(DType::kF32, rows.data(), cols, x, cols, p.y + r, p.ldy, n, nr, cols);
    }
  });
}

// CPU seconds of this thread (a loaded host's other work does not count).
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Compute cost of the table's dot_tile_q on one thread, weights in L2 (256 KiB): CPU ns per 32
// weights per token (best of 5), for 1, 4 and 64 tokens.
void print_compute_cost(const IsaKernels& k, DType t, std::int64_t cols) {
  const std::int64_t rows = (256 << 10) / dtype_row_bytes(t, cols);
  const std::vector<std::uint8_t> w = random_blocks(t, rows, cols);
  std::printf("  %-5s compute (1 thread, weights in L2): CPU ns per 32 weights × token:", std::string(dtype_name(t)).c_str());
  for (std::int64_t nt : {1, 4, 64}) {
    std::vector<float> x(static_cast<std::size_t>(nt * cols));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) * 0.1f - 0.8f;
    const std::int64_t ldq = qx_row_bytes(t, cols);
    std::vector<std::uint8_t> xq(static_cast<std::size_t>(nt * ldq));
    quantize_x(t, x.data(), cols, nt, cols, xq.data());
    std::vector<float> y(static_cast<std::size_t>(nt * rows));
    const int reps = nt == 64 ? 10 : 200;
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      const double c0 = thread_cpu_seconds();
      for (int i = 0; i < reps; ++i) {
        k.dot_tile_q(t, w.data(), dtype_row_bytes(t, cols), xq.data(), ldq, y.data(), rows, nt, rows, cols);
      }
      best = std::min(best, (thread_cpu_seconds() - c0) / reps);
    }
    std::printf(" %lld tokens %.3f;", static_cast<long long>(nt), best / (static_cast<double>(rows * cols) / 32.0 * static_cast<double>(nt)) * 1e9);
  }
  std::printf("\n");
}

// One-token decode on a 1B model's matrix shapes (rows × cols: the MLP's 8192 × 2048 up/gate and
// 2048 × 8192 down): GB/s over the bytes as stored, against the read bandwidth. Each matrix
// (under the last-level cache) is copied until the copies fill `mib`, and a timed pass multiplies
// every copy once, as a model's layers stream from memory; the median pass is reported.
void print_decode_shapes(const IsaKernels& k, ThreadPool& pool, DType t, std::int64_t mib, int repeats, double read_bw) {
  std::printf("  %-6s decode 1 token:", std::string(dtype_name(t)).c_str());
  for (const std::pair<std::int64_t, std::int64_t>& shape : {std::pair<std::int64_t, std::int64_t>{8192, 2048}, {2048, 8192}}) {
    const std::int64_t rows = shape.first, cols = shape.second;  // (named: lambdas cannot capture bindings in clang 14)
    const std::vector<std::uint8_t> w = random_blocks(t, rows, cols);
    const std::int64_t bytes = dtype_row_bytes(t, cols) * rows;
    const std::int64_t copies = std::max<std::int64_t>(1, ((mib << 20) + bytes - 1) / bytes);
    std::vector<std::uint8_t> all(static_cast<std::size_t>(copies * bytes));
    for (std::int64_t c = 0; c < copies; ++c) std::copy(w.begin(), w.end(), all.begin() + c * bytes);
    std::vector<float> x(static_cast<std::size_t>(cols)), y(static_cast<std::size_t>(rows));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
    const double s = time_it(repeats, [&] {
      for (std::int64_t c = 0; c < copies; ++c) {
        const MatmulPart part{WeightMatrix{all.data() + c * bytes, t, rows, cols}, y.data(), rows};
        matmul(k, pool, {&part, 1}, x.data(), 1, cols);
      }
    }) / static_cast<double>(copies);
    const double gbs = static_cast<double>(bytes) / s / 1e9;
    std::printf(" %lldx%lld %6.2f GB/s = %3.0f%%;", static_cast<long long>(rows), static_cast<long long>(cols), gbs,
                100 * gbs * 1e9 / read_bw);
  }
  std::printf(" of read bandwidth\n");
}

}  // namespace

int main(int argc, char** argv) {
  Args args("quant_kernels_bench", "Block-format matmul kernels against this machine's read bandwidth.");
  args.option("--threads", "N", "threads (0: all)", "0")
      .option("--wait", "POLICY", "how idle threads wait: spin, passive or auto", "auto")
      .option("--mib", "N", "MiB of weights per decode matmul (well above the last-level cache)", "256")
      .option("--prompt", "N", "tokens of the prefill matmuls", "128")
      .option("--repeats", "N", "repeats (median reported)", "5")
      .flag("--shapes-only", "stop after the compute costs and the 1B decode shapes");
  try {
    if (!args.parse(argc - 1, argv + 1)) return 0;
    const std::int64_t mib = args.get_int("--mib"), prompt = args.get_int("--prompt");
    const int repeats = static_cast<int>(args.get_int("--repeats"));
    if (mib < 1 || prompt < 1 || repeats < 1) throw InputError("--mib, --prompt and --repeats must be >= 1");
    ThreadPool pool(static_cast<int>(args.get_int("--threads")), wait_policy_flag(args.get("--wait")));
    const IsaKernels& k = isa_kernels(best_isa());
    const bench::ReadBandwidth rb = bench::read_bandwidth(pool, std::int64_t{1} << 30, repeats);
    std::printf("quant kernels: %s table, %d threads; read bandwidth %.2f GB/s (%s)\n", std::string(k.name).c_str(),
                pool.size(), rb.bytes_per_s / 1e9, rb.strategy);
    const std::int64_t cols = 4096;
    std::vector<float> x(static_cast<std::size_t>(std::max<std::int64_t>(prompt, 4) * cols));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
    for (DType t : kBlockFormats) print_compute_cost(k, t, cols);
    for (DType t : kBlockFormats) print_decode_shapes(k, pool, t, mib, repeats, rb.bytes_per_s);
    if (args.get_flag("--shapes-only")) return 0;
    for (DType t : kBlockFormats) {
      const std::int64_t rows = (mib << 20) / dtype_row_bytes(t, cols);
      const std::vector<std::uint8_t> w = random_blocks(t, rows, cols);
      const WeightMatrix m{w.data(), t, rows, cols};
      std::vector<float> y(static_cast<std::size_t>(std::max<std::int64_t>(prompt, 4) * rows));
      const MatmulPart part{m, y.data(), rows};
      const double bytes = static_cast<double>(m.bytes());
      const double s1 = time_it(repeats, [&] { matmul(k, pool, {&part, 1}, x.data(), 1, cols); });
      const double s4 = time_it(repeats, [&] { matmul(k, pool, {&part, 1}, x.data(), 4, cols); });
      // Prefill: 1024 rows (4 MiB of f32 rows; the weights stay in cache across repeats).
      const WeightMatrix pm{w.data(), t, 1024, cols};
      const MatmulPart pp{pm, y.data(), 1024};
      const double ops = 2.0 * 1024 * static_cast<double>(cols) * static_cast<double>(prompt);
      const double sq = time_it(repeats, [&] { matmul(k, pool, {&pp, 1}, x.data(), prompt, cols); });
      const double sd = time_it(repeats, [&] { matmul_dequantised(k, pool, pp, x.data(), prompt); });
      std::printf("  %-5s decode 1 token %6.2f GB/s = %3.0f%% of read bandwidth; 4 tokens %6.2f GB/s = %3.0f%%; "
                  "prefill %lld tokens: int8 %6.1f GOP/s, dequantised f32 %6.1f GOP/s\n",
                  std::string(dtype_name(t)).c_str(), bytes / s1 / 1e9, 100 * bytes / s1 / rb.bytes_per_s,
                  bytes / s4 / 1e9, 100 * bytes / s4 / rb.bytes_per_s, static_cast<long long>(prompt), ops / sq / 1e9,
                  ops / sd / 1e9);
    }
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "quant_kernels_bench: %s\n", e.what());
    return 2;
  }
}
