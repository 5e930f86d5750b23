// GPU: the cuBLAS product against weights stored (in, out) and read in place
// (gemm_cublas_in_out, GPT-2's Conv1D weights) against the kernels/ref oracle, on odd shapes and
// column slices; skips without a GPU.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "kernels/cuda/matmul.h"
#include "kernels/ref/ref_kernels.h"

namespace plexus::cuda::test {
namespace {

class CudaInOutMatmul : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_present(&why)) GTEST_SKIP() << why;
    PLEXUS_TEST_CUDA(cudaStreamCreate(&stream_));
    ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasSetStream(handle_, stream_), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (handle_) cublasDestroy(handle_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  // Columns [pad, pad + rows) of a stored (cols, rows + 2·pad) matrix; x rows ldx = cols + 3, y rows ldy = rows + 2.
  void run(DType dtype, std::int64_t n, std::int64_t rows, std::int64_t cols, std::int64_t pad) {
    const std::int64_t ld = rows + 2 * pad, ldx = cols + 3, ldy = rows + 2;
    const std::vector<std::uint8_t> stored = to_dtype_bytes(random_floats(static_cast<std::size_t>(cols * ld), rng_), dtype);
    const std::vector<float> xh = random_floats(static_cast<std::size_t>(n * ldx), rng_);
    std::vector<float> x_used(static_cast<std::size_t>(n * cols));  // rounded to the weight dtype as the GEMM reads it
    for (std::int64_t t = 0; t < n; ++t)
      for (std::int64_t c = 0; c < cols; ++c)
        x_used[static_cast<std::size_t>(t * cols + c)] = round_to(xh[static_cast<std::size_t>(t * ldx + c)], dtype);
    DeviceBuffer<std::uint8_t> w(stored);
    DeviceBuffer<float> x(xh), y(static_cast<std::size_t>(n * ldy));
    y.poison();
    const std::size_t scratch_bytes = gemm_scratch_bytes(n, cols);
    DeviceBuffer<std::uint8_t> scratch(scratch_bytes);
    const std::size_t es = dtype_size(dtype);
    gemm_cublas_in_out(handle_, dtype, w.get() + pad * es, rows, cols, ld, x.get(), n, ldx, y.get(), ldy, scratch.get(),
                       scratch_bytes, stream_, "test");
    PLEXUS_TEST_CUDA(cudaStreamSynchronize(stream_));
    WeightMatrix view{stored.data() + pad * es, dtype, rows, cols};
    view.in_out_ld = ld;
    std::vector<float> want(static_cast<std::size_t>(n * rows));
    ref::matmul(view, x_used.data(), n, want.data());
    const std::vector<float> yh = y.download();
    std::vector<float> got(want.size());
    for (std::int64_t t = 0; t < n; ++t) {
      for (std::int64_t r = 0; r < rows; ++r) got[static_cast<std::size_t>(t * rows + r)] = yh[static_cast<std::size_t>(t * ldy + r)];
      for (std::int64_t r = rows; r < ldy; ++r) ASSERT_TRUE(all_bits_set(yh[static_cast<std::size_t>(t * ldy + r)])) << "wrote past the rows";
    }
    const double tol = 3e-6 * std::sqrt(static_cast<double>(cols)) + 2e-6 * static_cast<double>(cols) / 64;
    EXPECT_TRUE(close(got, want, tol, 1e-5)) << dtype_name(dtype) << " n=" << n << " rows=" << rows << " cols=" << cols
                                             << " pad=" << pad;
  }
  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  std::mt19937 rng_{38};
};

TEST_F(CudaInOutMatmul, MatchesOracleOnOddShapesAndColumnSlices) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (std::int64_t n : {1, 2, 5, 17}) {
      for (std::int64_t rows : {1, 3, 64, 301}) {
        for (std::int64_t cols : {1, 17, 768}) {
          for (std::int64_t pad : {0, 5}) run(dtype, n, rows, cols, pad);
        }
      }
    }
  }
}

}  // namespace
}  // namespace plexus::cuda::test
