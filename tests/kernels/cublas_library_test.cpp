// cuBLAS is loaded on the first cuBLAS call, not at start-up (kernels/cuda/cublas_library.cpp):
// the plexus binary does not need libcublas, and plexus's entry points forward to the library.
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace plexus {
namespace {

// The dynamic loader lists what it loads before main() (what ldd prints) and exits.
TEST(CublasLibrary, PlexusStartsWithoutLoadingCublas) {
  const testing::ProcessResult r = testing::run_command("env LD_TRACE_LOADED_OBJECTS=1 " + testing::shell_quote(PLEXUS_BINARY));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("libc.so"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("libcublas"), std::string::npos) << r.out;
}

TEST(CublasLibrary, EntryPointsForwardToTheLibrary) {
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  cublasHandle_t h = nullptr;
  const cublasStatus_t s = cublasCreate(&h);
  if (s == CUBLAS_STATUS_SUCCESS) {  // a GPU
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
  } else {  // none: the library's own refusal, which it names
    EXPECT_EQ(std::string(cublasGetStatusName(s)).rfind("CUBLAS_STATUS_", 0), 0u) << cublasGetStatusName(s);
    EXPECT_STRNE(cublasGetStatusString(s), "");
  }
}

}  // namespace
}  // namespace plexus
