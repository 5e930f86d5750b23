// The collectives of tensor-parallel ranks on CUDA GPUs (label gpu; skipped, with the reason,
// where CUDA sees no GPU): the reduce kernel against the host's sum in rank order (bit for bit),
// the CUDA in-process group against the host's InProcessGroup (bit for bit, every rank), ordered
// after work already on the ranks' streams and before work enqueued after it, its all-gather,
// broadcast and abort; on a machine with 2+ GPUs, NCCL (ncclCommInitAll, and one rank per
// "process" with the id over a host collective) and the in-process group with peer reads; all-
// reduce latency and bandwidth, 4 KiB to 64 MiB (printed, never judged).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "comm/cuda/cuda_in_process_group.h"
#include "comm/cuda/gpu_group.h"
#include "comm/cuda/sum_ranks.h"
#include "comm/in_process_group.h"
#include "core/error.h"
#include "cuda_test_util.h"
#ifdef PLEXUS_HAVE_NCCL
#include "comm/cuda/nccl_group.h"
#endif

namespace plexus::cuda::test {
namespace {

class CudaComm : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_present(&why)) GTEST_SKIP() << why;
  }
};

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The host's all-reduce order: ((x0 + x1) + x2) + …
std::vector<float> host_sum(const std::vector<std::vector<float>>& in, std::size_t offset, std::size_t n) {
  std::vector<float> s(in[0].begin() + static_cast<std::ptrdiff_t>(offset), in[0].begin() + static_cast<std::ptrdiff_t>(offset + n));
  for (std::size_t k = 1; k < in.size(); ++k)
    for (std::size_t i = 0; i < n; ++i) s[i] += in[k][offset + i];
  return s;
}

// fn(r) on one thread per rank; the first failure rethrown after every thread ended.
template <class F>
void on_ranks(int tp, F fn) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(tp));
  std::vector<std::thread> threads;
  for (int r = 0; r < tp; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// A non-blocking stream on `gpu`, destroyed with the object.
class Stream {
 public:
  explicit Stream(int gpu) : gpu_(gpu) {
    cudaSetDevice(gpu);
    if (cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking) != cudaSuccess) throw std::runtime_error("cudaStreamCreate failed");
  }
  ~Stream() {
    cudaSetDevice(gpu_);
    cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  int gpu_;
  cudaStream_t s_ = nullptr;
};

std::vector<std::unique_ptr<Stream>> streams_on(const std::vector<int>& gpus) {
  std::vector<std::unique_ptr<Stream>> s;
  for (int g : gpus) s.push_back(std::make_unique<Stream>(g));
  return s;
}

std::vector<CudaRankPlace> places_of(const std::vector<int>& gpus, const std::vector<std::unique_ptr<Stream>>& streams) {
  std::vector<CudaRankPlace> p;
  for (std::size_t r = 0; r < gpus.size(); ++r) p.push_back({gpus[r], streams[r]->get(), "test rank " + std::to_string(r)});
  return p;
}

TEST_F(CudaComm, SumRanksMatchesTheHostBitForBit) {
  std::mt19937 rng(7);
  for (int ranks : {1, 2, 3, 5, 8}) {
    for (std::size_t n : {1u, 3u, 4u, 17u, 1000u, 4099u}) {
      for (std::size_t offset : {0u, 1u}) {  // 1: unaligned, the scalar kernel
        SCOPED_TRACE("ranks " + std::to_string(ranks) + ", n " + std::to_string(n) + ", offset " + std::to_string(offset));
        std::vector<std::vector<float>> in;
        std::vector<DeviceBuffer<float>> dev;
        std::vector<const float*> ptrs;
        for (int k = 0; k < ranks; ++k) {
          in.push_back(random_floats(n + offset, rng, -100.0f, 100.0f));
          dev.emplace_back(in.back());
        }
        for (int k = 0; k < ranks; ++k) ptrs.push_back(dev[static_cast<std::size_t>(k)].get() + offset);
        DeviceBuffer<float> out(n + offset);
        out.poison();
        launch_sum_ranks(ptrs.data(), ranks, static_cast<std::int64_t>(n), out.get() + offset, nullptr);
        PLEXUS_TEST_CUDA(cudaGetLastError());
        const std::vector<float> got = out.download();
        const std::vector<float> want = host_sum(in, offset, n);
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(bits(got[offset + i]), bits(want[i])) << "element " << i;
        // In place: the sum written over the first rank's buffer.
        launch_sum_ranks(ptrs.data(), ranks, static_cast<std::int64_t>(n), dev[0].get() + offset, nullptr);
        PLEXUS_TEST_CUDA(cudaGetLastError());
        const std::vector<float> in_place = dev[0].download();
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(bits(in_place[offset + i]), bits(want[i])) << "element " << i;
      }
    }
  }
}

// Every rank's result of an all-reduce through `group` on `gpus`, the inputs uploaded on each
// rank's stream just before the call (not waited for: the collective must) and the result read
// back on the stream after it.
std::vector<std::vector<float>> gpu_all_reduce(RankGroup& group, const std::vector<int>& gpus,
                                               const std::vector<std::unique_ptr<Stream>>& streams,
                                               const std::vector<std::vector<float>>& in) {
  const int tp = static_cast<int>(gpus.size());
  std::vector<std::vector<float>> out(in.size());
  on_ranks(tp, [&](int r) {
    const auto ru = static_cast<std::size_t>(r);
    if (cudaSetDevice(gpus[ru]) != cudaSuccess) throw std::runtime_error("cudaSetDevice failed");
    DeviceBuffer<float> buf(in[ru].size());
    buf.poison();
    const cudaStream_t s = streams[ru]->get();
    if (cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error("poison failed");
    if (cudaMemcpyAsync(buf.get(), in[ru].data(), in[ru].size() * sizeof(float), cudaMemcpyHostToDevice, s) != cudaSuccess)
      throw std::runtime_error("upload failed");
    group.rank(r).all_reduce_sum(buf.get(), static_cast<std::int64_t>(in[ru].size()));
    out[ru].resize(in[ru].size());
    if (cudaMemcpyAsync(out[ru].data(), buf.get(), in[ru].size() * sizeof(float), cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
      throw std::runtime_error("download failed");
  });
  return out;
}

// The host InProcessGroup's result (every rank's, the same).
std::vector<float> host_all_reduce(const std::vector<std::vector<float>>& in) {
  const int tp = static_cast<int>(in.size());
  InProcessGroup host(tp);
  std::vector<std::vector<float>> h = in;
  on_ranks(tp, [&](int r) {
    auto& v = h[static_cast<std::size_t>(r)];
    host.rank(r).all_reduce_sum(v.data(), static_cast<std::int64_t>(v.size()));
  });
  return h[0];
}

TEST_F(CudaComm, InProcessGroupOnOneGpuGivesTheHostGroupsBits) {
  std::mt19937 rng(11);
  for (int tp : {2, 3, 4}) {
    const std::vector<int> gpus(static_cast<std::size_t>(tp), 0);
    const auto streams = streams_on(gpus);
    CudaInProcessGroup group(places_of(gpus, streams));
    std::int64_t calls = 0, bytes = 0;
    for (std::size_t count : {1u, 5u, 1003u, 65539u}) {  // fewer elements than ranks, odd chunks, many
      SCOPED_TRACE("tp " + std::to_string(tp) + ", count " + std::to_string(count));
      std::vector<std::vector<float>> in;
      for (int r = 0; r < tp; ++r) in.push_back(random_floats(count, rng, -10.0f, 10.0f));
      const std::vector<float> want = host_all_reduce(in);
      const std::vector<std::vector<float>> got = gpu_all_reduce(group, gpus, streams, in);
      for (int r = 0; r < tp; ++r)
        for (std::size_t i = 0; i < count; ++i)
          ASSERT_EQ(bits(got[static_cast<std::size_t>(r)][i]), bits(want[i])) << "rank " << r << ", element " << i;
      ++calls;
      bytes += static_cast<std::int64_t>(count * sizeof(float));
    }
    EXPECT_EQ(group.rank(tp - 1).stats().all_reduce.calls, calls);
    EXPECT_EQ(group.rank(tp - 1).stats().all_reduce.bytes, bytes);
    EXPECT_EQ(group.rank(0).kind(), "cuda in-process");
  }
}

TEST_F(CudaComm, InProcessGroupGathersAndBroadcasts) {
  const int tp = 3;
  const std::int64_t count = 37;
  const std::vector<int> gpus(tp, 0);
  const auto streams = streams_on(gpus);
  CudaInProcessGroup group(places_of(gpus, streams));
  std::vector<std::vector<float>> gathered(tp), received(tp);
  auto value = [](int r, std::int64_t i) { return static_cast<float>(r * 1000 + i); };
  on_ranks(tp, [&](int r) {
    cudaSetDevice(0);
    std::vector<float> mine(count);
    for (std::int64_t i = 0; i < count; ++i) mine[static_cast<std::size_t>(i)] = value(r, i);
    DeviceBuffer<float> in(mine), out(static_cast<std::size_t>(tp * count)), data(mine);
    out.poison();
    if (cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error("poison failed");  // our streams do not wait for it
    group.rank(r).all_gather(in.get(), count, out.get());
    gathered[static_cast<std::size_t>(r)] = out.download();
    group.rank(r).broadcast(data.get(), static_cast<std::size_t>(count) * sizeof(float), 1);
    received[static_cast<std::size_t>(r)] = data.download();
    group.rank(r).barrier();
  });
  for (int r = 0; r < tp; ++r) {
    for (int k = 0; k < tp; ++k)
      for (std::int64_t i = 0; i < count; ++i)
        ASSERT_EQ(gathered[static_cast<std::size_t>(r)][static_cast<std::size_t>(k * count + i)], value(k, i)) << "rank " << r << " row " << k;
    for (std::int64_t i = 0; i < count; ++i) ASSERT_EQ(received[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)], value(1, i));
  }
}

TEST_F(CudaComm, AbortReleasesARankWaitingInACollective) {
  const std::vector<int> gpus{0, 0};
  const auto streams = streams_on(gpus);
  CudaInProcessGroup group(places_of(gpus, streams));
  std::string caught;
  std::thread waiting([&] {
    cudaSetDevice(0);
    DeviceBuffer<float> buf(16);
    try {
      group.rank(0).all_reduce_sum(buf.get(), 16);  // rank 1 never comes
    } catch (const RuntimeError& e) {
      caught = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  group.rank(1).abort("tensor-parallel rank 1 failed: out of memory");
  waiting.join();
  EXPECT_NE(caught.find("rank 1 failed: out of memory"), std::string::npos) << caught;
  DeviceBuffer<float> buf(4);
  EXPECT_THROW(group.rank(1).all_reduce_sum(buf.get(), 4), RuntimeError);  // and every later call
}

TEST_F(CudaComm, MakeGpuGroupPicksTheInProcessGroupForVirtualGpus) {
  const std::vector<int> gpus{0, 0};
  const auto streams = streams_on(gpus);
  GpuGroup g = make_gpu_group(places_of(gpus, streams));
  EXPECT_EQ(g.choice.kind, GpuCollective::kCudaInProcess);
  ASSERT_NE(g.group, nullptr);
  EXPECT_EQ(g.group->rank(0).kind(), "cuda in-process");
}

TEST_F(CudaComm, InProcessGroupAcrossGpusReadsPeers) {
  if (gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs, CUDA sees " << gpu_count();
  int can = 0;
  cudaDeviceCanAccessPeer(&can, 0, 1);
  if (can == 0) GTEST_SKIP() << "GPUs 0 and 1 have no peer access";
  const std::vector<int> gpus{0, 1};
  const auto streams = streams_on(gpus);
  CudaInProcessGroup group(places_of(gpus, streams));
  std::mt19937 rng(13);
  std::vector<std::vector<float>> in{random_floats(4097, rng), random_floats(4097, rng)};
  const std::vector<float> want = host_all_reduce(in);
  const auto got = gpu_all_reduce(group, gpus, streams, in);
  for (int r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(bits(got[static_cast<std::size_t>(r)][i]), bits(want[i]));
}

// All-reduce latency and bandwidth per implementation, 4 KiB to 64 MiB (printed as ALLREDUCE
// lines for scripts/gpu-check-tp.sh; timings never decide the result, the sums of zeros do).
void time_all_reduce(RankGroup& group, const std::vector<int>& gpus, const std::vector<std::unique_ptr<Stream>>& streams,
                     const std::string& label) {
  const int tp = static_cast<int>(gpus.size());
  for (std::size_t bytes : {std::size_t{4} << 10, std::size_t{64} << 10, std::size_t{1} << 20, std::size_t{16} << 20, std::size_t{64} << 20}) {
    const std::int64_t count = static_cast<std::int64_t>(bytes / sizeof(float));
    const int reps = static_cast<int>(std::clamp<std::size_t>((std::size_t{256} << 20) / bytes, 3, 50));
    double seconds = 0;
    std::vector<float> last(static_cast<std::size_t>(tp), -1.0f);
    on_ranks(tp, [&](int r) {
      const auto ru = static_cast<std::size_t>(r);
      cudaSetDevice(gpus[ru]);
      DeviceBuffer<float> buf(static_cast<std::size_t>(count));
      if (cudaMemset(buf.get(), 0, bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error("memset failed");
      Collective& c = group.rank(r);
      for (int w = 0; w < 2; ++w) c.all_reduce_sum(buf.get(), count);  // warm-up (scratch, NCCL's channels)
      cudaStreamSynchronize(streams[ru]->get());
      c.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps; ++i) c.all_reduce_sum(buf.get(), count);
      cudaStreamSynchronize(streams[ru]->get());
      c.barrier();
      if (r == 0) seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
      last[ru] = buf.download()[static_cast<std::size_t>(count - 1)];
    });
    for (float v : last) EXPECT_EQ(v, 0.0f);
    std::printf("ALLREDUCE %-16s tp %d  %9zu bytes  %9.1f us  %7.2f GB/s (bytes / time)\n", label.c_str(), tp, bytes, seconds * 1e6,
                static_cast<double>(bytes) / seconds / 1e9);
  }
}

TEST_F(CudaComm, AllReduceLatencyAndBandwidth) {
  for (int tp : {2, 4}) {
    const std::vector<int> gpus(static_cast<std::size_t>(tp), 0);
    const auto streams = streams_on(gpus);
    CudaInProcessGroup group(places_of(gpus, streams));
    time_all_reduce(group, gpus, streams, "cuda-in-process");
  }
#ifdef PLEXUS_HAVE_NCCL
  if (gpu_count() >= 2 && nccl_unavailable_reason().empty()) {
    std::vector<int> gpus;
    for (int g = 0; g < std::min(gpu_count(), 8); ++g) gpus.push_back(g);
    const auto streams = streams_on(gpus);
    NcclGroup group(places_of(gpus, streams));
    time_all_reduce(group, gpus, streams, "nccl");
  }
#endif
}

#ifdef PLEXUS_HAVE_NCCL
TEST_F(CudaComm, NcclGroupSumsAcrossGpus) {
  if (gpu_count() < 2) GTEST_SKIP() << "NCCL needs 2 GPUs (one per rank), CUDA sees " << gpu_count();
  if (const std::string why = nccl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const int tp = std::min(gpu_count(), 4);
  std::vector<int> gpus;
  for (int r = 0; r < tp; ++r) gpus.push_back(r);
  const auto streams = streams_on(gpus);
  NcclGroup group(places_of(gpus, streams));
  EXPECT_EQ(group.rank(0).kind(), "nccl");
  std::mt19937 rng(17);
  std::vector<std::vector<float>> in;
  for (int r = 0; r < tp; ++r) in.push_back(random_floats(100003, rng));
  const std::vector<float> want = host_all_reduce(in);
  const auto got = gpu_all_reduce(group, gpus, streams, in);
  for (std::size_t i = 0; i < want.size(); ++i) {
    // Two ranks: one addition, commutative, so the host's bits; more: NCCL's own order.
    if (tp == 2) {
      ASSERT_EQ(bits(got[0][i]), bits(want[i])) << "element " << i;
    }
    ASSERT_NEAR(got[0][i], want[i], 1e-5f * tp) << "element " << i;
    for (int r = 1; r < tp; ++r) ASSERT_EQ(bits(got[static_cast<std::size_t>(r)][i]), bits(got[0][i])) << "rank " << r;
  }
  // The same inputs again: the same bits (a fixed communicator and count, a fixed order).
  EXPECT_EQ(gpu_all_reduce(group, gpus, streams, in), got);
}

TEST_F(CudaComm, NcclRanksJoinThroughAHostCollective) {
  if (gpu_count() < 2) GTEST_SKIP() << "NCCL needs 2 GPUs (one per rank), CUDA sees " << gpu_count();
  if (const std::string why = nccl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::vector<int> gpus{0, 1};
  const auto streams = streams_on(gpus);
  InProcessGroup host(2);  // stands in for MPI: the id travels through its broadcast
  std::vector<std::vector<float>> out(2);
  on_ranks(2, [&](int r) {
    cudaSetDevice(r);
    std::unique_ptr<Collective> c = make_nccl_rank(host.rank(r), {r, streams[static_cast<std::size_t>(r)]->get(), ""});
    DeviceBuffer<float> buf(std::vector<float>{1.0f + static_cast<float>(r), 10.0f * static_cast<float>(r)});
    c->all_reduce_sum(buf.get(), 2);
    c->barrier();
    out[static_cast<std::size_t>(r)] = buf.download();
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(out[static_cast<std::size_t>(r)], (std::vector<float>{3.0f, 10.0f}));
}
#endif

}  // namespace
}  // namespace plexus::cuda::test
