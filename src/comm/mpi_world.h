// The process's MPI world, shared by data parallelism (`plexus batch` under mpirun) and tensor
// parallelism (one tp rank per process): whether an MPI launcher started us, MPI_Init/Finalize,
// the ranks on this machine, and a way for ranks other than 0 to stay quiet but still report errors.
#pragma once
#include <string>
#include <vector>

namespace plexus {

// True when this process was started by an MPI launcher (OpenMPI's mpirun, or a PMI/PMIx
// launcher such as srun --mpi=pmix): only then is MPI initialised.
bool launched_by_mpi();

// MPI_Init_thread on construction (collectives may run on a device's worker thread, one at a
// time: MPI_THREAD_SERIALIZED), MPI_Finalize on destruction. One per process.
class MpiWorld {
 public:
  MpiWorld(int* argc, char*** argv);
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The world ranks on this machine (shared memory), in rank order; this rank's index among them.
  const std::vector<int>& node_ranks() const { return node_ranks_; }
  int local_rank() const;
  int local_size() const { return static_cast<int>(node_ranks_.size()); }
  // Worker ranks (all but rank 0) on this machine, and this rank's index among them (-1 for
  // rank 0): `plexus batch`'s workers sharing a machine split its threads and devices.
  int local_workers() const;
  int local_worker_index() const;
  // Sends this rank's stdout and stderr to /dev/null (rank 0 does the input and output of a
  // tensor-parallel run); report_error() still reaches the real stderr.
  void silence_output();
  // Ends every rank (mpirun exits with `code`).
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0, size_ = 1;
  std::vector<int> node_ranks_;
};

// Writes `line` and a newline to this process's real stderr (even after silence_output()), at once.
void report_error(const std::string& line);

}  // namespace plexus
