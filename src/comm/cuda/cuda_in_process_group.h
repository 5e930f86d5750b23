// All-reduce, all-gather and broadcast among ranks that are threads of this process computing on
// CUDA GPUs — virtual GPUs sharing one GPU (NCCL refuses two ranks on one GPU), or GPUs with peer
// access. Each rank waits for its compute stream, posts its device pointer, and the ranks meet at
// a barrier; for an all-reduce each rank then sums its chunk of the buffer over the ranks in rank
// order with a reduce kernel reading the other ranks' buffers directly (comm/cuda/sum_ranks.h)
// into scratch on its own GPU, the ranks meet, every rank copies every chunk back into its
// buffer, and they meet again: every rank holds the same bits, the bits the host's
// InProcessGroup gives for the same inputs, whatever the timing. Every copy and kernel runs on
// the rank's compute stream and is waited for before the call returns, so kernels the rank
// launches afterwards see the result. Host memory is not served (use InProcessGroup).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/cuda/cuda_rank.h"
#include "comm/rank_barrier.h"
#include "comm/rank_group.h"

namespace plexus::cuda {

class CudaInProcessGroup : public RankGroup {
 public:
  // One rank per place, rank r at places[r]. Ranks on different GPUs need peer access between
  // them (enabled here); RuntimeError naming the GPUs where there is none (use NCCL there).
  explicit CudaInProcessGroup(std::vector<CudaRankPlace> places);
  ~CudaInProcessGroup() override;  // frees the ranks' scratch
  CudaInProcessGroup(const CudaInProcessGroup&) = delete;
  CudaInProcessGroup& operator=(const CudaInProcessGroup&) = delete;

  int size() const override { return static_cast<int>(places_.size()); }
  Collective& rank(int r) override;
  void abort(const std::string& why) override { barrier_.abort(why); }

 private:
  class Rank;
  friend class Rank;

  std::vector<CudaRankPlace> places_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  RankBarrier barrier_;
  std::vector<const void*> posted_;  // (size) each rank's buffer of the collective in progress
  std::vector<const float*> chunks_; // (size) each rank's summed chunk (its scratch)
};

}  // namespace plexus::cuda
