// The rule: shared GPU -> CUDA in-process; a GPU per rank -> NCCL when it loads.
#include "comm/gpu_collective_choice.h"

#include <set>

#include "core/error.h"

namespace plexus {

const char* gpu_collective_name(GpuCollective c) {
  switch (c) {
    case GpuCollective::kCudaInProcess:
      return "cuda in-process";
    case GpuCollective::kNccl:
      return "nccl";
  }
  return "?";
}

GpuCollectiveChoice choose_gpu_collective(std::span<const int> gpus, const std::string& nccl_error, const std::string& forced) {
  if (!forced.empty() && forced != "cuda" && forced != "nccl") {
    throw InputError("PLEXUS_TP_COLLECTIVE=" + forced + ": expected cuda (in-process, peer reads) or nccl; unset it to choose by the GPUs");
  }
  const std::set<int> distinct(gpus.begin(), gpus.end());
  const std::string ranks = std::to_string(gpus.size()) + " ranks";
  std::string list;
  for (int g : gpus) list += (list.empty() ? "" : ",") + std::to_string(g);
  const bool shared = distinct.size() < gpus.size();
  if (forced == "nccl") {
    if (shared) {
      throw InputError("PLEXUS_TP_COLLECTIVE=nccl: the " + ranks + " are on GPUs " + list +
                       ", and NCCL refuses two ranks on one GPU; unset it (the CUDA in-process group serves shared GPUs)");
    }
    if (!nccl_error.empty()) throw InputError("PLEXUS_TP_COLLECTIVE=nccl: NCCL is not usable: " + nccl_error + "; unset it");
    return {GpuCollective::kNccl, "PLEXUS_TP_COLLECTIVE=nccl (the " + ranks + " on GPUs " + list + ")"};
  }
  if (forced == "cuda") {
    return {GpuCollective::kCudaInProcess, "PLEXUS_TP_COLLECTIVE=cuda (the " + ranks + " on GPUs " + list + ")"};
  }
  if (distinct.size() == 1) {
    return {GpuCollective::kCudaInProcess,
            "the " + ranks + " share GPU " + std::to_string(*distinct.begin()) + " (NCCL refuses two ranks on one GPU)"};
  }
  if (shared) {
    return {GpuCollective::kCudaInProcess, "the " + ranks + " are on GPUs " + list +
                                               ", some sharing one (NCCL refuses that): peer reads between the GPUs"};
  }
  if (!nccl_error.empty()) {
    return {GpuCollective::kCudaInProcess, "the " + ranks + " are on GPUs " + list + " but NCCL is not usable (" + nccl_error +
                                               "): peer reads between the GPUs"};
  }
  return {GpuCollective::kNccl, "the " + ranks + " are on GPUs " + list + ", one each"};
}

}  // namespace plexus
