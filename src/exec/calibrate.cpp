// Measuring the host for the cost model.
#include "exec/calibrate.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "kernels/cpu/matmul.h"

namespace plexus {

namespace {

// Calls fn() until `seconds` have passed (at least twice, after one warm-up); calls per second.
template <typename Fn>
double rate(double seconds, Fn fn) {
  fn();
  Timer t;
  int calls = 0;
  do {
    fn();
    ++calls;
  } while (calls < 2 || t.seconds() < seconds);
  return calls / t.seconds();
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// Mean seconds from signalling a thread asleep on a condition variable (idle for about a
// millisecond, as a device queue between tokens or waiting on a copy) to that thread running.
double handoff_seconds(int samples) {
  std::mutex m;
  std::condition_variable cv;
  int sent = 0;
  bool stop = false;
  Timer clock;
  double sent_at = 0, sum = 0;
  int seen = 0;
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      cv.wait(lock, [&] { return stop || sent != seen; });
      if (stop) return;
      sum += clock.seconds() - sent_at;
      seen = sent;
      cv.notify_all();
    }
  });
  for (int i = 0; i < samples; ++i) {
    const double until = clock.seconds() + 1e-3;
    while (clock.seconds() < until) {
    }
    std::unique_lock<std::mutex> lock(m);
    sent_at = clock.seconds();
    ++sent;
    cv.notify_all();
    cv.wait(lock, [&] { return seen == sent; });  // one wake at a time
  }
  {
    std::lock_guard<std::mutex> lock(m);
    stop = true;
  }
  cv.notify_all();
  waiter.join();
  return sum / samples;
}

}  // namespace

std::string calibration_path() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/plexus/calibration.json";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/plexus/calibration.json";
  throw RuntimeError("neither XDG_CACHE_HOME nor HOME is set: cannot place the calibration file; set XDG_CACHE_HOME");
}

std::optional<HostCalibration> load_calibration(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  return host_calibration_from_json(read_json_file(path), path);
}

void save_calibration(const HostCalibration& c, const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << host_calibration_to_json(c).dump(2) << "\n";
    if (!out) throw RuntimeError("cannot write " + tmp + ": check the directory's permissions or set XDG_CACHE_HOME");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw RuntimeError("cannot write " + path + ": " + ec.message());
}

HostCalibration calibrate_host(const CalibrateOptions& o) {
  HostCalibration c;
  const IsaKernels& k = isa_kernels(best_isa());
  c.cpu = cpu_model();
  c.isa = k.name;
  c.created = now_iso();
  const int max_threads = o.max_threads > 0 ? o.max_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> counts;
  for (int t = 1; t < max_threads; t *= 2) counts.push_back(t);
  counts.push_back(max_threads);

  // Decode: one token against a 64 MiB bf16 matrix.
  const std::int64_t rows = 8192, cols = 4096;
  // Four of them, taken in turn: 256 MiB between two reads of one, beyond a server CPU's L3 (a
  // single 64 MiB matrix partly stays cached, and a model's weights do not).
  constexpr int kDecodeCopies = 4;
  std::vector<std::uint16_t> big(static_cast<std::size_t>(kDecodeCopies * rows * cols), 0x3c00);  // bf16 1.0 / 128
  std::vector<float> x(static_cast<std::size_t>(64 * cols), 0.5f), y(static_cast<std::size_t>(64 * rows));
  const WeightMatrix decode_w{big.data(), DType::kBF16, rows, cols};
  // Prefill: 64 tokens against 2048 × 2048 matrices (bf16, f32).
  const std::int64_t n = 2048, tokens = 64;
  const WeightMatrix gemm16{big.data(), DType::kBF16, n, n};
  std::vector<float> f32(static_cast<std::size_t>(n * n), 0.25f);
  const WeightMatrix gemm32{f32.data(), DType::kF32, n, n};
  // Streaming slots of 8 MiB, about one layer of a small model (the decode matrix's rows in blocks).
  const std::int64_t block_rows = 1024;
  const std::size_t block_elems = static_cast<std::size_t>(block_rows * cols), blocks = static_cast<std::size_t>(rows / block_rows);
  std::vector<std::uint16_t> slots(2 * block_elems);
  for (int t : counts) {
    ThreadPool pool(t);
    HostThroughput h;
    h.threads = t;
    int turn = 0;
    // The next of the decode matrices; `part` of its rows.
    auto decode = [&](std::int64_t tk, std::int64_t part = 1) {
      WeightMatrix w = decode_w;
      w.data = big.data() + static_cast<std::size_t>(turn++ % kDecodeCopies) * static_cast<std::size_t>(rows * cols);
      w.rows = rows / part;
      const MatmulPart dp[] = {{w, y.data(), w.rows}};
      matmul(k, pool, dp, x.data(), tk, cols);
    };
    // One token, the decode case itself: the longest window (also the weight rate at 1 token).
    h.memory_bandwidth = static_cast<double>(decode_w.bytes()) * rate(2 * o.seconds_per_test, [&] { decode(1); });
    const MatmulPart p16[] = {{gemm16, y.data(), n}};
    const double flops = 2.0 * tokens * n * n;
    h.flops_16bit = flops * rate(o.seconds_per_test, [&] { matmul(k, pool, p16, x.data(), tokens, cols); });
    const MatmulPart p32[] = {{gemm32, y.data(), n}};
    h.flops_f32 = flops * rate(o.seconds_per_test, [&] { matmul(k, pool, p32, x.data(), tokens, cols); });
    // A forward's weight rate at a few token counts (the decode matrices: beyond the caches).
    // From 16 tokens on the FMAs bound it, not the reads: a quarter of each matrix (16 MiB, still
    // past the L2) measures the same rate in a quarter of the time.
    h.weight_rate_by_tokens.emplace_back(1.0, h.memory_bandwidth);
    for (const std::int64_t tk : {2, 4, 8, 16, 64}) {
      const std::int64_t part = tk >= 16 ? 4 : 1;
      const double per_s = rate(o.seconds_per_test / 2, [&] { decode(tk, part); });
      h.weight_rate_by_tokens.emplace_back(static_cast<double>(tk), static_cast<double>(decode_w.bytes() / part) * per_s);
    }
    // One small launch: the pool's fixed cost per parallel kernel.
    const WeightMatrix tiny{big.data(), DType::kBF16, 64, 64};
    const MatmulPart tp[] = {{tiny, y.data(), 64}};
    h.launch_overhead_s = 1 / rate(o.seconds_per_test / 2, [&] { matmul(k, pool, tp, x.data(), 1, 64); });
    // Streamed weights: layer-sized blocks copied into two alternating slots, each then read
    // by the decode kernel (timed alone) from where the copy left it.
    double kernel_s = 0, kernel_bytes = 0;
    Timer total;
    do {
      for (std::size_t b = 0; b < blocks; ++b) {
        std::uint16_t* slot = slots.data() + (b % 2) * block_elems;
        std::memcpy(slot, big.data() + b * block_elems, block_elems * sizeof(std::uint16_t));
        const WeightMatrix sw{slot, DType::kBF16, block_rows, cols};
        const MatmulPart sp[] = {{sw, y.data(), block_rows}};
        Timer kt;
        matmul(k, pool, sp, x.data(), 1, cols);
        kernel_s += kt.seconds();
        kernel_bytes += static_cast<double>(sw.bytes());
      }
    } while (total.seconds() < o.seconds_per_test / 2);
    h.streamed_weight_rate = kernel_bytes / kernel_s;
    c.by_threads.push_back(h);
  }

  // Weight streaming's copies: the same blocks into the two slots, one copy at a time.
  double copy_s = 0, copied = 0;
  Timer total;
  do {
    for (std::size_t b = 0; b < blocks; ++b) {
      Timer ct;
      std::memcpy(slots.data() + (b % 2) * block_elems, big.data() + b * block_elems, block_elems * sizeof(std::uint16_t));
      copy_s += ct.seconds();
      copied += static_cast<double>(block_elems * sizeof(std::uint16_t));
    }
  } while (total.seconds() < o.seconds_per_test);
  c.slot_copy_bandwidth = copied / copy_s;
  c.handoff_s = handoff_seconds(o.no_files ? 20 : std::max(50, static_cast<int>(o.seconds_per_test * 1000)));

  // Host ↔ virtual device copies are memcpy.
  std::vector<char> src(64 << 20, 1), dst(64 << 20);
  c.copy_bandwidth = static_cast<double>(src.size()) * rate(o.seconds_per_test, [&] { std::memcpy(dst.data(), src.data(), src.size()); });
  if (o.no_files) {
    c.disk_read_bandwidth = c.copy_bandwidth;
    return c;
  }

  // Disk offload reads the mmapped checkpoint: copy out of a mapped file (its pages cached).
  const std::string dir = o.scratch_dir.empty() ? std::filesystem::temp_directory_path().string() : o.scratch_dir;
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/calibrate-mmap.tmp";
  {
    std::ofstream out(file, std::ios::binary);
    out.write(src.data(), static_cast<std::streamsize>(src.size()));
    if (!out) throw RuntimeError("cannot write " + file + " for the mmap read test: check free space in " + dir);
  }
  const int fd = ::open(file.c_str(), O_RDONLY);
  void* map = fd >= 0 ? ::mmap(nullptr, src.size(), PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  if (map == MAP_FAILED) {
    if (fd >= 0) ::close(fd);
    std::filesystem::remove(file);
    throw RuntimeError("cannot mmap " + file + " for the read test");
  }
  c.disk_read_bandwidth = static_cast<double>(src.size()) * rate(o.seconds_per_test, [&] { std::memcpy(dst.data(), map, src.size()); });
  ::munmap(map, src.size());
  ::close(fd);
  std::filesystem::remove(file);
  return c;
}

HostCalibration quick_host_calibration(int threads) {
  CalibrateOptions o;
  o.max_threads = threads;
  o.seconds_per_test = 0.02;
  o.no_files = true;
  return calibrate_host(o);
}

}  // namespace plexus
