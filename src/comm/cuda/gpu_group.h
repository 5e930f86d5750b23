// The collectives of one tensor-parallel group whose ranks compute on CUDA GPUs in this process:
// the CUDA in-process group or NCCL, as choose_gpu_collective (comm/gpu_collective_choice.h)
// decides from the ranks' GPUs, NCCL's presence and PLEXUS_TP_COLLECTIVE.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/cuda/cuda_rank.h"
#include "comm/gpu_collective_choice.h"
#include "comm/rank_group.h"

namespace plexus::cuda {

struct GpuGroup {
  std::unique_ptr<RankGroup> group;
  GpuCollectiveChoice choice;
};

// Empty when NCCL can serve, else why not ("this plexus was built without NCCL (...)", or the
// loader's message).
std::string nccl_unavailable_reason();

// Rank r computes at places[r]. InputError for a bad PLEXUS_TP_COLLECTIVE; RuntimeError when the
// chosen collective cannot be made (no peer access, NCCL's refusal).
GpuGroup make_gpu_group(std::vector<CudaRankPlace> places);

}  // namespace plexus::cuda
