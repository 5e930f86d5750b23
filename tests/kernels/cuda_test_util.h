// Helpers of the GPU tests: whether a GPU is present (and why not), device buffers that are
// poisoned (all bits set: NaN) before each run, random data, tolerance checks.
#pragma once
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"

namespace plexus::cuda::test {

// True when a CUDA device can be used; otherwise `why` says what is missing.
inline bool gpu_present(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = std::string("no usable CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return false;
  }
  if (n == 0) {
    *why = "no CUDA device present";
    return false;
  }
  return true;
}

#define PLEXUS_TEST_CUDA(call)                                                                  \
  do {                                                                                          \
    const cudaError_t e_ = (call);                                                              \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_);                       \
  } while (0)

// A device array of T; freed on destruction.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (cudaMalloc(&p_, std::max<std::size_t>(1, n) * sizeof(T)) != cudaSuccess) {
      p_ = nullptr;
      throw std::runtime_error("cudaMalloc of " + std::to_string(n * sizeof(T)) + " bytes failed");
    }
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  T* get() const { return static_cast<T*>(p_); }
  std::size_t size() const { return n_; }
  void upload(const std::vector<T>& host) {
    if (cudaMemcpy(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess)
      throw std::runtime_error("upload failed");
  }
  std::vector<T> download() const {
    std::vector<T> h(n_);
    if (cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error(std::string("kernel failed: ") + cudaGetErrorString(cudaGetLastError()));
    if (cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess)
      throw std::runtime_error("download failed");
    return h;
  }
  void poison() {  // every byte 0xff: a NaN in every f32
    if (cudaMemset(p_, 0xff, std::max<std::size_t>(1, n_) * sizeof(T)) != cudaSuccess)
      throw std::runtime_error("poison failed");
  }

 private:
  void* p_ = nullptr;
  std::size_t n_ = 0;
};

inline std::vector<float> random_floats(std::size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Weights of `dtype` as raw bytes, made from f32 values (rounded to the dtype).
inline std::vector<std::uint8_t> to_dtype_bytes(const std::vector<float>& v, DType dtype) {
  std::vector<std::uint8_t> out(v.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(out.data() + 4 * i, &v[i], 4);
    } else {
      const std::uint16_t h = dtype == DType::kBF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

// f32 rounded to `dtype` and back.
inline float round_to(float v, DType dtype) {
  if (dtype == DType::kBF16) return bf16_to_f32(f32_to_bf16(v));
  if (dtype == DType::kF16) return f16_to_f32(f32_to_f16(v));
  return v;
}

inline bool all_bits_set(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u == 0xffffffffu;
}

// Every got[i] finite and within atol + rtol·|want[i]| of want[i]; reports the first misses.
inline ::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& want, double atol,
                                        double rtol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  int bad = 0;
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!std::isfinite(got[i]) || !(err <= atol + rtol * std::fabs(want[i]))) {
      if (bad < 5) r << "[" << i << "] got " << got[i] << " want " << want[i] << "; ";
      ++bad;
    }
    if (std::isfinite(err)) worst = std::max(worst, err);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return r << bad << " of " << got.size() << " outside tolerance (worst finite error " << worst << ")";
}

}  // namespace plexus::cuda::test
