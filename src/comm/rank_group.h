// A group of ranks that all live in this process (one thread each): the handle each rank calls
// its collectives through, and abort() for the rank that failed. Implementations: InProcessGroup
// (host memory, comm/in_process_group.h), and on CUDA devices CudaInProcessGroup and NcclGroup
// (comm/cuda/).
#pragma once
#include <string>

#include "comm/collective.h"

namespace plexus {

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  virtual int size() const = 0;
  // The handle rank r calls from its own thread; it lives as long as the group.
  virtual Collective& rank(int r) = 0;
  // Wakes every rank waiting in (or later entering) a collective with RuntimeError(why): a rank
  // that failed ends the others instead of leaving them waiting for it.
  virtual void abort(const std::string& why) = 0;
};

}  // namespace plexus
