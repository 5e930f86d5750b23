// NCCL collectives for tensor-parallel ranks on distinct GPUs: one process driving several GPUs
// (NcclGroup: ncclCommInitAll, each rank then calls from its own device thread), or one rank per
// process (make_nccl_rank: the ncclUniqueId broadcast over the processes' host collective, MPI).
// Every operation is enqueued on the rank's compute stream, after the kernels launched there
// and before those launched later: stream order is the only synchronisation (the call returns
// before the transfer is done, so CommStats seconds are the time to enqueue, not to transfer).
//
// Summation order: NCCL does not sum in rank order. For a fixed communicator (the same GPUs, the
// same topology, the same NCCL version and environment) and a fixed count, its algorithm (ring or
// tree), chunking and therefore its order of additions are fixed, so results repeat bit for bit
// from run to run and every rank receives the same bits (all-reduce ends with every rank holding
// the one reduced copy); NCCL documents no order across topologies or counts, so the bits may
// differ from the host's InProcessGroup and from the CUDA in-process group.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/cuda/cuda_rank.h"
#include "comm/rank_group.h"

namespace plexus::cuda {

struct NcclAbort;

class NcclGroup : public RankGroup {
 public:
  // One rank per place, each on a GPU of its own (NCCL refuses two ranks on one GPU): the
  // communicators of every rank, made at once (ncclCommInitAll). RuntimeError when NCCL cannot
  // be loaded or refuses (its message).
  explicit NcclGroup(std::vector<CudaRankPlace> places);
  ~NcclGroup() override;  // ncclCommDestroy (ncclCommAbort after abort())
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int size() const override { return static_cast<int>(ranks_.size()); }
  Collective& rank(int r) override;
  // Aborts every communicator (ncclCommAbort ends collectives waiting for a dead rank on the
  // GPU) and makes every later collective throw RuntimeError(why).
  void abort(const std::string& why) override;

 private:
  std::shared_ptr<NcclAbort> abort_;         // shared with the ranks
  std::vector<std::unique_ptr<Collective>> ranks_;
};

// One rank of a group whose ranks are processes, on `place`: rank 0 makes the ncclUniqueId,
// `host_world` (a collective over host memory across the processes, rank and size as the NCCL
// group's) broadcasts it, and every rank joins (ncclCommInitRank). abort() aborts the
// communicator, then `host_world`.
std::unique_ptr<Collective> make_nccl_rank(Collective& host_world, const CudaRankPlace& place);

}  // namespace plexus::cuda
