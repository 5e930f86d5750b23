// GPT-2's CUDA kernels (LayerNorm with bias, tanh GELU) against the kernels/ref oracles, on odd
// widths and in place. Skipped, with the reason, where no GPU is present.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/layernorm_gelu.h"
#include "kernels/ref/layernorm_gelu_ref.h"

namespace plexus::cuda::test {
namespace {

class CudaLayernormGelu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_present(&why)) GTEST_SKIP() << why;
    PLEXUS_TEST_CUDA(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  void sync() {
    PLEXUS_TEST_CUDA(cudaGetLastError());
    PLEXUS_TEST_CUDA(cudaStreamSynchronize(stream_));
  }
  cudaStream_t stream_ = nullptr;
  std::mt19937 rng_{38};
};

TEST_F(CudaLayernormGelu, LayernormOddWidthsInPlaceAndNot) {
  for (std::int64_t d : {1, 3, 17, 768, 4097}) {
    const std::int64_t rows = 5;
    std::vector<float> x = random_floats(static_cast<std::size_t>(rows * d), rng_);
    for (float& v : x) v = 3.0f * v + 0.5f;  // a mean away from zero
    const std::vector<float> w = random_floats(static_cast<std::size_t>(d), rng_), b = random_floats(static_cast<std::size_t>(d), rng_);
    std::vector<float> want(x.size());
    ref::layernorm(x.data(), w.data(), b.data(), rows, d, 1e-5, want.data());
    DeviceBuffer<float> xd(x), wd(w), bd(b), y(x.size());
    y.poison();
    launch_layernorm(xd.get(), wd.get(), bd.get(), rows, d, 1e-5f, y.get(), stream_);
    sync();
    EXPECT_TRUE(close(y.download(), want, 1e-5, 1e-5)) << "d=" << d;
    launch_layernorm(xd.get(), wd.get(), bd.get(), rows, d, 1e-5f, xd.get(), stream_);  // in place
    sync();
    EXPECT_TRUE(close(xd.download(), want, 1e-5, 1e-5)) << "in place, d=" << d;
  }
}

TEST_F(CudaLayernormGelu, GeluTanhMatchesOracle) {
  for (std::int64_t n : {1, 17, 4097, 300000}) {
    std::vector<float> x = random_floats(static_cast<std::size_t>(n), rng_);
    for (float& v : x) v *= 6.0f;  // both tails
    std::vector<float> want(x.size());
    ref::gelu_tanh(x.data(), n, want.data());
    DeviceBuffer<float> xd(x);
    launch_gelu_tanh(xd.get(), n, stream_);
    sync();
    EXPECT_TRUE(close(xd.download(), want, 1e-6, 1e-5)) << "n=" << n;
  }
}

}  // namespace
}  // namespace plexus::cuda::test
