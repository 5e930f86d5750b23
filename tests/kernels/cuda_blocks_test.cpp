// Block-format weights (every one of kBlockFormats) on the GPU against the CPU oracle
// (dequantize_row, then a double dot): the GEMV (1-8 tokens) and the dequantised-f16 cuBLAS path
// of every format over rows 1, 3, 17, 300, cols 256 and 4352, tokens 1, 2, 3, 4, 7, 64 (the
// GEMV in both its shapes); several targets sharing x; the 2-byte-load fallbacks (a weight 2
// bytes off 16-byte alignment, rows whose bytes are no multiple of 16, x rows not 16-byte
// aligned) and MXFP4's byte loads (rows of an odd number of bytes); the embedding gather.
// Outputs are poisoned (NaN) first. Skipped, with the reason, where no GPU is present.
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "block_test_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/matmul.h"

namespace plexus::cuda::test {
namespace {


class CudaBlocks : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_present(&why)) GTEST_SKIP() << why;
    PLEXUS_TEST_CUDA(cudaStreamCreate(&stream_));
    ASSERT_EQ(cublasCreate(&cublas_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasSetStream(cublas_, stream_), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (cublas_) cublasDestroy(cublas_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  void sync() {
    PLEXUS_TEST_CUDA(cudaGetLastError());
    PLEXUS_TEST_CUDA(cudaStreamSynchronize(stream_));
  }

  // One product of `rows_of` targets (rows each) with n tokens; `cublas`: the GEMM path (x and
  // weights rounded to f16 there, so a wider tolerance), else the GEMV; weight_offset bytes in front
  // of each weight, ldx_pad floats past cols in each x row, wscratch bytes of dequantised rows.
  void check(DType t, std::vector<std::int64_t> rows_of, std::int64_t cols, std::int64_t n, bool cublas,
             int weight_offset = 0, std::int64_t ldx_pad = 0, std::size_t wscratch = kDequantScratchBytes) {
    const std::int64_t ldx = cols + ldx_pad;
    const std::vector<float> xh = random_floats(static_cast<std::size_t>(n * ldx), rng_);
    DeviceBuffer<float> x(xh);
    std::vector<std::vector<float>> w_f;
    std::vector<DeviceBuffer<std::uint8_t>> w_dev;
    std::vector<DeviceBuffer<float>> y_dev;
    std::vector<MatmulTarget> targets;
    for (std::int64_t rows : rows_of) {
      const std::vector<std::uint8_t> bytes = testing_blocks::random_block_rows(t, rows, cols, rng_);
      w_f.push_back(testing_blocks::dequantized(t, bytes, rows, cols));
      std::vector<std::uint8_t> padded(static_cast<std::size_t>(weight_offset), 0);
      padded.insert(padded.end(), bytes.begin(), bytes.end());
      w_dev.emplace_back(padded);
      const std::int64_t ldy = rows + 3;
      y_dev.emplace_back(static_cast<std::size_t>(n * ldy));
      y_dev.back().poison();
      targets.push_back(MatmulTarget{w_dev.back().get() + weight_offset, rows, y_dev.back().get(), ldy});
    }
    if (cublas) {
      DeviceBuffer<std::uint8_t> xs(gemm_scratch_bytes(n, cols)), ws(wscratch);
      gemm_cublas_blocks(cublas_, t, targets.data(), static_cast<int>(targets.size()), cols, x.get(), n, ldx, xs.get(),
                         xs.size(), ws.get(), ws.size(), stream_, "test");
      sync();
    } else {
      launch_gemv(t, targets.data(), static_cast<int>(targets.size()), cols, x.get(), n, ldx, stream_);
      sync();
    }
    for (std::size_t p = 0; p < targets.size(); ++p) {
      const std::int64_t rows = rows_of[p], ldy = targets[p].ldy;
      const std::vector<float> y = y_dev[p].download();
      for (std::int64_t tok = 0; tok < n; ++tok) {
        for (std::int64_t r = 0; r < rows; ++r) {
          double want = 0, mag = 0;
          for (std::int64_t c = 0; c < cols; ++c) {
            double w = w_f[p][static_cast<std::size_t>(r * cols + c)];
            double xv = xh[static_cast<std::size_t>(tok * ldx + c)];
            if (cublas) {
              w = round_to(static_cast<float>(w), DType::kF16);
              xv = round_to(static_cast<float>(xv), DType::kF16);
            }
            want += w * xv;
            mag += std::fabs(w * xv);
          }
          const double got = y[static_cast<std::size_t>(tok * ldy + r)];
          const double tol = (cublas ? 1e-3 : 2e-5) * mag + 1e-6;
          ASSERT_TRUE(std::fabs(got - want) <= tol)
              << dtype_name(t) << (cublas ? " cuBLAS" : " GEMV") << " target " << p << " rows " << rows << " cols "
              << cols << " tokens " << n << ": y[" << tok << "][" << r << "] = " << got << ", want " << want
              << " (tolerance " << tol << ")";
        }
        // Columns past the rows keep their poison.
        for (std::int64_t r = rows; r < ldy; ++r) {
          ASSERT_TRUE(all_bits_set(y[static_cast<std::size_t>(tok * ldy + r)])) << "y[" << tok << "][" << r << "] written";
        }
      }
    }
  }

  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::mt19937 rng_{4321};
};

// Both GEMV shapes (several rows a warp; the staged one row a warp), restored after.
template <typename Fn>
void for_each_gemv_shape(Fn fn) {
  const BlockGemvShape before = block_gemv_shape();
  for (const BlockGemvShape shape : {BlockGemvShape::kRows, BlockGemvShape::kStaged}) {
    set_block_gemv_shape(shape);
    SCOPED_TRACE(shape == BlockGemvShape::kRows ? "rows shape" : "staged shape");
    fn();
  }
  set_block_gemv_shape(before);
}

TEST_F(CudaBlocks, GemvOfEveryFormatMatchesTheDequantizedProduct) {
  for_each_gemv_shape([&] {
    for (DType t : kBlockFormats)
      for (std::int64_t rows : {1, 3, 17, 300})
        for (std::int64_t cols : {256, 4352})
          for (std::int64_t n : {1, 2, 3, 4, 7}) check(t, {rows}, cols, n, false);
  });
}

TEST_F(CudaBlocks, CublasPathOfEveryFormatMatchesTheDequantizedProduct) {
  for (DType t : kBlockFormats)
    for (std::int64_t rows : {1, 3, 17, 300})
      for (std::int64_t cols : {256, 4352})
        for (std::int64_t n : {1, 7, 64}) check(t, {rows}, cols, n, true);
}

// q/k/v-like targets in one launch (the GEMV) and one call (cuBLAS).
TEST_F(CudaBlocks, SeveralTargetsShareX) {
  for_each_gemv_shape([&] {
    for (DType t : kBlockFormats)
      for (std::int64_t n : {1, 2, 8}) check(t, {300, 17, 3}, 512, n, false);
  });
  for (DType t : kBlockFormats) check(t, {300, 17, 3}, 512, 9, true);
}

// The 2-byte-load fallbacks: weights 2 bytes past 16-byte alignment, rows whose bytes are no
// multiple of 16 (32-weight blocks with 96 columns: 54 to 102 bytes; Q2_K, Q3_K, Q6_K with 512:
// 168, 220, 420 bytes), x rows 1 float off alignment.
TEST_F(CudaBlocks, UnalignedWeightsRowsAndInputs) {
  for (DType t : kBlockFormats) {
    const std::int64_t cols = dtype_block_elems(t) == 32 ? 96 : 512;
    for (std::int64_t n : {1, 3}) {
      check(t, {17}, cols, n, false, 2, 0);
      check(t, {17}, cols, n, false, 0, 1);
      check(t, {17, 5}, 4352, n, false, 2, 1);
    }
  }
}

// MXFP4 at gpt-oss's width (2880 inputs: rows of 90 blocks, 1530 bytes, through the 2-byte loads)
// and with rows of an odd number of blocks (2912: 1547 bytes, every other row at an odd address,
// through the byte loads).
TEST_F(CudaBlocks, Mxfp4RowsOfGptOssWidth) {
  for_each_gemv_shape([&] {
    for (std::int64_t cols : {2880, 2912})
      for (std::int64_t n : {1, 4, 8}) check(DType::kMXFP4, {300, 17}, cols, n, false);
  });
  for (std::int64_t cols : {2880, 2912}) check(DType::kMXFP4, {300}, cols, 64, true);
}

// A weight scratch smaller than the matrix: the rows go through cuBLAS in chunks (300 rows of
// 4352 columns in chunks of 7).
TEST_F(CudaBlocks, CublasPathInRowChunks) {
  for (DType t : kBlockFormats) check(t, {300}, 4352, 5, true, 0, 0, 7 * 4352 * 2 + 100);
}

TEST_F(CudaBlocks, EmbedGatherDequantizesRows) {
  for (DType t : kBlockFormats) {
    const std::int64_t vocab = 37, d = dtype_block_elems(t) == 32 ? 4352 + 32 : 4352;
    const std::vector<std::uint8_t> bytes = testing_blocks::random_block_rows(t, vocab, d, rng_);
    const std::vector<float> want_rows = testing_blocks::dequantized(t, bytes, vocab, d);
    DeviceBuffer<std::uint8_t> table(bytes);
    const std::vector<std::int32_t> ids = {5, 0, 36, 5, -1, 37};  // the last two out of range: NaN rows
    DeviceBuffer<std::int32_t> ids_d(ids);
    const std::int64_t n = static_cast<std::int64_t>(ids.size());
    DeviceBuffer<float> x(static_cast<std::size_t>(n * d));
    x.poison();
    launch_embed(table.get(), t, vocab, d, ids_d.get(), n, x.get(), stream_);
    sync();
    const std::vector<float> got = x.download();
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t id = ids[static_cast<std::size_t>(i)];
      for (std::int64_t c = 0; c < d; ++c) {
        const float g = got[static_cast<std::size_t>(i * d + c)];
        if (id < 0 || id >= vocab) {
          ASSERT_TRUE(std::isnan(g) && !all_bits_set(g)) << dtype_name(t) << " out-of-range id " << id;
          continue;
        }
        const float w = want_rows[static_cast<std::size_t>(id * d + c)];
        ASSERT_NEAR(g, w, 1e-6 * std::fabs(w) + 1e-9) << dtype_name(t) << " id " << id << " column " << c;
      }
    }
  }
}

}  // namespace
}  // namespace plexus::cuda::test
