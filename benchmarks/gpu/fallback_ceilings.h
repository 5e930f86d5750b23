// The GPU's ceilings that gpu_bench divides by, timed in the same run: device-to-device copy
// bandwidth and the cuBLAS bf16 GEMM rate. A stand-in until src/kernels/cuda/ceilings.h
// (cuda_copy_gbps, cuda_gemm_bf16_tflops) is merged: then gpu_bench calls those and this file
// and fallback_ceilings.cu are deleted.
#pragma once
#include <cstddef>

namespace plexus::gpubench {

// GB/s of cudaMemcpyAsync device to device on `device`, counting bytes read plus bytes written
// (2 × bytes per copy), the median of 10 copies of `bytes` after 2 warm-ups.
double gpu_copy_gbps(std::size_t bytes, int device);

// TFLOP/s of cublasGemmEx C(m×n) = A(m×k)·B(k×n), bf16 inputs and output, f32 accumulation
// (what a prefill of m tokens through an n×k weight does), on random data: the median of 10
// timed batches after warm-up, each batch enough products to take about 20 ms.
double gpu_gemm_bf16_tflops(int m, int n, int k, int device);

// "NVIDIA H100 80GB HBM3, sm_90, 132 SMs" (empty when no device answers).
const char* gpu_name(int device);

}  // namespace plexus::gpubench
