// The previous GEMV (PLEXUS_CUDA_GEMV=old), kept beside gemv.cu for one comparison run.
// Memory-bound GEMV for 1-8 tokens. A block of 4 warps owns 16 consecutive rows of the
// concatenated targets, 4 per warp; x is staged in shared memory a column tile at a time and
// each lane streams 16-byte weight vectors of its warp's 4 rows, reusing each x load across the
// 4 rows and each weight load across the tokens. f32 accumulation, a warp sum per output.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "core/error.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/matmul.h"

namespace plexus::cuda {

namespace {
namespace old_gemv {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = 4;
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;
constexpr int kStageFloats = 8192;  // 32 KiB of x per column tile
constexpr int kMaxTargets = 4;

struct GemvArgs {
  const void* w[kMaxTargets];         // (rows_i, cols)
  float* y[kMaxTargets];              // (n, ldy_i)
  std::int64_t ldy[kMaxTargets];
  std::int64_t row_end[kMaxTargets];  // cumulative rows: target i holds rows [row_end[i-1], row_end[i])
  int count;
};

// kNT: tokens the kernel is built for (n <= kNT; accumulators of tokens >= n are discarded).
template <typename W, int kNT, bool kVec>
__global__ void __launch_bounds__(kThreads)
gemv_kernel(GemvArgs a, const float* __restrict__ x,  // (n, ldx)
            int n, std::int64_t ldx, std::int64_t cols) {
  using Raw = typename W::Raw;
  constexpr int kTileCols = kStageFloats / kNT;
  constexpr int kElems = kVec ? 16 / static_cast<int>(sizeof(Raw)) : 1;  // weights per lane load
  __shared__ __align__(16) float xs[kNT * kTileCols];  // (kNT, kTileCols)

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t total_rows = a.row_end[a.count - 1];
  const Raw* wrow[kRowsPerWarp];  // (cols) each
  bool valid[kRowsPerWarp];
  float* yout[kRowsPerWarp];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + warp * kRowsPerWarp + i;
    valid[i] = r < total_rows;
    int p = 0;
    while (p + 1 < a.count && r >= a.row_end[p]) ++p;
    const std::int64_t local = valid[i] ? r - (p == 0 ? 0 : a.row_end[p - 1]) : 0;
    wrow[i] = static_cast<const Raw*>(a.w[p]) + local * cols;
    yout[i] = a.y[p] + local;
  }

  float acc[kRowsPerWarp][kNT];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i)
#pragma unroll
    for (int t = 0; t < kNT; ++t) acc[i][t] = 0.0f;

  for (std::int64_t c0 = 0; c0 < cols; c0 += kTileCols) {
    const int tc = static_cast<int>(min(static_cast<std::int64_t>(kTileCols), cols - c0));
    __syncthreads();  // the previous tile is no longer read
    // Rows t >= n and columns >= tc of the stage are never used for an output: left as they are.
    // 16 loads in flight per thread, then their stores (a load-store loop would wait on each).
    for (int t = 0; t < n; ++t) {
      const float* xr = x + t * ldx + c0;  // (tc)
      float* sr = xs + t * kTileCols;      // (tc)
      int c = threadIdx.x;
      for (; c + 15 * kThreads < tc; c += 16 * kThreads) {
        float v[16];
#pragma unroll
        for (int u = 0; u < 16; ++u) v[u] = xr[c + u * kThreads];
#pragma unroll
        for (int u = 0; u < 16; ++u) sr[c + u * kThreads] = v[u];
      }
      for (; c < tc; c += kThreads) sr[c] = xr[c];
    }
    __syncthreads();
    if (kVec) {
      // tc is a multiple of kElems (cols is, and kTileCols is).
#pragma unroll 2
      for (int c = lane * kElems; c < tc; c += 32 * kElems) {
        uint4 wv[kRowsPerWarp];
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; ++i) {
          wv[i] = valid[i] ? __ldg(reinterpret_cast<const uint4*>(wrow[i] + c0 + c)) : make_uint4(0, 0, 0, 0);
        }
        float wf[kRowsPerWarp][kElems];
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; ++i) unpack16(W{}, wv[i], wf[i]);
#pragma unroll
        for (int t = 0; t < kNT; ++t) {
          float xv[kElems];
#pragma unroll
          for (int e = 0; e < kElems; e += 4) {
            const float4 v = *reinterpret_cast<const float4*>(xs + t * kTileCols + c + e);
            xv[e] = v.x;
            xv[e + 1] = v.y;
            xv[e + 2] = v.z;
            xv[e + 3] = v.w;
          }
#pragma unroll
          for (int i = 0; i < kRowsPerWarp; ++i)
#pragma unroll
            for (int e = 0; e < kElems; ++e) acc[i][t] = fmaf(wf[i][e], xv[e], acc[i][t]);
        }
      }
    } else {
      for (int c = lane; c < tc; c += 32) {
        float wf[kRowsPerWarp];
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; ++i) wf[i] = valid[i] ? to_f32(W{}, wrow[i][c0 + c]) : 0.0f;
#pragma unroll
        for (int t = 0; t < kNT; ++t) {
          const float xv = xs[t * kTileCols + c];
#pragma unroll
          for (int i = 0; i < kRowsPerWarp; ++i) acc[i][t] = fmaf(wf[i], xv, acc[i][t]);
        }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
#pragma unroll
    for (int t = 0; t < kNT; ++t) {
      const float v = warp_sum(acc[i][t]);
      if (lane == 0 && valid[i] && t < n) {
        // yout[i] points at column `local` of its target; row t is ldy further per token.
        int p = 0;
        const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + warp * kRowsPerWarp + i;
        while (p + 1 < a.count && r >= a.row_end[p]) ++p;
        yout[i][t * a.ldy[p]] = v;
      }
    }
  }
}

template <typename W, int kNT>
void launch_typed(const GemvArgs& a, bool vec, const float* x, int n, std::int64_t ldx, std::int64_t cols,
                  cudaStream_t stream) {
  const std::int64_t blocks = (a.row_end[a.count - 1] + kRowsPerBlock - 1) / kRowsPerBlock;
  const dim3 grid(static_cast<unsigned>(blocks));
  if (vec) {
    gemv_kernel<W, kNT, true><<<grid, kThreads, 0, stream>>>(a, x, n, ldx, cols);
  } else {
    gemv_kernel<W, kNT, false><<<grid, kThreads, 0, stream>>>(a, x, n, ldx, cols);
  }
}

template <typename W>
void launch_tokens(const GemvArgs& a, bool vec, const float* x, int n, std::int64_t ldx, std::int64_t cols,
                   cudaStream_t stream) {
  if (n <= 1) {
    launch_typed<W, 1>(a, vec, x, n, ldx, cols, stream);
  } else if (n <= 2) {
    launch_typed<W, 2>(a, vec, x, n, ldx, cols, stream);
  } else if (n <= 4) {
    launch_typed<W, 4>(a, vec, x, n, ldx, cols, stream);
  } else {
    launch_typed<W, 8>(a, vec, x, n, ldx, cols, stream);
  }
}

}  // namespace old_gemv
}  // namespace

void launch_gemv_old(DType dtype, const MatmulTarget* targets, int count, std::int64_t cols, const float* x,
                 std::int64_t n, std::int64_t ldx, cudaStream_t stream) {
  if (n <= 0 || count <= 0 || cols <= 0) return;
  if (n > kGemvMaxTokens) throw RuntimeError("CUDA GEMV: " + std::to_string(n) + " tokens (at most 8)");
  const std::int64_t elems16 = 16 / static_cast<std::int64_t>(dtype_size(dtype));
  for (int first = 0; first < count; first += old_gemv::kMaxTargets) {
    old_gemv::GemvArgs a{};
    a.count = std::min(old_gemv::kMaxTargets, count - first);
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
      case DType::kF32: old_gemv::launch_tokens<F32W>(a, vec, x, nt, ldx, cols, stream); break;
      case DType::kBF16: old_gemv::launch_tokens<BF16W>(a, vec, x, nt, ldx, cols, stream); break;
      case DType::kF16: old_gemv::launch_tokens<F16W>(a, vec, x, nt, ldx, cols, stream); break;
    }
  }
}

}  // namespace plexus::cuda
