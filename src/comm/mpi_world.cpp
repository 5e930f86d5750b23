// MPI start-up and shutdown, the ranks on this machine, quiet ranks.
#include "comm/mpi_world.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

namespace plexus {

namespace {
int g_error_fd = STDERR_FILENO;  // the real stderr, kept by silence_output()
}  // namespace

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(var)) return true;
  }
  return false;
}

MpiWorld::MpiWorld(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  node_ranks_.resize(static_cast<std::size_t>(node_size));
  MPI_Allgather(&rank_, 1, MPI_INT, node_ranks_.data(), 1, MPI_INT, node);
  MPI_Comm_free(&node);
}

MpiWorld::~MpiWorld() { MPI_Finalize(); }

int MpiWorld::local_rank() const {
  return static_cast<int>(std::find(node_ranks_.begin(), node_ranks_.end(), rank_) - node_ranks_.begin());
}

int MpiWorld::local_workers() const {
  return static_cast<int>(std::count_if(node_ranks_.begin(), node_ranks_.end(), [](int r) { return r != 0; }));
}

int MpiWorld::local_worker_index() const {
  if (rank_ == 0) return -1;
  return static_cast<int>(std::count_if(node_ranks_.begin(), node_ranks_.end(), [this](int r) { return r != 0 && r < rank_; }));
}

void MpiWorld::silence_output() {
  std::fflush(stdout);
  std::fflush(stderr);
  if (g_error_fd == STDERR_FILENO) g_error_fd = dup(STDERR_FILENO);
  const int null = open("/dev/null", O_WRONLY);
  if (null < 0) return;
  dup2(null, STDOUT_FILENO);
  dup2(null, STDERR_FILENO);
  close(null);
}

void MpiWorld::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void report_error(const std::string& line) {
  std::fflush(stderr);
  const std::string text = line + "\n";
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = write(g_error_fd < 0 ? STDERR_FILENO : g_error_fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace plexus
