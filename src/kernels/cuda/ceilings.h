// Hardware ceilings measured on the current CUDA device, for benchmarks to report their rates
// against: the cuBLAS bf16 GEMM rate and the device-to-device copy bandwidth. Each allocates its
// own buffers, times with CUDA events on `stream` and frees them. Plain C++ header.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

namespace plexus::cuda {

// TFLOP/s (2·m·n·k per product) of cuBLAS C (m × n, f32) = A (m × k, bf16) · B (k × n, bf16)
// with f32 accumulation — the shape and types of the prefill GEMM (m: weight rows, n: tokens,
// k: inputs). Best of a few timed repetitions after a warm-up.
double cuda_gemm_bf16_tflops(int m, int n, int k, cudaStream_t stream);

// GB/s (10⁹ bytes read + written per second) of a device-to-device copy of `bytes`, best of a
// few repetitions after a warm-up.
double cuda_copy_gbps(std::size_t bytes, cudaStream_t stream = nullptr);

}  // namespace plexus::cuda
