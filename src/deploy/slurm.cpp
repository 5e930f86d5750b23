// PLACEHOLDER of the foundation commit: the slurm target's helper replaces this file.
#include "deploy/slurm.h"

#include "core/error.h"

namespace plexus::deploy {

std::vector<GeneratedFile> slurm_files(const DeploySpec&) { throw RuntimeError("deploy: the slurm target is not written yet"); }

}  // namespace plexus::deploy
