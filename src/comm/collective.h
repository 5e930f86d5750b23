// The collectives tensor parallelism needs, as one interface over a group of ranks: all-reduce
// (sum), all-gather, broadcast and barrier. Implementations: in-process ranks on threads
// (comm/in_process_group.h) and MPI processes (comm/mpi_collective.h). Every implementation sums in
// rank order 0, 1, …, so a result never depends on timing and every rank holds the same bits.
// Pointers are in the memory of the device the rank computes on (host memory for CPU ranks).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/json.h"

namespace plexus {

// What one rank's collectives moved and how long they took (waiting for the slowest rank
// included: that is what a collective costs the rank).
struct CommStats {
  struct Op {
    std::int64_t calls = 0;
    std::int64_t bytes = 0;  // bytes this rank contributed (its buffer), summed over calls
    double seconds = 0;
  };
  Op all_reduce, all_gather, broadcast;
  double seconds() const { return all_reduce.seconds + all_gather.seconds + broadcast.seconds; }
  std::int64_t bytes() const { return all_reduce.bytes + all_gather.bytes + broadcast.bytes; }
  std::int64_t calls() const { return all_reduce.calls + all_gather.calls + broadcast.calls; }
  CommStats& operator+=(const CommStats& o);
};
// calls, bytes and seconds per operation and in total.
Json comm_stats_to_json(const CommStats& s);

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "in-process", "mpi", "nccl", "cuda in-process": for reports.
  virtual std::string kind() const = 0;

  // data (count) = the sum over ranks of every rank's data (count), added in rank order.
  virtual void all_reduce_sum(float* data, std::int64_t count) = 0;
  // out (size(), count) = every rank's in (count), rank r's at row r. in and out do not overlap.
  virtual void all_gather(const float* in, std::int64_t count, float* out) = 0;
  // data (bytes) = root's data (bytes) on every rank.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  // Returns once every rank has called it.
  virtual void barrier() = 0;
  // This rank failed: the others must not wait for it. In-process ranks waiting in (or later
  // entering) a collective throw RuntimeError(why); MPI ends every rank with exit 1.
  virtual void abort(const std::string& why) = 0;

  const CommStats& stats() const { return stats_; }

 protected:
  CommStats stats_;
};

}  // namespace plexus
