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
#include "batch/replica_grammars.h"
#include "comm/mpi_world.h"
#include "runtime/runner.h"

namespace plexus::batch {

// The MPI world (comm/mpi_world.h), shared with tensor parallelism.
using plexus::launched_by_mpi;
using plexus::MpiWorld;

// Rank 0: serves the size() - 1 worker ranks (replica = rank - 1) until the queue is finished.
void run_mpi_coordinator(Coordinator& coordinator, const MpiWorld& world, std::size_t batch_size,
                         const std::vector<std::int64_t>& stop_ids);

// Ranks >= 1: opens the runner (InputError is rethrown; another failure is reported to rank 0,
// which takes the replica out) and runs what rank 0 sends until told to stop; a task's grammar
// (carried as its text) is compiled here, with the vocabulary `vocabulary` makes when first needed.
void run_mpi_worker(const MpiWorld& world, const std::function<std::shared_ptr<Runner>()>& open,
                    const ReplicaGrammars::VocabularyFactory& vocabulary, const FaultInjection& faults);

}  // namespace plexus::batch
