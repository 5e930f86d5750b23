// The cuBLAS entry points plexus calls, defined here and forwarded to libcublas loaded with dlopen
// on the first call. Linking libcublas (and the 540 MB libcublasLt it needs) made every plexus
// process spend 0.4-0.8 s and 220 MB of memory loading them before main(), `plexus --version`
// and every CPU run included; now only a process that computes on a GPU loads them.
//
// The definitions have the names and types cublas_v2.h declares (cublasCreate is cublasCreate_v2,
// ...), so call sites stay plain cuBLAS calls, and the compiler checks each signature against
// the header. A call that needs a function not listed here fails to link: add it below.
#include <cublas_v2.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/shared_library.h"

namespace plexus::cuda {
namespace {

struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  // cublas_api.h also has a C++ inline overload of cublasGemmEx: the library's one by its type.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

// The process's cuBLAS, loaded once ($PLEXUS_CUBLAS_LIBRARY, else libcublas.so.MAJOR from the
// loader's path, else from the toolkit plexus was built with). RuntimeError when it cannot be.
const Cublas& cublas() {
  static const Cublas loaded = [] {
    const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    std::vector<std::string> candidates;
    if (const char* e = std::getenv("PLEXUS_CUBLAS_LIBRARY"); e != nullptr && *e != '\0') candidates.emplace_back(e);
    candidates.push_back(soname);
#ifdef PLEXUS_CUDA_LIBRARY_DIR
    candidates.push_back(std::string(PLEXUS_CUDA_LIBRARY_DIR) + "/" + soname);
#endif
    std::string path, why;
    void* handle = open_first_library(candidates, &path, &why);
    if (handle == nullptr) {
      throw RuntimeError("cuBLAS cannot be loaded (" + why + "): install the CUDA toolkit's cuBLAS " +
                         std::to_string(CUBLAS_VER_MAJOR) + " or set PLEXUS_CUBLAS_LIBRARY to its " + soname);
    }
    Cublas b;
    std::string missing;
    resolve_symbol(handle, "cublasCreate_v2", b.create, &missing);
    resolve_symbol(handle, "cublasDestroy_v2", b.destroy, &missing);
    resolve_symbol(handle, "cublasSetStream_v2", b.set_stream, &missing);
    resolve_symbol(handle, "cublasSetWorkspace_v2", b.set_workspace, &missing);
    resolve_symbol(handle, "cublasSetMathMode", b.set_math_mode, &missing);
    resolve_symbol(handle, "cublasSgemm_v2", b.sgemm, &missing);
    resolve_symbol(handle, "cublasGemmEx", b.gemm_ex, &missing);
    resolve_symbol(handle, "cublasGetStatusName", b.status_name, &missing);
    resolve_symbol(handle, "cublasGetStatusString", b.status_string, &missing);
    if (!missing.empty()) throw RuntimeError(path + " lacks " + missing + ": a cuBLAS older than plexus was built for?");
    return b;
  }();
  return loaded;
}

}  // namespace
}  // namespace plexus::cuda

using plexus::cuda::cublas;

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) { return cublas().create(handle); }

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) { return cublas().destroy(handle); }

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) { return cublas().set_stream(handle, stream); }

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  return cublas().set_workspace(handle, workspace, bytes);
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) { return cublas().set_math_mode(handle, mode); }

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  return cublas().sgemm(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  return cublas().gemm_ex(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                          compute, algo);
}

const char* cublasGetStatusName(cublasStatus_t status) { return cublas().status_name(status); }

const char* cublasGetStatusString(cublasStatus_t status) { return cublas().status_string(status); }
