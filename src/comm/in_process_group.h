// Collectives among ranks that are threads of one process (virtual CPU devices): each rank posts
// its buffer, then the ranks meet at a barrier and read each other's memory directly. All-reduce
// splits the buffer into one chunk per rank; each rank sums its chunk over the ranks in rank
// order into a shared scratch, and every rank copies the whole sum out, so every rank holds the
// same bits whatever the timing. Host memory only.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/rank_barrier.h"
#include "comm/rank_group.h"

namespace plexus {

class InProcessGroup : public RankGroup {
 public:
  explicit InProcessGroup(int size);
  ~InProcessGroup() override;
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int size() const override { return size_; }
  // The handle rank r calls from its own thread; it lives as long as the group.
  Collective& rank(int r) override;
  // Wakes every rank waiting in (or later entering) a collective with RuntimeError(why): a rank
  // that failed ends the others instead of leaving them waiting for it.
  void abort(const std::string& why) override;

 private:
  class Rank;
  friend class Rank;
  const int size_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  RankBarrier barrier_;
  std::vector<const void*> posted_;  // (size) each rank's buffer of the collective in progress
  std::vector<float> scratch_;       // the all-reduce sum
};

}  // namespace plexus
