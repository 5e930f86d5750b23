// Block-format weights (every format of block_dequant.h: Q8_0, Q5_0, Q5_1, Q4_0, Q4_1, IQ4_NL,
// MXFP4, Q6_K, Q5_K, Q4_K, IQ4_XS, Q3_K, Q2_K) on the GPU: the GEMV for 1-8 tokens and the
// cuBLAS path above that (weight rows dequantised to f16 in a scratch chunk, then GemmEx).
//
// GEMV: a block is 8 warps; a warp owns a group of kRows rows (Shape: 4, Q6_K 2, for up to 4
// tokens), so each x load serves them all, and `split` warps (1, 2, 4 or 8) share a group, taking
// every split-th tile of it (a tile: kTileBlocks whole blocks per row, a whole number of 16-byte
// vectors). A warp copies its rows' tiles into shared memory with 16-byte streaming loads
// (ld.global.nc, no L1 allocation) — the blocks themselves are 17 to 210 bytes, so only a run of
// them is 16-byte aligned — and issues the loads of its next tiles before it computes
// these. Each lane then takes 8 consecutive weights of each row as a * raw + b (affine8 in
// block_dequant.h: the index math the CPU tests check; raw = 1 + u / 2^bits, the code placed in
// 1.0's mantissa) and adds a * sum(raw x) + b * sum(x) per token (f32 x: two float4 loads per
// token, coalesced across the warp; sum(x) shared by the rows), f32 accumulation; a warp sum, then
// the split warps' partials meet in shared memory. The earlier shape (one row a warp, weights
// dequantised by dequant8) stays as kStaged: PLEXUS_CUDA_BLOCK_GEMV=staged or
// set_block_gemv_shape. 16-byte loads need every w 16-byte aligned and the row bytes a multiple
// of 16 (cols a multiple of 64 for Q5_1, 128 for Q4_1, 256 for Q8_0 / Q4_0 / Q5_0 / IQ4_NL, 512
// for IQ4_XS, MXFP4, 1024 for Q2_K, 2048 for Q3_K / Q6_K; any Q4_K / Q5_K row); otherwise 2-byte
// loads, or byte loads where a row's bytes are odd (MXFP4 rows of an odd number of blocks).
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "kernels/block_dequant.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/matmul.h"

namespace plexus::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxTargets = 4;

std::atomic<int> g_shape{-1};  // BlockGemvShape, -1: not read from the environment yet

bool block_gemv_staged() { return block_gemv_shape() == BlockGemvShape::kStaged; }

struct BlockGemvArgs {
  const std::uint8_t* w[kMaxTargets];  // (rows_i, row_bytes)
  float* y[kMaxTargets];               // (n, ldy_i)
  std::int64_t ldy[kMaxTargets];
  std::int64_t row_end[kMaxTargets];   // cumulative rows: target i holds rows [row_end[i-1], row_end[i])
  int count;
};

// The GEMV's shape per format and token count: kRows rows a warp (x is read once for all of them
// from L1 — with one row a warp, the x reads, 4 bytes per weight per token, cost the L1 more than
// the weights themselves), tiles of kTileBlocks blocks per row (a whole number of 16-byte vectors;
// the kRows tiles of a warp share its shared-memory slot, at most 48 KiB a block in all).
// kStaged is the earlier shape (one row a warp, about 2 KiB tiles): PLEXUS_CUDA_BLOCK_GEMV=staged.
template <typename F, int kNT, bool kStaged>
struct Shape {
  static constexpr bool kSixBit = F::kBytes == blocks::Q6_K::kBytes;  // 1680-byte tiles at the least
  static constexpr int kRows = kStaged ? 1 : kSixBit ? (kNT <= 4 ? 2 : 1) : (kNT <= 4 ? 4 : 2);
  static constexpr int kTileBlocks = (kStaged || kSixBit) ? F::kTileBlocks : F::kTileBlocks / 2;
  static constexpr int kBytes = kTileBlocks * F::kBytes;
  static constexpr int kVecs = kBytes / 16;
  static constexpr int kLoads = (kVecs + 31) / 32;  // 16-byte loads per lane per row
  static constexpr int kElems = kTileBlocks * F::kElems;
  static_assert(kBytes % 16 == 0 && kWarps * kRows * kBytes <= 48 * 1024);
};

__device__ __forceinline__ uint4 ld_stream16(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

template <typename F, int kNT, bool kStaged, bool kVec, bool kXVec>
__global__ void __launch_bounds__(kThreads)
block_gemv_kernel(BlockGemvArgs a, const float* __restrict__ x,  // (n, ldx)
                  int n, std::int64_t ldx, std::int64_t cols, std::int64_t row_bytes, int split) {
  using T = Shape<F, kNT, kStaged>;
  constexpr int kR = T::kRows;
  __shared__ __align__(16) std::uint8_t tiles[kWarps][kR][T::kBytes];
  __shared__ float red[kWarps][kR][kNT];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t item = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp;
  const std::int64_t group = item / split;  // rows group * kR + i, i < kR
  const int part = static_cast<int>(item % split);
  const std::int64_t total_rows = a.row_end[a.count - 1];
  const std::uint8_t* wrow[kR];  // (row_bytes) each
  int target[kR];
  std::int64_t local[kR];
#pragma unroll
  for (int i = 0; i < kR; ++i) {
    const std::int64_t r = min(group * kR + i, total_rows - 1);  // rows past the end compute the last row, discarded
    int p = 0;
    while (p + 1 < a.count && r >= a.row_end[p]) ++p;
    target[i] = p;
    local[i] = r - (p == 0 ? 0 : a.row_end[p - 1]);
    wrow[i] = a.w[p] + local[i] * row_bytes;
  }
  const std::int64_t nb = cols / F::kElems;
  const std::int64_t ntiles = (nb + T::kTileBlocks - 1) / T::kTileBlocks;

  // Token t's x row starts xoff[t] floats into x (32 bits: the host checks n * ldx < 2^31).
  int xoff[kNT];
  float acc[kR][kNT];
#pragma unroll
  for (int t = 0; t < kNT; ++t) {
    xoff[t] = (t < n ? t : n - 1) * static_cast<int>(ldx);
#pragma unroll
    for (int i = 0; i < kR; ++i) acc[i][t] = 0.0f;
  }
  auto tile_bytes = [&](std::int64_t t) {
    return static_cast<int>(min(static_cast<std::int64_t>(T::kTileBlocks), nb - t * T::kTileBlocks)) * F::kBytes;
  };
  uint4 v[kR][T::kLoads];
  auto fetch = [&](std::int64_t t) {  // tile t's 16-byte vectors of each row into v
    const int nv = tile_bytes(t) / 16;
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      const std::uint8_t* g = wrow[i] + t * T::kBytes;
#pragma unroll
      for (int j = 0; j < T::kLoads; ++j) {
        const int idx = lane + 32 * j;
        if (idx < nv) v[i][j] = ld_stream16(g + 16 * idx);
      }
    }
  };

  std::int64_t t = part;
  if constexpr (kVec) {
    if (t < ntiles) fetch(t);
  }
  for (; t < ntiles; t += split) {
    const int tb = tile_bytes(t);
    __syncwarp();  // the previous tile is read
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      std::uint8_t* sm = tiles[warp][i];
      if constexpr (kVec) {
#pragma unroll
        for (int j = 0; j < T::kLoads; ++j) {
          const int idx = lane + 32 * j;
          if (idx < tb / 16) reinterpret_cast<uint4*>(sm)[idx] = v[i][j];
        }
      } else if (F::kBytes % 2 != 0 && (row_bytes & 1) != 0) {  // odd rows start at odd addresses
        const std::uint8_t* g = wrow[i] + t * T::kBytes;
        for (int idx = lane; idx < tb; idx += 32) sm[idx] = __ldg(g + idx);
      } else {
        const std::uint16_t* g = reinterpret_cast<const std::uint16_t*>(wrow[i] + t * T::kBytes);
        for (int idx = lane; idx < tb / 2; idx += 32) reinterpret_cast<std::uint16_t*>(sm)[idx] = __ldg(g + idx);
      }
    }
    if constexpr (kVec) {
      if (t + split < ntiles) fetch(t + split);  // in flight while this tile is computed
    }
    __syncwarp();
    const int elems = tb / F::kBytes * F::kElems;
    const std::int64_t c0 = t * T::kElems;
    for (int e = 8 * lane; e < elems; e += 256) {
      // Staged: weights dequantised (dequant8). Rows: each row's 8 weights as a * raw + b
      // (affine8), so a token adds a * sum(raw x) + b * sum(x), sum(x) shared by the rows.
      float wv[kR][8], wa[kR], wb[kR];
#pragma unroll
      for (int i = 0; i < kR; ++i) {
        if constexpr (kStaged) {
          F::dequant8(tiles[warp][i], e, wv[i]);
        } else {
          F::affine8(tiles[warp][i], e, wv[i], &wa[i], &wb[i]);
        }
      }
#pragma unroll
      for (int tt = 0; tt < kNT; ++tt) {
        const float* xp = x + xoff[tt] + (c0 + e);
        float xv[8];
        if constexpr (kXVec) {
          const float4 x0 = __ldg(reinterpret_cast<const float4*>(xp));
          const float4 x1 = __ldg(reinterpret_cast<const float4*>(xp) + 1);
          xv[0] = x0.x;
          xv[1] = x0.y;
          xv[2] = x0.z;
          xv[3] = x0.w;
          xv[4] = x1.x;
          xv[5] = x1.y;
          xv[6] = x1.z;
          xv[7] = x1.w;
        } else {
#pragma unroll
          for (int k = 0; k < 8; ++k) xv[k] = __ldg(xp + k);
        }
        if constexpr (kStaged) {
#pragma unroll
          for (int i = 0; i < kR; ++i) {
#pragma unroll
            for (int k = 0; k < 8; ++k) acc[i][tt] = fmaf(wv[i][k], xv[k], acc[i][tt]);
          }
        } else {
          const float sx = ((xv[0] + xv[1]) + (xv[2] + xv[3])) + ((xv[4] + xv[5]) + (xv[6] + xv[7]));
#pragma unroll
          for (int i = 0; i < kR; ++i) {
            float sr = 0.0f;
#pragma unroll
            for (int k = 0; k < 8; ++k) sr = fmaf(wv[i][k], xv[k], sr);
            acc[i][tt] = fmaf(wa[i], sr, fmaf(wb[i], sx, acc[i][tt]));
          }
        }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kR; ++i) {
#pragma unroll
    for (int tt = 0; tt < kNT; ++tt) {
      const float s = warp_sum(acc[i][tt]);
      if (lane == 0) red[warp][i][tt] = s;
    }
  }
  __syncthreads();
  // The group's first warp: lane tt writes token tt of each row (the warps of a group share this
  // block: split divides 8).
  if (part == 0 && lane < n) {
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      if (group * kR + i >= total_rows) break;
      float s = 0.0f;
      for (int k = 0; k < split; ++k) s += red[warp + k][i][lane];
      a.y[target[i]][lane * a.ldy[target[i]] + local[i]] = s;
    }
  }
}

template <typename F, int kNT, bool kStaged>
void launch_shaped(const BlockGemvArgs& a, bool vec, bool xvec, const float* x, int n, std::int64_t ldx,
                   std::int64_t cols, std::int64_t row_bytes, cudaStream_t stream) {
  using T = Shape<F, kNT, kStaged>;
  const std::int64_t rows = a.row_end[a.count - 1];
  const std::int64_t groups = (rows + T::kRows - 1) / T::kRows;
  const std::int64_t tiles = (cols / F::kElems + T::kTileBlocks - 1) / T::kTileBlocks;
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      sms <= 0) {
    sms = 132;
  }
  // Split row groups between warps while the groups alone give under 32 warps per SM.
  int split = 1;
  while (split < kWarps && 2 * split <= tiles && groups * split < std::int64_t{sms} * 32) split *= 2;
  const dim3 grid(static_cast<unsigned>((groups * split + kWarps - 1) / kWarps));
  if (kStaged || (vec && xvec)) {  // the staged shape: its common case only (launch_typed), fewer kernels
    block_gemv_kernel<F, kNT, kStaged, true, true><<<grid, kThreads, 0, stream>>>(a, x, n, ldx, cols, row_bytes, split);
  } else if constexpr (kStaged) {
  } else if (vec) {
    block_gemv_kernel<F, kNT, kStaged, true, false><<<grid, kThreads, 0, stream>>>(a, x, n, ldx, cols, row_bytes, split);
  } else if (xvec) {
    block_gemv_kernel<F, kNT, kStaged, false, true><<<grid, kThreads, 0, stream>>>(a, x, n, ldx, cols, row_bytes, split);
  } else {
    block_gemv_kernel<F, kNT, kStaged, false, false><<<grid, kThreads, 0, stream>>>(a, x, n, ldx, cols, row_bytes, split);
  }
}

template <typename F, int kNT>
void launch_typed(const BlockGemvArgs& a, bool vec, bool xvec, const float* x, int n, std::int64_t ldx,
                  std::int64_t cols, std::int64_t row_bytes, cudaStream_t stream) {
  if (block_gemv_staged() && vec && xvec) {  // the staged shape's common case only (fewer kernels)
    launch_shaped<F, kNT, true>(a, vec, xvec, x, n, ldx, cols, row_bytes, stream);
  } else {
    launch_shaped<F, kNT, false>(a, vec, xvec, x, n, ldx, cols, row_bytes, stream);
  }
}

template <typename F>
void launch_tokens(const BlockGemvArgs& a, bool vec, bool xvec, const float* x, int n, std::int64_t ldx,
                   std::int64_t cols, std::int64_t row_bytes, cudaStream_t stream) {
  if (n <= 1) {
    launch_typed<F, 1>(a, vec, xvec, x, n, ldx, cols, row_bytes, stream);
  } else if (n <= 2) {
    launch_typed<F, 2>(a, vec, xvec, x, n, ldx, cols, row_bytes, stream);
  } else if (n <= 3) {
    launch_typed<F, 3>(a, vec, xvec, x, n, ldx, cols, row_bytes, stream);
  } else if (n <= 4) {
    launch_typed<F, 4>(a, vec, xvec, x, n, ldx, cols, row_bytes, stream);
  } else {
    launch_typed<F, 8>(a, vec, xvec, x, n, ldx, cols, row_bytes, stream);
  }
}

// Rows [0, rows) of w (rows, row_bytes) dequantised to f16 out (rows, cols); 8 weights a thread.
template <typename F>
__global__ void dequant_f16_kernel(const std::uint8_t* __restrict__ w, std::int64_t row_bytes, std::int64_t cols,
                                   std::int64_t rows, __half* __restrict__ out) {
  const std::int64_t groups = cols / 8;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * groups;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / groups, e = (i % groups) * 8;
    float v[8];
    F::dequant8(w + r * row_bytes, e, v);
    __half2 h[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = __floats2half2_rn(v[2 * k], v[2 * k + 1]);
    *reinterpret_cast<uint4*>(out + r * cols + e) = *reinterpret_cast<const uint4*>(h);
  }
}

template <typename F>
void launch_dequant(const void* w, std::int64_t row_bytes, std::int64_t cols, std::int64_t rows, void* out,
                    cudaStream_t stream) {
  const std::int64_t work = rows * (cols / 8);
  const unsigned grid = static_cast<unsigned>(std::min<std::int64_t>((work + 255) / 256, 65536));
  dequant_f16_kernel<F><<<grid, 256, 0, stream>>>(static_cast<const std::uint8_t*>(w), row_bytes, cols, rows,
                                                  static_cast<__half*>(out));
}

std::string shape_text(std::int64_t rows, std::int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

}  // namespace

BlockGemvShape block_gemv_shape() {
  int v = g_shape.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* e = std::getenv("PLEXUS_CUDA_BLOCK_GEMV");
    v = static_cast<int>(e != nullptr && std::string(e) == "staged" ? BlockGemvShape::kStaged : BlockGemvShape::kRows);
    g_shape.store(v, std::memory_order_relaxed);
  }
  return static_cast<BlockGemvShape>(v);
}

void set_block_gemv_shape(BlockGemvShape shape) { g_shape.store(static_cast<int>(shape), std::memory_order_relaxed); }

void launch_block_gemv(DType dtype, const MatmulTarget* targets, int count, std::int64_t cols, const float* x,
                       std::int64_t n, std::int64_t ldx, cudaStream_t stream) {
  if (n <= 0 || count <= 0 || cols <= 0) return;
  if (n > kGemvMaxTokens) throw RuntimeError("CUDA block GEMV: " + std::to_string(n) + " tokens (at most 8)");
  if (n * ldx >= (std::int64_t{1} << 31)) throw RuntimeError("CUDA GEMV: x of " + std::to_string(n * ldx) + " floats");
  if (cols % dtype_block_elems(dtype) != 0) {
    throw RuntimeError(std::string("CUDA block GEMV: ") + std::to_string(cols) + " columns of " + std::string(dtype_name(dtype)) +
                       " (a multiple of " + std::to_string(dtype_block_elems(dtype)) + " needed)");
  }
  const std::int64_t row_bytes = dtype_row_bytes(dtype, cols);
  const bool xvec = (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0 && ldx % 4 == 0;
  for (int first = 0; first < count; first += kMaxTargets) {
    BlockGemvArgs a{};
    a.count = std::min(kMaxTargets, count - first);
    bool vec = row_bytes % 16 == 0;
    std::int64_t rows = 0;
    for (int i = 0; i < a.count; ++i) {
      const MatmulTarget& m = targets[first + i];
      if ((reinterpret_cast<std::uintptr_t>(m.w) & 1u) != 0) throw RuntimeError("CUDA block GEMV: weights at an odd address");
      a.w[i] = static_cast<const std::uint8_t*>(m.w);
      a.y[i] = m.y;
      a.ldy[i] = m.ldy;
      rows += m.rows;
      a.row_end[i] = rows;
      vec = vec && (reinterpret_cast<std::uintptr_t>(m.w) & 15u) == 0;
    }
    if (rows == 0) continue;
    const int nt = static_cast<int>(n);
    const bool block = blocks::with_block_tag(dtype, [&](auto tag) {
      launch_tokens<decltype(tag)>(a, vec, xvec, x, nt, ldx, cols, row_bytes, stream);
    });
    if (!block) throw RuntimeError("CUDA block GEMV: " + std::string(dtype_name(dtype)) + " is not a block format");
  }
}

void launch_dequantize_f16(DType dtype, const void* w, std::int64_t rows, std::int64_t cols, void* out,
                           cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const std::int64_t row_bytes = dtype_row_bytes(dtype, cols);
  const bool block = blocks::with_block_tag(
      dtype, [&](auto tag) { launch_dequant<decltype(tag)>(w, row_bytes, cols, rows, out, stream); });
  if (!block) throw RuntimeError("CUDA dequantisation: " + std::string(dtype_name(dtype)) + " is not a block format");
}

void gemm_cublas_blocks(cublasContext* handle, DType dtype, const MatmulTarget* targets, int count, std::int64_t cols,
                        const float* x, std::int64_t n, std::int64_t ldx, void* scratch, std::size_t scratch_bytes,
                        void* wscratch, std::size_t wscratch_bytes, cudaStream_t stream, const std::string& what) {
  if (n <= 0 || count <= 0 || cols <= 0) return;
  if (gemm_scratch_bytes(n, cols) > scratch_bytes) {
    throw RuntimeError(what + ": GEMM of " + std::to_string(n) + " tokens x " + std::to_string(cols) +
                       " inputs needs " + std::to_string(gemm_scratch_bytes(n, cols)) + " bytes of scratch, has " +
                       std::to_string(scratch_bytes));
  }
  const std::int64_t chunk = static_cast<std::int64_t>(wscratch_bytes / (static_cast<std::size_t>(cols) * 2));
  if (chunk < 1 || wscratch == nullptr) {
    throw RuntimeError(what + ": no scratch to dequantise " + std::string(dtype_name(dtype)) + " rows of " + std::to_string(cols) +
                       " columns (" + std::to_string(wscratch_bytes) + " bytes)");
  }
  launch_convert_rows(x, n, cols, ldx, DType::kF16, scratch, stream);  // xh (n, cols) f16
  PLEXUS_CUDA_CHECK(cudaGetLastError(), what + " converting GEMM input");
  const float one = 1.0f, zero = 0.0f;
  const std::int64_t row_bytes = dtype_row_bytes(dtype, cols);
  for (int i = 0; i < count; ++i) {
    const MatmulTarget& m = targets[i];
    for (std::int64_t r0 = 0; r0 < m.rows; r0 += chunk) {
      const std::int64_t nr = std::min(chunk, m.rows - r0);
      launch_dequantize_f16(dtype, static_cast<const std::uint8_t*>(m.w) + r0 * row_bytes, nr, cols, wscratch, stream);
      PLEXUS_CUDA_CHECK(cudaGetLastError(), what + " dequantising " + std::string(dtype_name(dtype)) + " rows");
      PLEXUS_CUDA_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(nr), static_cast<int>(n),
                                     static_cast<int>(cols), &one, wscratch, CUDA_R_16F, static_cast<int>(cols), scratch,
                                     CUDA_R_16F, static_cast<int>(cols), &zero, m.y + r0, CUDA_R_32F,
                                     static_cast<int>(m.ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                        what + " " + std::string(dtype_name(dtype)) + " GEMM " + std::to_string(n) + "x" +
                            shape_text(nr, cols));
    }
  }
}

}  // namespace plexus::cuda
