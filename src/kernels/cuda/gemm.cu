// cuBLAS GEMM for prefill and batched decode. Row-major y (n, ldy) = x (n, ldx) · Wᵀ is, in
// cuBLAS's column-major terms, Y (rows × n, ld ldy) = op_T(W' (cols × rows, ld cols)) · X (cols × n).
#include <cublas_v2.h>

#include <string>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/matmul.h"

namespace plexus::cuda {

std::size_t gemm_scratch_bytes(std::int64_t n, std::int64_t cols) {
  return static_cast<std::size_t>(n * cols) * 2;
}

namespace {

// x (n, cols, row stride ldx) in the weight dtype, into scratch (n, cols): cuBLAS's input of a
// half-precision GEMM (`kind` names the GEMM in the errors).
void convert_gemm_input(const float* x, std::int64_t n, std::int64_t cols, std::int64_t ldx, DType dtype, void* scratch,
                        std::size_t scratch_bytes, cudaStream_t stream, const std::string& what, const char* kind) {
  if (gemm_scratch_bytes(n, cols) > scratch_bytes) {
    throw RuntimeError(what + ": " + kind + " of " + std::to_string(n) + " tokens x " + std::to_string(cols) +
                       " inputs needs " + std::to_string(gemm_scratch_bytes(n, cols)) + " bytes of scratch, has " +
                       std::to_string(scratch_bytes));
  }
  launch_convert_rows(x, n, cols, ldx, dtype, scratch, stream);  // xh (n, cols) in the weight dtype
  PLEXUS_CUDA_CHECK(cudaGetLastError(), what + " converting GEMM input");
}

}  // namespace

void gemm_cublas(cublasContext* handle, DType dtype, const MatmulTarget* targets, int count, std::int64_t cols,
                 const float* x, std::int64_t n, std::int64_t ldx, void* scratch, std::size_t scratch_bytes,
                 cudaStream_t stream, const std::string& what) {
  if (n <= 0 || count <= 0 || cols <= 0) return;
  if (dtype_is_block(dtype)) {
    throw RuntimeError(what + ": " + std::string(dtype_name(dtype)) + " weights take gemm_cublas_blocks");
  }
  const float one = 1.0f, zero = 0.0f;
  if (dtype == DType::kF32) {
    for (int i = 0; i < count; ++i) {
      const MatmulTarget& m = targets[i];
      if (m.rows == 0) continue;
      PLEXUS_CUDA_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m.rows), static_cast<int>(n),
                                    static_cast<int>(cols), &one, static_cast<const float*>(m.w),
                                    static_cast<int>(cols), x, static_cast<int>(ldx), &zero, m.y,
                                    static_cast<int>(m.ldy)),
                        what + " f32 GEMM " + std::to_string(n) + "x" + std::to_string(m.rows) + "x" +
                            std::to_string(cols));
    }
    return;
  }
  convert_gemm_input(x, n, cols, ldx, dtype, scratch, scratch_bytes, stream, what, "GEMM");
  const cudaDataType_t t = dtype == DType::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
  for (int i = 0; i < count; ++i) {
    const MatmulTarget& m = targets[i];
    if (m.rows == 0) continue;
    PLEXUS_CUDA_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m.rows), static_cast<int>(n),
                                   static_cast<int>(cols), &one, m.w, t, static_cast<int>(cols), scratch, t,
                                   static_cast<int>(cols), &zero, m.y, CUDA_R_32F, static_cast<int>(m.ldy),
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      what + " " + std::string(dtype_name(dtype)) + " GEMM " + std::to_string(n) + "x" +
                          std::to_string(m.rows) + "x" + std::to_string(cols));
  }
}

void gemm_cublas_in_out(cublasContext* handle, DType dtype, const void* w, std::int64_t rows, std::int64_t cols,
                        std::int64_t in_out_ld, const float* x, std::int64_t n, std::int64_t ldx, float* y,
                        std::int64_t ldy, void* scratch, std::size_t scratch_bytes, cudaStream_t stream,
                        const std::string& what) {
  if (n <= 0 || rows <= 0 || cols <= 0) return;
  const std::string shape = std::to_string(n) + "x" + std::to_string(rows) + "x" + std::to_string(cols);
  const float one = 1.0f, zero = 0.0f;
  if (dtype == DType::kF32) {
    PLEXUS_CUDA_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(n),
                                  static_cast<int>(cols), &one, static_cast<const float*>(w), static_cast<int>(in_out_ld), x,
                                  static_cast<int>(ldx), &zero, y, static_cast<int>(ldy)),
                      what + " f32 (in, out) GEMM " + shape);
    return;
  }
  if (dtype != DType::kBF16 && dtype != DType::kF16) {
    throw RuntimeError(what + ": " + std::string(dtype_name(dtype)) + " weights stored (in, out): F32, BF16 or F16 only");
  }
  convert_gemm_input(x, n, cols, ldx, dtype, scratch, scratch_bytes, stream, what, "(in, out) GEMM");
  const cudaDataType_t t = dtype == DType::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
  PLEXUS_CUDA_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(n),
                                 static_cast<int>(cols), &one, w, t, static_cast<int>(in_out_ld), scratch, t,
                                 static_cast<int>(cols), &zero, y, CUDA_R_32F, static_cast<int>(ldy), CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT),
                    what + " " + std::string(dtype_name(dtype)) + " (in, out) GEMM " + shape);
}

}  // namespace plexus::cuda
