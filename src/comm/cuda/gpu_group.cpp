// GPUs -> CudaInProcessGroup or NcclGroup.
#include "comm/cuda/gpu_group.h"

#include <cstdlib>
#include <set>

#include "comm/cuda/cuda_in_process_group.h"
#ifdef PLEXUS_HAVE_NCCL
#include "comm/cuda/nccl_group.h"
#include "comm/cuda/nccl_library.h"
#endif

namespace plexus::cuda {

std::string nccl_unavailable_reason() {
#ifdef PLEXUS_HAVE_NCCL
  std::string why;
  return NcclLibrary::find(&why) != nullptr ? std::string() : why;
#else
  return "this plexus was built without NCCL (CMake found no nccl.h beside the CUDA toolkit)";
#endif
}

GpuGroup make_gpu_group(std::vector<CudaRankPlace> places) {
  std::vector<int> gpus;
  for (const CudaRankPlace& p : places) gpus.push_back(p.gpu);
  const char* env = std::getenv("PLEXUS_TP_COLLECTIVE");
  const std::string forced = env != nullptr ? env : "";
  // NCCL is loaded only where it could serve: a GPU per rank.
  const bool distinct = std::set<int>(gpus.begin(), gpus.end()).size() == gpus.size();
  GpuGroup g;
  g.choice = choose_gpu_collective(gpus, distinct ? nccl_unavailable_reason() : std::string(), forced);
  switch (g.choice.kind) {
    case GpuCollective::kCudaInProcess:
      g.group = std::make_unique<CudaInProcessGroup>(std::move(places));
      break;
    case GpuCollective::kNccl:
#ifdef PLEXUS_HAVE_NCCL
      g.group = std::make_unique<NcclGroup>(std::move(places));
#endif
      break;
  }
  return g;
}

}  // namespace plexus::cuda
