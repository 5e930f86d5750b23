// Collectives among MPI processes (one tensor-parallel rank each, on this machine or others).
// All-reduce is a chunked reduce-scatter then all-gather: rank r receives chunk r of every rank's
// buffer (MPI_Alltoallv), adds them in rank order 0, 1, … (the in-process group's order, so the
// bits match it), and every rank gathers every chunk's sum: each rank holds the same bits, and
// they do not depend on timing or on the MPI library's own reduction order. Host memory only.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

#include "comm/collective.h"

namespace plexus {

class MpiCollective : public Collective {
 public:
  // Over `comm` (MPI_COMM_WORLD by default; MPI must be initialised, see comm/mpi_world.h).
  explicit MpiCollective(MPI_Comm comm = MPI_COMM_WORLD);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "mpi"; }
  void all_reduce_sum(float* data, std::int64_t count) override;
  void all_gather(const float* in, std::int64_t count, float* out) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void barrier() override;
  // Prints "plexus: <why>" on stderr (the real one, see report_error) and ends every rank with
  // exit 1 (MPI_Abort).
  [[noreturn]] void abort(const std::string& why) override;

 private:
  // One all-reduce of at most kMaxPiece elements.
  void all_reduce_piece(float* data, int count);

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<float> received_;  // (size, chunk) every rank's chunk rank_ of the buffer
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;
};

}  // namespace plexus
