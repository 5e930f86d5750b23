// Products with stored weights on the GPU: y (n, ldy) = x (n, ldx) · Wᵀ for W (rows, cols)
// row-major in its checkpoint dtype, f32 activations and accumulation. A memory-bound GEMV for
// n <= kGemvDispatchMaxTokens (decode), cuBLAS for more (prefill, batched decode). Plain C++
// header; pointers are device memory.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"

struct cublasContext;

namespace plexus::cuda {

// The most tokens the GEMV kernel takes.
constexpr std::int64_t kGemvMaxTokens = 8;
// CudaOps::matmul runs the GEMV for n <= this and cuBLAS (x rounded to the 16-bit weight dtype)
// beyond: measured on an H200 (Llama-3.1-8B shapes, bf16), cuBLAS is faster on most shapes from
// 4 tokens (28672x4096: 66 vs 73 us) and on every shape at 8 (62 vs 107 us); the GEMV at 1-2.
constexpr std::int64_t kGemvDispatchMaxTokens = 3;
static_assert(kGemvDispatchMaxTokens <= kGemvMaxTokens);

// One weight of a product; the weights of one call share x and cols.
struct MatmulTarget {
  const void* w = nullptr;  // (rows, cols) of the call's dtype
  std::int64_t rows = 0;
  float* y = nullptr;       // (n, ldy), columns [0, rows) written
  std::int64_t ldy = 0;
};

// GEMV: n in [1, kGemvMaxTokens], `count` targets of one dtype in one launch (block formats go
// to launch_block_gemv). 16-byte weight
// loads when cols is a multiple of 16 / dtype_size and every w is 16-byte aligned, element loads
// otherwise (any cols); float4 x loads when x and ldx are 16-byte aligned. n * ldx < 2^31.
void launch_gemv(DType dtype, const MatmulTarget* targets, int count, std::int64_t cols, const float* x,
                 std::int64_t n, std::int64_t ldx, cudaStream_t stream);

// Bytes of scratch gemm_cublas needs for n tokens of `cols` inputs (x converted to 16 bits).
std::size_t gemm_scratch_bytes(std::int64_t n, std::int64_t cols);

// cuBLAS GEMM, any n >= 1: bf16/f16 weights multiply x converted to the weight dtype in
// `scratch` (gemm_scratch_bytes), f32 weights a plain f32 GEMM (no TF32); f32 accumulation and
// output. `handle` must be bound to `stream`; `what` names the device in errors. Block formats:
// gemm_cublas_blocks (this throws).
void gemm_cublas(cublasContext* handle, DType dtype, const MatmulTarget* targets, int count, std::int64_t cols,
                 const float* x, std::int64_t n, std::int64_t ldx, void* scratch, std::size_t scratch_bytes,
                 cudaStream_t stream, const std::string& what);

// cuBLAS GEMM against a weight stored (in, out) and read in place (WeightMatrix::in_out, GPT-2's
// Conv1D weights): y (n, ldy) = x (n, ldx) · wᵀ, any n >= 1 (decode too: no GEMV of this layout).
// In cuBLAS's column-major terms the stored (cols, in_out_ld) rows are W (rows × cols, ld
// in_out_ld) itself, so the weight goes untransposed (CUBLAS_OP_N) where gemm_cublas transposes.
// bf16/f16: x converted to the weight dtype in `scratch` (gemm_scratch_bytes); f32: no TF32.
void gemm_cublas_in_out(cublasContext* handle, DType dtype, const void* w, std::int64_t rows, std::int64_t cols,
                        std::int64_t in_out_ld, const float* x, std::int64_t n, std::int64_t ldx, float* y,
                        std::int64_t ldy, void* scratch, std::size_t scratch_bytes, cudaStream_t stream,
                        const std::string& what);

// Block-format weights (every one of kBlockFormats; cols a multiple of the block's weights, every w
// at least 2-byte aligned), gemv_blocks.cu. The GEMV: as launch_gemv (n in [1, kGemvMaxTokens]);
// weights dequantised in registers, 16-byte loads when every w is 16-byte aligned and a row's
// bytes are a multiple of 16.
void launch_block_gemv(DType dtype, const MatmulTarget* targets, int count, std::int64_t cols, const float* x,
                       std::int64_t n, std::int64_t ldx, cudaStream_t stream);

// The block GEMV's shape: kRows (several rows a warp, each x load shared by them: the default) or
// kStaged (the earlier one row a warp; PLEXUS_CUDA_BLOCK_GEMV=staged sets it at start-up). For
// tests and benchmarks that compare the two.
enum class BlockGemvShape { kRows, kStaged };
void set_block_gemv_shape(BlockGemvShape shape);
BlockGemvShape block_gemv_shape();

// out (rows, cols) f16 = the block-format rows w (rows, cols) dequantised (out 16-byte aligned).
void launch_dequantize_f16(DType dtype, const void* w, std::int64_t rows, std::int64_t cols, void* out,
                           cudaStream_t stream);

// Device bytes of the weight chunk gemm_cublas_blocks dequantises into (CudaOps reserves them
// when a batch may have more than kGemvDispatchMaxTokens tokens).
constexpr std::size_t kDequantScratchBytes = std::size_t{32} << 20;

// cuBLAS for block-format weights, any n >= 1: x converted to f16 in `scratch`
// (gemm_scratch_bytes), then per chunk of wscratch_bytes / (2 cols) rows the rows dequantised to
// f16 in `wscratch` and one GemmEx; f32 accumulation and output.
void gemm_cublas_blocks(cublasContext* handle, DType dtype, const MatmulTarget* targets, int count, std::int64_t cols,
                        const float* x, std::int64_t n, std::int64_t ldx, void* scratch, std::size_t scratch_bytes,
                        void* wscratch, std::size_t wscratch_bytes, cudaStream_t stream, const std::string& what);

}  // namespace plexus::cuda
