// Which collective the ranks of one tensor-parallel group on CUDA GPUs sum through: the CUDA
// in-process group (comm/cuda/cuda_in_process_group.h) when ranks share a GPU — NCCL refuses two
// ranks on one GPU — or NCCL when every rank has a GPU of its own and NCCL can be loaded. A pure
// function (no GPU needed), so the rule is unit-tested anywhere.
#pragma once
#include <span>
#include <string>

namespace plexus {

enum class GpuCollective { kCudaInProcess, kNccl };

struct GpuCollectiveChoice {
  GpuCollective kind = GpuCollective::kCudaInProcess;
  std::string reason;  // for the run's report: "the 2 ranks share GPU 0 (NCCL refuses ...)"
};

// "cuda in-process" or "nccl" (as Collective::kind() says it).
const char* gpu_collective_name(GpuCollective c);

// `gpus`: rank r's physical GPU. `nccl_error`: empty when NCCL is usable, else why it is not
// ("this plexus was built without NCCL", the loader's message). `forced`: "" to choose, or the
// value of PLEXUS_TP_COLLECTIVE ("cuda" or "nccl"). InputError naming PLEXUS_TP_COLLECTIVE for
// another value, or for "nccl" where NCCL cannot serve (ranks sharing a GPU, NCCL missing).
GpuCollectiveChoice choose_gpu_collective(std::span<const int> gpus, const std::string& nccl_error, const std::string& forced);

}  // namespace plexus
