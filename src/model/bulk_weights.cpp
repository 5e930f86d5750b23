// The bulk writer: a ring of block buffers that generating threads fill in any order and the
// calling thread writes in file order.
#include "model/bulk_weights.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json.h"
#include "kernels/block_formats.h"
#include "kernels/mxfp4_hf.h"
#include "kernels/quantize.h"

namespace plexus {

namespace {

constexpr std::int64_t kRun = 65536;  // elements per seeded generator

std::uint64_t mix(std::uint64_t z) {  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// wyrand: 64 random bits per call, four table indices.
inline std::uint64_t wyrand(std::uint64_t& s) {
  s += 0xa0761d6478bd642full;
  const __uint128_t m = static_cast<__uint128_t>(s) * (s ^ 0xe7037ed1a0b428dbull);
  return static_cast<std::uint64_t>(m >> 64) ^ static_cast<std::uint64_t>(m);
}

// 65536 values (as stored) of mean + scale·z at the normal quantiles (i + 0.5) / 65536.
std::vector<unsigned char> quantile_table(DType t, double mean, double scale) {
  const std::size_t es = dtype_size(t);
  std::vector<unsigned char> table(kRun * es);
  for (std::int64_t i = 0; i < kRun; ++i) {
    const float v = static_cast<float>(mean + scale * normal_quantile((static_cast<double>(i) + 0.5) / kRun));
    unsigned char* out = table.data() + i * es;
    if (t == DType::kF32) {
      std::memcpy(out, &v, 4);
    } else {
      const std::uint16_t h = t == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
      std::memcpy(out, &h, 2);
    }
  }
  return table;
}

template <typename T>
void fill_run(T* out, std::int64_t n, const T* table, std::uint64_t state) {
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const std::uint64_t r = wyrand(state);
    out[i] = table[r & 0xffff];
    out[i + 1] = table[(r >> 16) & 0xffff];
    out[i + 2] = table[(r >> 32) & 0xffff];
    out[i + 3] = table[r >> 48];
  }
  if (i < n) {
    std::uint64_t r = wyrand(state);
    for (; i < n; ++i, r >>= 16) out[i] = table[r & 0xffff];
  }
}

struct Block {
  std::size_t tensor;
  std::int64_t begin, count;  // elements
};

}  // namespace

std::int64_t BulkTensor::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

double normal_quantile(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double low = 0.02425;
  auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  };
  if (p < low) return tail(std::sqrt(-2 * std::log(p)));
  if (p > 1 - low) return -tail(std::sqrt(-2 * std::log(1 - p)));
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

std::uint64_t write_bulk_safetensors(const std::string& path, const std::vector<BulkTensor>& tensors, const BulkOptions& o) {
  const std::size_t es = dtype_size(o.dtype);
  const std::vector<unsigned char> weights = quantile_table(o.dtype, 0.0, o.std);
  const std::vector<unsigned char> norms = quantile_table(o.dtype, 1.0, 0.1);
  const std::vector<unsigned char> mxfp4_values = quantile_table(DType::kF32, 0.0, o.std);  // before quantising

  Json header = Json::object();
  std::uint64_t off = 0;
  for (const BulkTensor& t : tensors) {
    if (t.mxfp4) {  // NAME_blocks then NAME_scales
      std::vector<std::int64_t> shape = t.shape;
      shape.back() /= 32;
      const std::uint64_t nb = static_cast<std::uint64_t>(t.numel() / 32);
      header[t.name + "_scales"] = {{"dtype", "U8"}, {"shape", shape}, {"data_offsets", {off + 16 * nb, off + 17 * nb}}};
      shape.push_back(16);
      header[t.name + "_blocks"] = {{"dtype", "U8"}, {"shape", shape}, {"data_offsets", {off, off + 16 * nb}}};
      off += 17 * nb;
      continue;
    }
    const std::uint64_t bytes = static_cast<std::uint64_t>(t.numel()) * es;
    header[t.name] = {{"dtype", std::string(dtype_name(o.dtype))}, {"shape", t.shape}, {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');

  const std::int64_t block = std::max<std::int64_t>(1, (o.block_elements + kRun - 1) / kRun) * kRun;
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::int64_t n = tensors[i].numel();
    for (std::int64_t b = 0; b < n; b += block) blocks.push_back({i, b, std::min(block, n - b)});
  }
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = std::max(1, o.threads > 0 ? o.threads : hw);
  const std::size_t ring = std::min<std::size_t>(2 * static_cast<std::size_t>(threads), std::max<std::size_t>(1, blocks.size()));
  std::vector<std::vector<unsigned char>> buffers(ring);

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::int64_t> ready(ring, -1);  // the block each slot holds, once generated
  std::size_t written = 0;                     // blocks written so far
  bool abort = false;
  std::atomic<std::size_t> next{0};
  // An MXFP4 tensor's scales (numel / 32 bytes), filled as its blocks are made and written after
  // them; allocated by the first block made, freed once written.
  std::vector<std::vector<std::uint8_t>> scales(tensors.size());

  auto worker = [&] {
    for (;;) {
      const std::size_t k = next.fetch_add(1);
      if (k >= blocks.size()) return;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return abort || k < written + ring; });
        if (abort) return;
      }
      const Block& b = blocks[k];
      const BulkTensor& t = tensors[b.tensor];
      std::vector<unsigned char>& buf = buffers[k % ring];
      std::vector<float> values;  // an MXFP4 block's values before quantising
      if (t.mxfp4) values.resize(static_cast<std::size_t>(b.count));
      buf.resize(static_cast<std::size_t>(b.count) * es);
      const unsigned char* table = (t.mxfp4 ? mxfp4_values : t.is_norm ? norms : weights).data();
      for (std::int64_t r = 0; r < b.count; r += kRun) {
        const std::int64_t run = (b.begin + r) / kRun;
        const std::uint64_t state = mix(o.seed * 0x9E3779B97F4A7C15ull ^ mix(t.index + 1) ^ mix(static_cast<std::uint64_t>(run) << 20));
        const std::int64_t n = std::min(kRun, b.count - r);
        if (t.mxfp4) {
          fill_run(values.data() + r, n, reinterpret_cast<const float*>(table), state);
        } else if (es == 4) {
          fill_run(reinterpret_cast<float*>(buf.data()) + r, n, reinterpret_cast<const float*>(table), state);
        } else {
          fill_run(reinterpret_cast<std::uint16_t*>(buf.data()) + r, n, reinterpret_cast<const std::uint16_t*>(table), state);
        }
      }
      if (t.mxfp4) {  // b.begin and b.count are multiples of 32 (whole runs; rows of whole blocks)
        std::uint8_t* tensor_scales;
        {
          std::lock_guard lock(mu);
          std::vector<std::uint8_t>& sc = scales[b.tensor];
          if (sc.empty()) sc.resize(static_cast<std::size_t>(t.numel() / 32));
          tensor_scales = sc.data();
        }
        const std::int64_t nb = b.count / 32;
        std::vector<BlockMXFP4> q(static_cast<std::size_t>(nb));
        quantize_row(DType::kMXFP4, values.data(), q.data(), b.count);
        buf.resize(static_cast<std::size_t>(16 * nb));
        mxfp4_to_hf_blocks(q.data(), nb, buf.data(), tensor_scales + b.begin / 32);
      }
      {
        std::lock_guard lock(mu);
        ready[k % ring] = static_cast<std::int64_t>(k);
      }
      cv.notify_all();
    }
  };

  std::vector<std::thread> pool;
  auto stop_pool = [&] {
    {
      std::lock_guard lock(mu);
      abort = true;
    }
    cv.notify_all();
    for (std::thread& th : pool) th.join();
    pool.clear();
  };
  AtomicFile out(path);  // removed unless committed
  try {
    for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
    const std::uint64_t n = h.size();
    char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<char>(static_cast<unsigned char>(n >> (8 * i)));
    out.write(std::string_view(len, 8));
    out.write(h);
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      if (o.stop_requested && o.stop_requested()) {
        throw Interrupted("interrupted while writing '" + path + "'; no temporary file was left, run again to make it");
      }
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return ready[k % ring] == static_cast<std::int64_t>(k); });
      }
      const std::vector<unsigned char>& buf = buffers[k % ring];
      out.write(std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
      const BulkTensor& t = tensors[blocks[k].tensor];
      if (t.mxfp4 && blocks[k].begin + blocks[k].count == t.numel()) {  // its last block: the scales follow
        std::vector<std::uint8_t>& sc = scales[blocks[k].tensor];  // every block of it is made
        out.write(std::string_view(reinterpret_cast<const char*>(sc.data()), sc.size()));
        std::vector<std::uint8_t>().swap(sc);
      }
      {
        std::lock_guard lock(mu);
        written = k + 1;
      }
      cv.notify_all();
      if (o.progress) o.progress(blocks[k].count);
    }
  } catch (...) {
    stop_pool();
    throw;
  }
  stop_pool();
  out.commit();
  return 8 + h.size() + off;
}

}  // namespace plexus
