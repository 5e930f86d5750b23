// Device helpers shared by the CUDA kernels: warp/block reductions and weight-element loads.
// Included by .cu files only.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace plexus::cuda {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block of `v`; every thread gets the total. `red` is 32 floats of shared memory;
// blockDim.x must be a multiple of 32. Contains __syncthreads: call from every thread.
__device__ __forceinline__ float block_sum(float v, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // `red` may still be read by an earlier call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = lane < warps ? red[lane] : 0.0f;
  return warp_sum(t);
}

// Weight element storage: the kernels are templated on one of these tags.
struct F32W { using Raw = float; };
struct BF16W { using Raw = std::uint16_t; };
struct F16W { using Raw = std::uint16_t; };

__device__ __forceinline__ float to_f32(F32W, float v) { return v; }
__device__ __forceinline__ float to_f32(BF16W, std::uint16_t v) {
  return __uint_as_float(static_cast<unsigned>(v) << 16);
}
__device__ __forceinline__ float to_f32(F16W, std::uint16_t v) { return __half2float(__ushort_as_half(v)); }

// The 16 bytes `u` as 4 (f32) or 8 (bf16, f16) floats into out[0..).
__device__ __forceinline__ void unpack16(F32W, const uint4& u, float* out) {
  out[0] = __uint_as_float(u.x);
  out[1] = __uint_as_float(u.y);
  out[2] = __uint_as_float(u.z);
  out[3] = __uint_as_float(u.w);
}
__device__ __forceinline__ void unpack16(BF16W, const uint4& u, float* out) {
  const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __uint_as_float(w[i] << 16);
    out[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}
__device__ __forceinline__ void unpack16(F16W, const uint4& u, float* out) {
  const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] & 0xffffu)));
    out[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] >> 16)));
  }
}

}  // namespace plexus::cuda
