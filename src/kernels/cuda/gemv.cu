// Memory-bound GEMV for 1-8 tokens, built to keep HBM busy on sm_90 (132 SMs).
//
// A block is 8 warps. The warps form groups of kSplit; a group owns kRows consecutive rows of
// the concatenated targets and its warps split the columns between them (split-K: chunks of
// kUnroll warp-wide loads, interleaved), so long rows are not walked by one warp and short
// matrices still give every SM its warps. Tokens 1 / 2 / 3-4 / 5-8: kRows = kSplit = 1 / 2 /
// 4 / 4, at most 64 / 80 / 128 / 128 registers, 32 / 24 / 16 / 16 warps per SM. Each lane
// issues 8 independent 16-byte weight loads (ld.global.nc, no L1 allocation: the weights
// stream) before it uses any; x is
// read straight from global memory (L1/L2-resident: n * cols f32) as float4, each x load reused
// by the kRows rows, each weight load by the tokens. Accumulators of the kNT tokens stay in
// registers (f32); a warp sum per output, then the kSplit warps' partials meet in shared memory.
// The grid is the resident blocks (kMinBlocks per SM, held by __launch_bounds__), each walking
// row blocks, so no shape leaves a partial last wave.
//
// Tokens t >= n of a kNT build read token n - 1's x and are discarded. Element loads for cols
// not a multiple of 16 / dtype_size or a misaligned weight; scalar x loads for an x or ldx that
// is not 16-byte aligned.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "core/error.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/matmul.h"

namespace plexus::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxTargets = 4;

struct GemvArgs {
  const void* w[kMaxTargets];         // (rows_i, cols)
  float* y[kMaxTargets];              // (n, ldy_i)
  std::int64_t ldy[kMaxTargets];
  std::int64_t row_end[kMaxTargets];  // cumulative rows: target i holds rows [row_end[i-1], row_end[i])
  int count;
};

// Rows per warp group (= warps per group: the column split) and weight loads per row in flight.
template <int kNT>
struct Shape {
  static constexpr int kRows = kNT == 1 ? 1 : (kNT == 2 ? 2 : 4);
  static constexpr int kSplit = kRows;
  static constexpr int kGroups = kWarps / kSplit;
  // Blocks per SM the registers must allow (8 tokens: 128 registers, 16 warps per SM).
  static constexpr int kMinBlocks = kNT == 1 ? 4 : (kNT == 2 ? 3 : 2);
};

__device__ __forceinline__ uint4 ld_stream16(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// kVec: 16-byte weight loads (kElems weights each), else one weight per load.
template <typename W, bool kVec>
struct Chunk {
  using Raw = typename W::Raw;
  static constexpr int kElems = kVec ? 16 / static_cast<int>(sizeof(Raw)) : 1;
  using V = std::conditional_t<kVec, uint4, Raw>;
  static __device__ __forceinline__ V load(const Raw* p) {
    if constexpr (kVec) {
      return ld_stream16(p);
    } else {
      return __ldg(p);
    }
  }
  static __device__ __forceinline__ void unpack(const V& v, float* out) {
    if constexpr (kVec) {
      unpack16(W{}, v, out);
    } else {
      out[0] = to_f32(W{}, v);
    }
  }
};

template <typename W, int kNT, bool kVec, bool kXVec>
__global__ void __launch_bounds__(kThreads, Shape<kNT>::kMinBlocks)
gemv_kernel(GemvArgs a, const float* __restrict__ x,  // (n, ldx)
            int n, std::int64_t ldx, std::int64_t cols) {
  using C = Chunk<W, kVec>;
  using Raw = typename W::Raw;
  using V = typename C::V;
  constexpr int kRows = Shape<kNT>::kRows, kSplit = Shape<kNT>::kSplit, kGroups = Shape<kNT>::kGroups;
  constexpr int kE = C::kElems;
  constexpr int kUnroll = kVec ? 8 / kRows : 4;  // loads in flight per row
  constexpr int kWarpCols = 32 * kE;             // columns of one warp-wide load
  __shared__ float red[kWarps][kRows * kNT];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int group = warp / kSplit, part = warp % kSplit;
  const std::int64_t total_rows = a.row_end[a.count - 1];
  const std::int64_t blocks = (total_rows + kGroups * kRows - 1) / (kGroups * kRows);
  // Resident blocks (the grid is sized to the SMs) walk the row blocks: no partial last wave.
  for (std::int64_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const std::int64_t r0 = (blk * kGroups + group) * kRows;

    const Raw* wrow[kRows];  // (cols) each; rows past the end read the last row, discarded
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const std::int64_t r = min(r0 + i, total_rows - 1);
      int p = 0;
      while (p + 1 < a.count && r >= a.row_end[p]) ++p;
      const std::int64_t local = r - (p == 0 ? 0 : a.row_end[p - 1]);
      wrow[i] = static_cast<const Raw*>(a.w[p]) + local * cols;
    }

    float acc[kRows][kNT];
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int t = 0; t < kNT; ++t) acc[i][t] = 0.0f;

    // Token t's x row starts xoff[t] floats into x (32 bits: the host checks n * ldx < 2^31).
    int xoff[kNT];
#pragma unroll
    for (int t = 0; t < kNT; ++t) xoff[t] = (t < n ? t : n - 1) * static_cast<int>(ldx);
    // acc += the weights wv (kRows rows at column c) times x at column c, kP columns at a time
    // (the unpacked weights of kP columns are reused by every token).
    constexpr int kP = kE < 4 ? kE : 4;
    auto fma_chunk = [&](const V* wv, std::int64_t c) {
#pragma unroll
      for (int e0 = 0; e0 < kE; e0 += kP) {
        float wf[kRows][kP];
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          float all[kE];
          C::unpack(wv[i], all);
#pragma unroll
          for (int e = 0; e < kP; ++e) wf[i][e] = all[e0 + e];
        }
#pragma unroll
        for (int t = 0; t < kNT; ++t) {
          const float* xp = x + xoff[t] + (c + e0);
          float xv[kP];
          if constexpr (kXVec && kP == 4) {
            const float4 v = __ldg(reinterpret_cast<const float4*>(xp));
            xv[0] = v.x;
            xv[1] = v.y;
            xv[2] = v.z;
            xv[3] = v.w;
          } else {
#pragma unroll
            for (int e = 0; e < kP; ++e) xv[e] = __ldg(xp + e);
          }
#pragma unroll
          for (int i = 0; i < kRows; ++i)
#pragma unroll
            for (int e = 0; e < kP; ++e) acc[i][t] = fmaf(wf[i][e], xv[e], acc[i][t]);
        }
      }
    };

    // Lane columns c + u * kWarpCols (u < kUnroll) of a chunk; this warp takes every kSplit-th chunk.
    // A lane leaves the full-chunk loop at the chunk that reaches past cols and finishes it
    // element by element; its later chunks would start past cols.
    std::int64_t c = (static_cast<std::int64_t>(part) * kUnroll * 32 + lane) * kE;
    const std::int64_t stride = static_cast<std::int64_t>(kSplit) * kUnroll * kWarpCols;
    for (; c + (kUnroll - 1) * kWarpCols < cols; c += stride) {
      V wv[kUnroll][kRows];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int i = 0; i < kRows; ++i) wv[u][i] = C::load(wrow[i] + c + u * kWarpCols);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) fma_chunk(wv[u], c + u * kWarpCols);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t cu = c + u * kWarpCols;
      if (cu < cols) {
        V wv[kRows];
#pragma unroll
        for (int i = 0; i < kRows; ++i) wv[i] = C::load(wrow[i] + cu);
        fma_chunk(wv, cu);
      }
    }

#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int t = 0; t < kNT; ++t) {
        const float v = warp_sum(acc[i][t]);
        if (kSplit == 1) {
          acc[i][t] = v;
        } else if (lane == 0) {
          red[warp][i * kNT + t] = v;
        }
      }
    if constexpr (kSplit > 1) __syncthreads();
    // Lane k of the group's first warp writes output k = i * kNT + t (kRows * kNT <= 32).
    for (int k = kSplit == 1 ? 0 : lane; part == 0 && k < kRows * kNT; k += kSplit == 1 ? 1 : 32) {
      const int i = k / kNT, t = k % kNT;
      const std::int64_t r = r0 + i;
      if (t >= n || r >= total_rows) continue;
      float v = 0.0f;
      if constexpr (kSplit == 1) {
        if (lane != 0) continue;
#pragma unroll
        for (int ii = 0; ii < kRows; ++ii)
#pragma unroll
          for (int tt = 0; tt < kNT; ++tt)
            if (ii * kNT + tt == k) v = acc[ii][tt];
      } else {
#pragma unroll
        for (int s = 0; s < kSplit; ++s) v += red[warp + s][k];
      }
      int p = 0;
      while (p + 1 < a.count && r >= a.row_end[p]) ++p;
      const std::int64_t local = r - (p == 0 ? 0 : a.row_end[p - 1]);
      a.y[p][t * a.ldy[p] + local] = v;
    }
    if constexpr (kSplit > 1) __syncthreads();  // red is read before the next row block writes it
  }
}

template <typename W, int kNT>
void launch_typed(const GemvArgs& a, bool vec, bool xvec, const float* x, int n, std::int64_t ldx, std::int64_t cols,
                  cudaStream_t stream) {
  constexpr std::int64_t rows_per_block = static_cast<std::int64_t>(Shape<kNT>::kGroups) * Shape<kNT>::kRows;
  const std::int64_t blocks = (a.row_end[a.count - 1] + rows_per_block - 1) / rows_per_block;
  // kMinBlocks per SM are resident (__launch_bounds__ holds the registers to it).
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      sms <= 0) {
    sms = 132;
  }
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(blocks, std::int64_t{sms} * Shape<kNT>::kMinBlocks)));
  if (vec && xvec) {
    gemv_kernel<W, kNT, true, true><<<grid, kThreads, 0, stream>>>(a, x, n, ldx, cols);
  } else if (vec) {
    gemv_kernel<W, kNT, true, false><<<grid, kThreads, 0, stream>>>(a, x, n, ldx, cols);
  } else {
    gemv_kernel<W, kNT, false, false><<<grid, kThreads, 0, stream>>>(a, x, n, ldx, cols);
  }
}

template <typename W>
void launch_tokens(const GemvArgs& a, bool vec, bool xvec, const float* x, int n, std::int64_t ldx, std::int64_t cols,
                   cudaStream_t stream) {
  if (n <= 1) {
    launch_typed<W, 1>(a, vec, xvec, x, n, ldx, cols, stream);
  } else if (n <= 2) {
    launch_typed<W, 2>(a, vec, xvec, x, n, ldx, cols, stream);
  } else if (n <= 4) {
    launch_typed<W, 4>(a, vec, xvec, x, n, ldx, cols, stream);
  } else {
    launch_typed<W, 8>(a, vec, xvec, x, n, ldx, cols, stream);
  }
}

}  // namespace

void launch_gemv(DType dtype, const MatmulTarget* targets, int count, std::int64_t cols, const float* x,
                 std::int64_t n, std::int64_t ldx, cudaStream_t stream) {
  if (n <= 0 || count <= 0 || cols <= 0) return;
  if (n > kGemvMaxTokens) throw RuntimeError("CUDA GEMV: " + std::to_string(n) + " tokens (at most 8)");
  if (n * ldx >= (std::int64_t{1} << 31)) throw RuntimeError("CUDA GEMV: x of " + std::to_string(n * ldx) + " floats");
  if (dtype_is_block(dtype)) {
    launch_block_gemv(dtype, targets, count, cols, x, n, ldx, stream);
    return;
  }
  const std::int64_t elems16 = 16 / static_cast<std::int64_t>(dtype_size(dtype));
  const bool xvec = (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0 && ldx % 4 == 0;
  for (int first = 0; first < count; first += kMaxTargets) {
    GemvArgs a{};
    a.count = std::min(kMaxTargets, count - first);
    bool vec = cols % elems16 == 0;
    std::int64_t rows = 0;
    for (int i = 0; i < a.count; ++i) {
      const MatmulTarget& m = targets[first + i];
      a.w[i] = m.w;
      a.y[i] = m.y;
      a.ldy[i] = m.ldy;
      rows += m.rows;
      a.row_end[i] = rows;
      vec = vec && (reinterpret_cast<std::uintptr_t>(m.w) & 15u) == 0;
    }
    if (rows == 0) continue;
    const int nt = static_cast<int>(n);
    switch (dtype) {
      case DType::kF32: launch_tokens<F32W>(a, vec, xvec, x, nt, ldx, cols, stream); break;
      case DType::kBF16: launch_tokens<BF16W>(a, vec, xvec, x, nt, ldx, cols, stream); break;
      case DType::kF16: launch_tokens<F16W>(a, vec, xvec, x, nt, ldx, cols, stream); break;
      default: break;  // a block format: launch_block_gemv, above
    }
  }
}


}  // namespace plexus::cuda
