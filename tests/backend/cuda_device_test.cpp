// The CUDA device on a real GPU: budgets, staged host copies of odd sizes, device-to-device and
// cross-device copies, events ordering two virtual GPUs, errors. Skipped (with the reason) where
// the CUDA runtime sees no GPU.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "backend/cpu/cpu_device.h"
#include "backend/cuda/cuda_device.h"
#include "backend/cuda_availability.h"
#include "core/error.h"

namespace plexus {

namespace {
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::size_t kChunk = 4096;  // small staging chunks: every copy below takes several

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cuda_ = probe_cuda(CudaFreeMemory::kNone);
    if (!cuda_.usable()) GTEST_SKIP() << "no GPU for the CUDA device tests: " << cuda_.reason;
  }
  CudaAvailability cuda_;
};

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return v;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_F(CudaDeviceTest, NamesAndAccessors) {
  CudaDevice d(2, 0, 64 * kMiB, kChunk);
  EXPECT_EQ(d.name(), "cuda:2");
  EXPECT_EQ(d.kind(), DeviceKind::kCuda);
  EXPECT_EQ(d.ordinal(), 2);
  EXPECT_EQ(d.physical_device(), 0);
  EXPECT_EQ(d.memory_total(), 64 * kMiB);
  EXPECT_EQ(d.thread_pool(), nullptr);
  EXPECT_NE(d.compute_stream(), nullptr);
  EXPECT_NE(d.copy_stream(), nullptr);
  EXPECT_NE(d.compute_stream(), d.copy_stream());
  // Tasks run with the device's GPU current.
  int current = -1;
  d.enqueue([&] { cudaGetDevice(&current); });
  d.synchronize();
  EXPECT_EQ(current, 0);
}

TEST_F(CudaDeviceTest, AllocatesWithinItsBudgetAndNamesItOver) {
  CudaDevice d(0, 0, 64 * kMiB, kChunk);
  Buffer a = d.allocate(40 * kMiB);
  ASSERT_TRUE(a);
  EXPECT_EQ(d.memory_free(), 24 * kMiB);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, a.data()), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);  // plain device memory, never managed
  const std::string over = error_of([&] { d.allocate(40 * kMiB); });
  EXPECT_NE(over.find("cuda:0"), std::string::npos) << over;
  EXPECT_NE(over.find(std::to_string(40 * kMiB) + " bytes"), std::string::npos) << over;
  EXPECT_NE(over.find("64.00 MiB budget"), std::string::npos) << over;
  a.reset();
  EXPECT_EQ(d.memory_free(), 64 * kMiB);
  Buffer again = d.allocate(64 * kMiB);  // the budget came back
  EXPECT_TRUE(again);
}

TEST_F(CudaDeviceTest, AFailedCudaMallocNamesTheDeviceTheRequestAndFreeMemory) {
  const std::uint64_t huge = cuda_.gpus[0].memory_total_bytes * 4;  // within the budget, beyond the GPU
  CudaDevice d(1, 0, huge * 2, kChunk);
  const std::string e = error_of([&] { d.allocate(huge); });
  EXPECT_NE(e.find("cuda:1 (GPU 0)"), std::string::npos) << e;
  EXPECT_NE(e.find("cudaMalloc"), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(huge) + " bytes"), std::string::npos) << e;
  EXPECT_NE(e.find(" free of "), std::string::npos) << e;
  EXPECT_NE(e.find("--max-memory"), std::string::npos) << e;
  EXPECT_NE(e.find("--context"), std::string::npos) << e;
  EXPECT_EQ(d.memory_free(), huge * 2);  // nothing held after the failure
  Buffer small = d.allocate(kMiB);  // the device still works
  EXPECT_TRUE(small);
}

TEST_F(CudaDeviceTest, HostRoundTripsOfOddSizesThroughStaging) {
  CudaDevice d(0, 0, 64 * kMiB, kChunk);
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{17}, kChunk, kChunk + 1, 5 * kChunk + 123}) {
    for (std::size_t offset : {std::size_t{0}, std::size_t{7}}) {
      Buffer b = d.allocate(n + offset + 5);
      const std::vector<unsigned char> in = pattern(n, static_cast<unsigned>(n + offset));
      d.copy_from_host(b, offset, in.data(), n);
      std::vector<unsigned char> out(n, 0xEE);  // poisoned
      d.copy_to_host(out.data(), b, offset, n);
      EXPECT_EQ(out, in) << n << " bytes at offset " << offset;
    }
  }
  // Large, from pageable memory, with the default 8 MiB chunks.
  CudaDevice big(0, 0, 64 * kMiB);
  const std::vector<unsigned char> in = pattern(20 * kMiB + 333, 9);
  Buffer b = big.allocate(in.size());
  big.copy_from_host(b, 0, in.data(), in.size());
  std::vector<unsigned char> out(in.size(), 0);
  big.copy_to_host(out.data(), b, 0, in.size());
  EXPECT_TRUE(out == in);
}

TEST_F(CudaDeviceTest, DeviceToDeviceAndAcrossVirtualGpusAndFromTheHost) {
  CudaDevice a(0, 0, 16 * kMiB, kChunk), b(1, 0, 16 * kMiB, kChunk);
  const std::size_t n = 3 * kChunk + 17;
  const std::vector<unsigned char> in = pattern(n, 1);
  Buffer src = a.allocate(n), same = a.allocate(n), other = b.allocate(n + 1);
  a.copy_from_host(src, 0, in.data(), n);
  a.copy_from_device(same, 0, src, 0, n);      // D2D on one device
  b.copy_from_device(other, 1, src, 0, n);     // another (virtual) GPU
  std::vector<unsigned char> out(n, 0);
  a.copy_to_host(out.data(), same, 0, n);
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0);
  b.copy_to_host(out.data(), other, 1, n);
  EXPECT_EQ(out, in);
  // A CPU device's buffer as the source, and a CPU device receiving from the GPU.
  CpuDevice host(DeviceKind::kCpu, -1, 16 * kMiB, 1);
  Buffer h = host.allocate(n);
  const std::vector<unsigned char> in2 = pattern(n, 2);
  std::memcpy(h.data(), in2.data(), n);
  b.copy_from_device(other, 0, h, 0, n);
  Buffer back = host.allocate(n);
  host.copy_from_device(back, 0, other, 0, n);
  EXPECT_EQ(std::memcmp(back.data(), in2.data(), n), 0);
}

TEST_F(CudaDeviceTest, PeerCopiesBetweenPhysicalGpus) {
  if (cuda_.gpus.size() < 2) GTEST_SKIP() << "one GPU: no peer copy to test";
  CudaDevice a(0, 0, 16 * kMiB, kChunk), b(1, 1, 16 * kMiB, kChunk);
  const std::size_t n = 2 * kChunk + 5;
  const std::vector<unsigned char> in = pattern(n, 3);
  Buffer src = a.allocate(n), dst = b.allocate(n);
  a.copy_from_host(src, 0, in.data(), n);
  b.copy_from_device(dst, 0, src, 0, n);
  std::vector<unsigned char> out(n, 0);
  b.copy_to_host(out.data(), dst, 0, n);
  EXPECT_EQ(out, in);
}

TEST_F(CudaDeviceTest, EventsOrderWorkBetweenTwoVirtualGpus) {
  CudaDevice a(0, 0, 512 * kMiB, kChunk), b(1, 0, 512 * kMiB, kChunk);
  const std::size_t n = 256 * kMiB;
  Buffer x = a.allocate(n), y = b.allocate(n);
  for (int round = 0; round < 3; ++round) {
    const int value = 10 + round;
    // a: a long fill (several passes) of x; b: waits for a's event, then copies x into y on its own stream.
    a.enqueue([&, value] {
      for (int pass = 0; pass < 8; ++pass)
        if (cudaMemsetAsync(x.data(), pass < 7 ? 0 : value, n, a.compute_stream()) != cudaSuccess)
          throw RuntimeError("memset failed");
    });
    const Event filled = a.record_event();
    b.wait_event(filled);
    b.enqueue([&] {
      if (cudaMemcpyAsync(y.data(), x.data(), n, cudaMemcpyDeviceToDevice, b.compute_stream()) != cudaSuccess)
        throw RuntimeError("copy failed");
    });
    const Event copied = b.record_event();
    copied.wait();
    EXPECT_TRUE(filled.query());
    unsigned char first = 0, last = 0;
    b.copy_to_host(&first, y, 0, 1);
    b.copy_to_host(&last, y, n - 1, 1);
    EXPECT_EQ(first, value);
    EXPECT_EQ(last, value);
  }
  a.synchronize();
  b.synchronize();
}

TEST_F(CudaDeviceTest, AFailingTaskIsRethrownBySynchronize) {
  CudaDevice d(0, 0, 16 * kMiB, kChunk);
  bool later_ran = false;
  d.enqueue([] { throw RuntimeError("boom on cuda:0"); });
  d.enqueue([&] { later_ran = true; });
  const Event e = d.record_event();  // still completes
  e.wait();
  const std::string error = error_of([&] { d.synchronize(); });
  EXPECT_EQ(error, "boom on cuda:0");
  EXPECT_FALSE(later_ran);
  EXPECT_NO_THROW(d.synchronize());  // reported once
  d.enqueue([&] { later_ran = true; });
  d.synchronize();
  EXPECT_TRUE(later_ran);
}

TEST_F(CudaDeviceTest, AZeroBudgetPlaceholderHoldsNothing) {
  CudaDevice d(3, 0, 0, kChunk);
  EXPECT_EQ(d.compute_stream(), nullptr);
  EXPECT_NE(error_of([&] { d.allocate(1); }).find("cuda:3"), std::string::npos);
  d.record_event().wait();
  d.synchronize();
}

}  // namespace plexus
