// The slurm target: batch.sbatch runs `plexus batch` over --nodes × --ntasks-per-node MPI ranks
// (rank 0 coordinates, the others are replicas), requeueable and resuming from its output;
// serve.sbatch runs `plexus serve` (or another engine) on one node. srun uses the MPI plugin the
// site has: pmix when `srun --mpi=list` shows it, else the documented fallback.
#pragma once
#include <cstdint>
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

std::vector<GeneratedFile> slurm_files(const DeploySpec& spec);

inline constexpr double kSlurmMemoryHeadroom = 1.10;  // --mem: 10 % above the sum

// --mem of a node running `replicas` copies of the plan (and, for batch.sbatch, rank 0 beside
// them), in whole GiB: per copy the plan's host memory (what it puts there, the server process,
// each GPU's context) and, with GPUs, the weights, which pass through host memory while they load
// (plexus maps the checkpoint's files, vLLM and TGI read them before copying them to the GPUs); rank 0
// a process; then kSlurmMemoryHeadroom, rounded up.
std::int64_t slurm_memory_gib(const DeploySpec& spec, int replicas, bool coordinator);

}  // namespace plexus::deploy
