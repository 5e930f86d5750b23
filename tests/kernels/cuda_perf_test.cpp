// Rates of the CUDA kernels on the GPU at hand, printed for the record (no thresholds: the
// benchmarks own the targets): GEMV bandwidth against a device copy, the cuBLAS GEMM path
// against bare cuBLAS, prefill attention tiled and split-context. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/ceilings.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/prefill_attention.h"

namespace plexus::cuda::test {
namespace {

class CudaPerf : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_present(&why)) GTEST_SKIP() << why;
    PLEXUS_TEST_CUDA(cudaStreamCreate(&stream_));
    PLEXUS_TEST_CUDA(cudaEventCreate(&ev_[0]));
    PLEXUS_TEST_CUDA(cudaEventCreate(&ev_[1]));
  }
  void TearDown() override {
    if (ev_[0]) cudaEventDestroy(ev_[0]);
    if (ev_[1]) cudaEventDestroy(ev_[1]);
    if (stream_) cudaStreamDestroy(stream_);
  }
  // Mean seconds of `op` over `reps` runs after two warm-ups.
  double seconds(int reps, const std::function<void()>& op) {
    op();
    op();
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaEventRecord(ev_[0], stream_), cudaSuccess);
    for (int i = 0; i < reps; ++i) op();
    EXPECT_EQ(cudaEventRecord(ev_[1], stream_), cudaSuccess);
    EXPECT_EQ(cudaEventSynchronize(ev_[1]), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    float ms = 0;
    EXPECT_EQ(cudaEventElapsedTime(&ms, ev_[0], ev_[1]), cudaSuccess);
    return ms * 1e-3 / reps;
  }
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ev_[2] = {nullptr, nullptr};
};

// The GEMV and the cuBLAS path (x rounded to bf16 first, as CudaOps does from 4 tokens) on the
// same shapes, 1-8 tokens.
TEST_F(CudaPerf, GemvBandwidthAgainstACopy) {
  const double copy = cuda_copy_gbps(std::size_t{1} << 30, stream_);
  std::printf("device-to-device copy: %.0f GB/s (read + write)\n", copy);
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetStream(h, stream_), CUBLAS_STATUS_SUCCESS);
  struct Shape {
    std::int64_t rows, cols;
  };
  for (const Shape s : {Shape{6144, 4096}, Shape{4096, 4096}, Shape{28672, 4096}, Shape{4096, 14336}, Shape{128256, 2048}}) {
    DeviceBuffer<std::uint16_t> w(static_cast<std::size_t>(s.rows * s.cols));
    PLEXUS_TEST_CUDA(cudaMemset(w.get(), 0x3c, w.size() * 2));
    DeviceBuffer<float> x(static_cast<std::size_t>(8 * s.cols)), y(static_cast<std::size_t>(8 * s.rows));
    PLEXUS_TEST_CUDA(cudaMemset(x.get(), 0, x.size() * 4));
    DeviceBuffer<std::uint8_t> scratch(gemm_scratch_bytes(8, s.cols));
    const double bytes = static_cast<double>(s.rows * s.cols * 2);
    for (std::int64_t n : {1, 2, 4, 8}) {
      const MatmulTarget t{w.get(), s.rows, y.get(), s.rows};
      const double sec_gemv = seconds(20, [&] { launch_gemv(DType::kBF16, &t, 1, s.cols, x.get(), n, s.cols, stream_); });
      const double sec_blas = n == 1 ? 0.0 : seconds(20, [&] {
        gemm_cublas(h, DType::kBF16, &t, 1, s.cols, x.get(), n, s.cols, scratch.get(), scratch.size(), stream_, "perf");
      });
      const double gbps = bytes / sec_gemv * 1e-9;
      std::printf("GEMV bf16 %lldx%lld n=%lld: %.1f us, %.0f GB/s = %.0f%% of the copy", static_cast<long long>(s.rows),
                  static_cast<long long>(s.cols), static_cast<long long>(n), sec_gemv * 1e6, gbps, 100 * gbps / copy);
      if (n > 1) std::printf(" | cuBLAS path %.1f us = %.0f%%", sec_blas * 1e6, 100 * bytes / sec_blas * 1e-9 / copy);
      std::printf("\n");
      EXPECT_GT(gbps, 0);
    }
  }
  cublasDestroy(h);
}

// The block-format GEMV (and bf16 for reference) on large matrices, 1-3 tokens: weight bytes
// read per second against the copy bandwidth (the GEMV's ceiling: it reads each byte once); and
// the dequantise-then-cuBLAS path at 512 tokens. Lines start with "BLOCK-GEMV" / "BLOCK-GEMM"
// (scripts/gpu-check-quant.sh collects them).
TEST_F(CudaPerf, BlockGemvBandwidthAgainstACopy) {
  const double copy = cuda_copy_gbps(std::size_t{1} << 30, stream_);
  std::printf("BLOCK-GEMV copy ceiling: %.0f GB/s (device-to-device, read + write)\n", copy);
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetStream(h, stream_), CUBLAS_STATUS_SUCCESS);
  struct Shape {
    std::int64_t rows, cols;
  };
  for (const Shape s : {Shape{8192, 8192}, Shape{4096, 14336}, Shape{14336, 4096}}) {
    DeviceBuffer<float> x(static_cast<std::size_t>(512 * s.cols)), y(static_cast<std::size_t>(512 * s.rows));
    PLEXUS_TEST_CUDA(cudaMemset(x.get(), 0, x.size() * 4));
    DeviceBuffer<std::uint8_t> xs(gemm_scratch_bytes(512, s.cols)), ws(kDequantScratchBytes);
    std::vector<DType> types{DType::kBF16};
    types.insert(types.end(), std::begin(kBlockFormats), std::end(kBlockFormats));
    for (DType t : types) {
      const std::int64_t bytes_i = s.rows * dtype_row_bytes(t, s.cols);
      DeviceBuffer<std::uint8_t> w(static_cast<std::size_t>(bytes_i));
      PLEXUS_TEST_CUDA(cudaMemset(w.get(), 0x3c, w.size()));  // f16 scales 0x3c3c: 1.06
      const MatmulTarget target{w.get(), s.rows, y.get(), s.rows};
      const double bytes = static_cast<double>(bytes_i);
      // Block formats: the default shape (several rows a warp) and the earlier staged one.
      const std::vector<BlockGemvShape> shapes =
          dtype_is_block(t) ? std::vector<BlockGemvShape>{BlockGemvShape::kRows, BlockGemvShape::kStaged}
                            : std::vector<BlockGemvShape>{BlockGemvShape::kRows};
      const BlockGemvShape before = block_gemv_shape();
      for (const BlockGemvShape shape : shapes) {
        set_block_gemv_shape(shape);
        const char* label = !dtype_is_block(t) ? "" : shape == BlockGemvShape::kRows ? " rows" : " staged";
        for (std::int64_t n : {1, 2, 3}) {
          const double sec = seconds(20, [&] { launch_gemv(t, &target, 1, s.cols, x.get(), n, s.cols, stream_); });
          const double gbps = bytes / sec * 1e-9;
          std::printf("BLOCK-GEMV %-6s%-7s %lldx%lld n=%lld: %8.1f us %6.0f GB/s %5.2f of the copy\n",
                      std::string(dtype_name(t)).c_str(), label, static_cast<long long>(s.rows),
                      static_cast<long long>(s.cols), static_cast<long long>(n), sec * 1e6, gbps, gbps / copy);
          EXPECT_GT(gbps, 0);
        }
      }
      set_block_gemv_shape(before);
      const std::int64_t n = 512;
      const double sec = seconds(5, [&] {
        if (dtype_is_block(t)) {
          gemm_cublas_blocks(h, t, &target, 1, s.cols, x.get(), n, s.cols, xs.get(), xs.size(), ws.get(), ws.size(),
                             stream_, "perf");
        } else {
          gemm_cublas(h, t, &target, 1, s.cols, x.get(), n, s.cols, xs.get(), xs.size(), stream_, "perf");
        }
      });
      std::printf("BLOCK-GEMM %-6s %lldx%lld n=%lld: %8.1f us %6.0f TFLOP/s\n", std::string(dtype_name(t)).c_str(),
                  static_cast<long long>(s.rows), static_cast<long long>(s.cols), static_cast<long long>(n), sec * 1e6,
                  2.0 * static_cast<double>(n * s.rows * s.cols) / sec * 1e-12);
    }
  }
  cublasDestroy(h);
}

TEST_F(CudaPerf, CublasPathAgainstBareCublas) {
  const int m = 4096, n = 2048, k = 4096;
  const double bare = cuda_gemm_bf16_tflops(m, n, k, stream_);
  DeviceBuffer<std::uint16_t> w(static_cast<std::size_t>(m) * k);
  PLEXUS_TEST_CUDA(cudaMemset(w.get(), 0x3c, w.size() * 2));
  DeviceBuffer<float> x(static_cast<std::size_t>(n) * k), y(static_cast<std::size_t>(n) * m);
  PLEXUS_TEST_CUDA(cudaMemset(x.get(), 0, x.size() * 4));
  DeviceBuffer<std::uint8_t> scratch(gemm_scratch_bytes(n, k));
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetStream(h, stream_), CUBLAS_STATUS_SUCCESS);
  const MatmulTarget t{w.get(), m, y.get(), m};
  const double sec = seconds(10, [&] {
    gemm_cublas(h, DType::kBF16, &t, 1, k, x.get(), n, k, scratch.get(), scratch.size(), stream_, "perf");
  });
  cublasDestroy(h);
  const double tflops = 2.0 * m * n * k / sec * 1e-12;
  std::printf("GEMM path bf16 %dx%dx%d (with the f32->bf16 conversion): %.0f TFLOP/s; bare cuBLAS %.0f TFLOP/s (%.0f%%)\n",
              m, n, k, tflops, bare, 100 * tflops / bare);
}

TEST_F(CudaPerf, PrefillAttentionTiledAndSplit) {
  const std::int64_t heads = 32, kv = 8, hd = 128, n = 2048;
  const AttentionGeometry g{heads, kv, hd, 0, 0.088f};
  const std::int64_t cache_floats = 2 * kv * n * hd;  // one layer
  DeviceBuffer<float> cache(static_cast<std::size_t>(cache_floats)), q(static_cast<std::size_t>(n * heads * hd));
  DeviceBuffer<float> out(q.size());
  PLEXUS_TEST_CUDA(cudaMemset(cache.get(), 0, cache.size() * 4));
  PLEXUS_TEST_CUDA(cudaMemset(q.get(), 0, q.size() * 4));
  std::vector<TokenSlot> slots;
  for (std::int64_t t = 0; t < n; ++t) slots.push_back(TokenSlot{cache.get(), n, 0, static_cast<std::int32_t>(t)});
  std::vector<QueryTile> tiles(static_cast<std::size_t>(n));
  const std::int64_t n_tiles = make_query_tiles(slots.data(), n, prefill_tile_tokens(g), tiles.data());
  tiles.resize(static_cast<std::size_t>(n_tiles));
  DeviceBuffer<TokenSlot> sl(slots);
  DeviceBuffer<QueryTile> tl(tiles);
  const double flops = 4.0 * heads * hd * (static_cast<double>(n) * (n + 1) / 2);  // q·k and p·v, causal
  const double tiled = seconds(3, [&] { launch_prefill_attention(q.get(), sl.get(), tl.get(), n_tiles, g, 0, out.get(), stream_); });
  const std::int64_t floats = attention_partial_floats(g, n, 1024);
  DeviceBuffer<float> partials(static_cast<std::size_t>(floats));
  const AttentionSplit split = attention_split(g, n, n, 528);
  const double splitk = seconds(3, [&] {
    launch_attention(q.get(), sl.get(), n, g, split, 0, partials.get(), floats, out.get(), stream_);
  });
  const double tc = seconds(3, [&] {
    launch_prefill_attention_bf16(q.get(), sl.get(), tl.get(), n_tiles, g, 0, out.get(), stream_);
  });
  // The staged bf16 path: conversion pass + cp.async kernel (timed together, and the kernel alone).
  std::vector<KvSpan> spans(static_cast<std::size_t>(n_tiles));
  std::vector<std::int32_t> offsets(static_cast<std::size_t>(n_tiles));
  std::int64_t n_spans = 0;
  const std::int64_t kv_keys = make_kv_spans(slots.data(), tiles.data(), n_tiles, spans.data(), offsets.data(), &n_spans);
  spans.resize(static_cast<std::size_t>(n_spans));
  DeviceBuffer<std::uint8_t> kvb(prefill_kv_bf16_bytes(g, kv_keys));
  DeviceBuffer<KvSpan> sp(spans);
  DeviceBuffer<std::int32_t> offs(offsets);
  const double st = seconds(3, [&] {
    launch_prefill_kv_bf16(sl.get(), sp.get(), n_spans, kv_keys, g, 0, kvb.get(), kv_keys, stream_);
    launch_prefill_attention_bf16_staged(q.get(), sl.get(), tl.get(), offs.get(), n_tiles, g, kvb.get(), kv_keys,
                                         out.get(), stream_);
  });
  const double st_kernel = seconds(3, [&] {
    launch_prefill_attention_bf16_staged(q.get(), sl.get(), tl.get(), offs.get(), n_tiles, g, kvb.get(), kv_keys,
                                         out.get(), stream_);
  });
  std::printf("prefill attention %lld tokens, 32/8 heads of 128: tiled f32 %.2f ms (%.1f TFLOP/s), split-context %.2f ms (%.1f TFLOP/s), tensor-core bf16 in-loop %.3f ms (%.1f TFLOP/s), bf16 staged %.3f ms (%.1f TFLOP/s; kernel alone %.3f ms)\n",
              static_cast<long long>(n), tiled * 1e3, flops / tiled * 1e-12, splitk * 1e3, flops / splitk * 1e-12,
              tc * 1e3, flops / tc * 1e-12, st * 1e3, flops / st * 1e-12, st_kernel * 1e3);
  {  // head_dim 64, 32 / 32 heads (no GQA), same tokens: the bf16 kernel only
    const AttentionGeometry g64{32, 32, 64, 0, 0.125f};
    DeviceBuffer<float> cache64(static_cast<std::size_t>(2 * 32 * n * 64)), q64(static_cast<std::size_t>(n * 32 * 64));
    DeviceBuffer<float> out64(q64.size());
    PLEXUS_TEST_CUDA(cudaMemset(cache64.get(), 0, cache64.size() * 4));
    PLEXUS_TEST_CUDA(cudaMemset(q64.get(), 0, q64.size() * 4));
    std::vector<TokenSlot> slots64;
    for (std::int64_t t = 0; t < n; ++t) slots64.push_back(TokenSlot{cache64.get(), n, 0, static_cast<std::int32_t>(t)});
    std::vector<QueryTile> tiles64(static_cast<std::size_t>(n));
    const std::int64_t n_tiles64 = make_query_tiles(slots64.data(), n, prefill_tile_tokens(g64), tiles64.data());
    tiles64.resize(static_cast<std::size_t>(n_tiles64));
    DeviceBuffer<TokenSlot> sl64(slots64);
    DeviceBuffer<QueryTile> tl64(tiles64);
    const double flops64 = 4.0 * 32 * 64 * (static_cast<double>(n) * (n + 1) / 2);
    const double f32_64 = seconds(3, [&] {
      launch_prefill_attention(q64.get(), sl64.get(), tl64.get(), n_tiles64, g64, 0, out64.get(), stream_);
    });
    const double tc64 = seconds(3, [&] {
      launch_prefill_attention_bf16(q64.get(), sl64.get(), tl64.get(), n_tiles64, g64, 0, out64.get(), stream_);
    });
    std::vector<KvSpan> spans64(static_cast<std::size_t>(n_tiles64));
    std::vector<std::int32_t> offsets64(static_cast<std::size_t>(n_tiles64));
    std::int64_t n_spans64 = 0;
    const std::int64_t kv_keys64 =
        make_kv_spans(slots64.data(), tiles64.data(), n_tiles64, spans64.data(), offsets64.data(), &n_spans64);
    spans64.resize(static_cast<std::size_t>(n_spans64));
    DeviceBuffer<std::uint8_t> kvb64(prefill_kv_bf16_bytes(g64, kv_keys64));
    DeviceBuffer<KvSpan> sp64(spans64);
    DeviceBuffer<std::int32_t> offs64(offsets64);
    const double st64 = seconds(3, [&] {
      launch_prefill_kv_bf16(sl64.get(), sp64.get(), n_spans64, kv_keys64, g64, 0, kvb64.get(), kv_keys64, stream_);
      launch_prefill_attention_bf16_staged(q64.get(), sl64.get(), tl64.get(), offs64.get(), n_tiles64, g64, kvb64.get(),
                                           kv_keys64, out64.get(), stream_);
    });
    std::printf("prefill attention %lld tokens, 32/32 heads of 64: tiled f32 %.2f ms (%.1f TFLOP/s), tensor-core bf16 in-loop %.3f ms (%.1f TFLOP/s), bf16 staged %.3f ms (%.1f TFLOP/s)\n",
                static_cast<long long>(n), f32_64 * 1e3, flops64 / f32_64 * 1e-12, tc64 * 1e3, flops64 / tc64 * 1e-12,
                st64 * 1e3, flops64 / st64 * 1e-12);
  }
  // One decode token at the end of the 2048-token context.
  const double decode = seconds(20, [&] {
    launch_attention(q.get(), sl.get() + (n - 1), 1, g, attention_split(g, 1, n, 528), 0, partials.get(), floats,
                     out.get(), stream_);
  });
  std::printf("decode attention, 1 token over 2048 positions: %.1f us (%.0f GB/s of keys and values)\n", decode * 1e6,
              static_cast<double>(2 * kv * n * hd * 4) / decode * 1e-9);
}

}  // namespace
}  // namespace plexus::cuda::test
