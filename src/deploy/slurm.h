// The slurm target: batch.sbatch runs `plexus batch` over --nodes × --ntasks-per-node MPI ranks
// (rank 0 coordinates, the others are replicas), requeueable and resuming from its output;
// serve.sbatch runs `plexus serve` (or another engine) on one node. srun uses the MPI plugin the
// site has: pmix when `srun --mpi=list` shows it, else the documented fallback.
#pragma once
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

std::vector<GeneratedFile> slurm_files(const DeploySpec& spec);

}  // namespace plexus::deploy
