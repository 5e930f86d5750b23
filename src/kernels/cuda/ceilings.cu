// Ceiling measurements: cuBLAS bf16 GEMM rate and device-to-device copy bandwidth.
#include "kernels/cuda/ceilings.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_check.h"

namespace plexus::cuda {

namespace {

constexpr int kReps = 5;

// Frees what it holds when the measurement returns or throws.
struct DeviceBuffers {
  void* p[3] = {nullptr, nullptr, nullptr};
  cudaEvent_t ev[2] = {nullptr, nullptr};
  cublasHandle_t blas = nullptr;
  ~DeviceBuffers() {
    if (blas) cublasDestroy(blas);
    for (cudaEvent_t e : ev)
      if (e) cudaEventDestroy(e);
    for (void* q : p) cudaFree(q);
  }
};

// Small pseudo-random bf16 values in [-1, 1): tensor cores run at their usual rate (zeros would not).
__global__ void fill_bf16(__nv_bfloat16* p, std::int64_t n, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2bfloat16_rn(static_cast<float>(h & 0xffff) / 32768.0f - 1.0f);
  }
}

// Best seconds of one run of `op` over kReps timed runs after one warm-up.
template <typename Op>
double best_seconds(DeviceBuffers& b, cudaStream_t stream, const std::string& what, Op op) {
  PLEXUS_CUDA_CHECK(cudaEventCreate(&b.ev[0]), what);
  PLEXUS_CUDA_CHECK(cudaEventCreate(&b.ev[1]), what);
  op();
  PLEXUS_CUDA_CHECK(cudaStreamSynchronize(stream), what + " warm-up");
  double best = 1e30;
  for (int r = 0; r < kReps; ++r) {
    PLEXUS_CUDA_CHECK(cudaEventRecord(b.ev[0], stream), what);
    op();
    PLEXUS_CUDA_CHECK(cudaEventRecord(b.ev[1], stream), what);
    PLEXUS_CUDA_CHECK(cudaEventSynchronize(b.ev[1]), what);
    float ms = 0;
    PLEXUS_CUDA_CHECK(cudaEventElapsedTime(&ms, b.ev[0], b.ev[1]), what);
    best = std::min(best, static_cast<double>(ms) * 1e-3);
  }
  return best;
}

}  // namespace

double cuda_gemm_bf16_tflops(int m, int n, int k, cudaStream_t stream) {
  const std::string what = "GEMM ceiling " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  DeviceBuffers b;
  const std::int64_t a_elems = static_cast<std::int64_t>(m) * k, b_elems = static_cast<std::int64_t>(k) * n;
  PLEXUS_CUDA_CHECK(cudaMalloc(&b.p[0], a_elems * 2), what + " allocating A");
  PLEXUS_CUDA_CHECK(cudaMalloc(&b.p[1], b_elems * 2), what + " allocating B");
  PLEXUS_CUDA_CHECK(cudaMalloc(&b.p[2], static_cast<std::int64_t>(m) * n * 4), what + " allocating C");
  fill_bf16<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(b.p[0]), a_elems, 1u);
  fill_bf16<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(b.p[1]), b_elems, 2u);
  PLEXUS_CUDA_CHECK(cudaGetLastError(), what + " filling inputs");
  PLEXUS_CUDA_CHECK(cublasCreate(&b.blas), what);
  PLEXUS_CUDA_CHECK(cublasSetStream(b.blas, stream), what);
  const float one = 1.0f, zero = 0.0f;
  // Row-major weights (m, k) times k-major activations, as the prefill GEMM calls it.
  const double s = best_seconds(b, stream, what, [&] {
    PLEXUS_CUDA_CHECK(cublasGemmEx(b.blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, b.p[0], CUDA_R_16BF, k, b.p[1],
                                   CUDA_R_16BF, k, &zero, b.p[2], CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT),
                      what);
  });
  return 2.0 * m * static_cast<double>(n) * k / s * 1e-12;
}

double cuda_copy_gbps(std::size_t bytes, cudaStream_t stream) {
  const std::string what = "copy ceiling of " + std::to_string(bytes) + " bytes";
  DeviceBuffers b;
  PLEXUS_CUDA_CHECK(cudaMalloc(&b.p[0], bytes), what + " allocating the source");
  PLEXUS_CUDA_CHECK(cudaMalloc(&b.p[1], bytes), what + " allocating the destination");
  PLEXUS_CUDA_CHECK(cudaMemsetAsync(b.p[0], 1, bytes, stream), what);
  const double s = best_seconds(b, stream, what, [&] {
    PLEXUS_CUDA_CHECK(cudaMemcpyAsync(b.p[1], b.p[0], bytes, cudaMemcpyDeviceToDevice, stream), what);
  });
  return 2.0 * static_cast<double>(bytes) / s * 1e-9;
}

}  // namespace plexus::cuda
