// MPI collectives with a fixed summation order; MPI's int counts are respected by working in pieces.
#include "comm/mpi_collective.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "comm/mpi_world.h"
#include "core/error.h"
#include "core/timer.h"

namespace plexus {

namespace {

// Elements (or bytes) per MPI call: MPI counts are int, and an all-gather's receive buffer is
// size() times the piece.
constexpr std::int64_t kMaxPiece = 1 << 26;

void count_op(CommStats::Op& op, std::int64_t bytes, const Timer& t) {
  ++op.calls;
  op.bytes += bytes;
  op.seconds += t.seconds();
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw RuntimeError(std::string("MPI ") + what + " failed (error " + std::to_string(rc) + ")");
}

}  // namespace

MpiCollective::MpiCollective(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  const auto n = static_cast<std::size_t>(size_);
  send_counts_.resize(n);
  send_displs_.resize(n);
  recv_counts_.resize(n);
  recv_displs_.resize(n);
}

void MpiCollective::all_reduce_sum(float* data, std::int64_t count) {
  Timer t;
  for (std::int64_t off = 0; off < count; off += kMaxPiece) {
    all_reduce_piece(data + off, static_cast<int>(std::min(kMaxPiece, count - off)));
  }
  count_op(stats_.all_reduce, count * static_cast<std::int64_t>(sizeof(float)), t);
}

void MpiCollective::all_reduce_piece(float* data, int count) {
  const int n = size_;
  if (n == 1) return;
  // Chunk k is elements [count·k/n, count·(k+1)/n).
  auto lo = [count, n](int k) { return static_cast<int>(static_cast<std::int64_t>(count) * k / n); };
  const int mine = lo(rank_ + 1) - lo(rank_);
  for (int k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(k);
    send_counts_[i] = lo(k + 1) - lo(k);
    send_displs_[i] = lo(k);
    recv_counts_[i] = mine;
    recv_displs_[i] = k * mine;
  }
  received_.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(mine));
  check(MPI_Alltoallv(data, send_counts_.data(), send_displs_.data(), MPI_FLOAT, received_.data(), recv_counts_.data(),
                      recv_displs_.data(), MPI_FLOAT, comm_),
        "all-reduce (alltoallv)");
  // Rank 0's values, then rank 1's added, …: the in-process group's order.
  float* sum = data + lo(rank_);
  std::copy_n(received_.data(), mine, sum);
  for (int k = 1; k < n; ++k) {
    const float* other = received_.data() + static_cast<std::size_t>(k) * static_cast<std::size_t>(mine);
    for (int i = 0; i < mine; ++i) sum[i] += other[i];
  }
  check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, send_counts_.data(), send_displs_.data(), MPI_FLOAT, comm_),
        "all-reduce (allgatherv)");
}

void MpiCollective::all_gather(const float* in, std::int64_t count, float* out) {
  Timer t;
  if (count <= kMaxPiece) {
    check(MPI_Allgather(in, static_cast<int>(count), MPI_FLOAT, out, static_cast<int>(count), MPI_FLOAT, comm_), "all-gather");
  } else {
    // Pieces of every rank's buffer, placed at row r of the output.
    std::vector<float> piece;
    for (std::int64_t off = 0; off < count; off += kMaxPiece) {
      const std::int64_t m = std::min(kMaxPiece, count - off);
      piece.resize(static_cast<std::size_t>(m * size_));
      check(MPI_Allgather(in + off, static_cast<int>(m), MPI_FLOAT, piece.data(), static_cast<int>(m), MPI_FLOAT, comm_),
            "all-gather");
      for (int r = 0; r < size_; ++r) std::copy_n(piece.data() + r * m, m, out + r * count + off);
    }
  }
  count_op(stats_.all_gather, count * static_cast<std::int64_t>(sizeof(float)), t);
}

void MpiCollective::broadcast(void* data, std::size_t bytes, int root) {
  Timer t;
  auto* p = static_cast<char*>(data);
  for (std::size_t off = 0; off < bytes; off += static_cast<std::size_t>(kMaxPiece)) {
    const auto m = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(kMaxPiece), bytes - off));
    check(MPI_Bcast(p + off, m, MPI_BYTE, root, comm_), "broadcast");
  }
  count_op(stats_.broadcast, static_cast<std::int64_t>(bytes), t);
}

void MpiCollective::barrier() { check(MPI_Barrier(comm_), "barrier"); }

void MpiCollective::abort(const std::string& why) {
  report_error("plexus: " + (why.empty() ? std::string("a tensor-parallel rank failed") : why));
  MPI_Abort(comm_, 1);
  std::_Exit(1);
}

}  // namespace plexus
