// `plexus batch` across processes and machines: under mpirun (or srun --mpi=pmix) rank 0 is the
// coordinator (reads the input, hands out work on request, writes the one output) and every
// other rank runs one replica. Messages are JSON text; a worker asks for work by sending its
// results (none at first), the coordinator answers with tasks, later (when only retries may
// remain), or with stop.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "batch/coordinator.h"
#include "batch/fault_injection.h"
#include "runtime/runner.h"

namespace plexus::batch {

// True when this process was started by an MPI launcher (OpenMPI's mpirun, or a PMI/PMIx
// launcher such as srun --mpi=pmix): only then is MPI initialised.
bool launched_by_mpi();

// MPI_Init on construction, MPI_Finalize on destruction.
class MpiWorld {
 public:
  MpiWorld(int* argc, char*** argv);
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Worker ranks (all but rank 0) on this machine, and this rank's index among them (-1 for
  // rank 0): workers sharing a machine split its threads and devices as --replicas does.
  int local_workers() const { return local_workers_; }
  int local_worker_index() const { return local_worker_index_; }
  // Ends every rank (mpirun exits with `code`).
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0, size_ = 1;
  int local_workers_ = 0, local_worker_index_ = -1;
};

// Rank 0: serves the size() - 1 worker ranks (replica = rank - 1) until the queue is finished.
void run_mpi_coordinator(Coordinator& coordinator, const MpiWorld& world, std::size_t batch_size,
                         const std::vector<std::int64_t>& stop_ids);

// Ranks >= 1: opens the runner (InputError is rethrown; another failure is reported to rank 0,
// which takes the replica out) and runs what rank 0 sends until told to stop.
void run_mpi_worker(const MpiWorld& world, const std::function<std::shared_ptr<Runner>()>& open, const FaultInjection& faults);

}  // namespace plexus::batch
