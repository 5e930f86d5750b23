// Copy bandwidth and cuBLAS GEMM rate, timed with CUDA events (see fallback_ceilings.h).
#include "fallback_ceilings.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"

namespace plexus::gpubench {

namespace {

#define CHECK(call) PLEXUS_CUDA_CHECK(call, "gpu_bench ceilings")

__global__ void fill_random(__nv_bfloat16* p, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u ^ seed;
    x ^= x >> 15, x *= 2246822519u, x ^= x >> 13;
    p[i] = __float2bfloat16((static_cast<float>(x & 0xffff) / 32768.0f - 1.0f));
  }
}

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { CHECK(cudaMalloc(&p, bytes)); }
  ~DeviceBuffer() { cudaFree(p); }
};

struct Events {
  cudaEvent_t a{}, b{};
  Events() {
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
  }
  ~Events() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  float ms() {
    CHECK(cudaEventSynchronize(b));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, a, b));
    return t;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

double gpu_copy_gbps(std::size_t bytes, int device) {
  CHECK(cudaSetDevice(device));
  DeviceBuffer src(bytes), dst(bytes);
  CHECK(cudaMemset(src.p, 1, bytes));
  CHECK(cudaMemset(dst.p, 0, bytes));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Events ev;
  std::vector<double> gbps;
  for (int i = 0; i < 12; ++i) {
    CHECK(cudaEventRecord(ev.a, s));
    CHECK(cudaMemcpyAsync(dst.p, src.p, bytes, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaEventRecord(ev.b, s));
    const double ms = ev.ms();
    if (i >= 2) gbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  CHECK(cudaStreamDestroy(s));
  return median(gbps);
}

double gpu_gemm_bf16_tflops(int m, int n, int k, int device) {
  CHECK(cudaSetDevice(device));
  const std::size_t a = static_cast<std::size_t>(m) * k, b = static_cast<std::size_t>(k) * n, c = static_cast<std::size_t>(m) * n;
  DeviceBuffer A(a * 2), B(b * 2), C(c * 2);
  fill_random<<<1024, 256>>>(static_cast<__nv_bfloat16*>(A.p), a, 1u);
  fill_random<<<1024, 256>>>(static_cast<__nv_bfloat16*>(B.p), b, 2u);
  CHECK(cudaGetLastError());
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t h;
  CHECK(cublasCreate(&h));
  CHECK(cublasSetStream(h, s));
  const float one = 1.0f, zero = 0.0f;
  // Row-major C(m×n) = A(m×k)·W(n×k)ᵀ is column-major Cᵀ(n×m) = W(k×n as stored, transposed)·Aᵀ.
  auto gemm = [&] {
    CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, B.p, CUDA_R_16BF, k, A.p, CUDA_R_16BF, k, &zero, C.p,
                       CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  Events ev;
  for (int i = 0; i < 3; ++i) gemm();
  CHECK(cudaEventRecord(ev.a, s));
  gemm();
  CHECK(cudaEventRecord(ev.b, s));
  const double one_ms = std::max(1e-3, static_cast<double>(ev.ms()));
  const int per_batch = std::clamp(static_cast<int>(20.0 / one_ms), 1, 1000);
  const double flops = 2.0 * m * static_cast<double>(n) * k * per_batch;
  std::vector<double> tflops;
  for (int i = 0; i < 10; ++i) {
    CHECK(cudaEventRecord(ev.a, s));
    for (int j = 0; j < per_batch; ++j) gemm();
    CHECK(cudaEventRecord(ev.b, s));
    tflops.push_back(flops / (ev.ms() * 1e-3) / 1e12);
  }
  cublasDestroy(h);
  CHECK(cudaStreamDestroy(s));
  return median(tflops);
}

const char* gpu_name(int device) {
  static std::string name;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return "";
  name = std::string(p.name) + ", sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.multiProcessorCount) + " SMs";
  return name.c_str();
}

}  // namespace plexus::gpubench
