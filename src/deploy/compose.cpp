// PLACEHOLDER of the foundation commit: the compose target's helper replaces this file.
#include "deploy/compose.h"

#include "core/error.h"

namespace plexus::deploy {

std::vector<GeneratedFile> compose_files(const DeploySpec&) { throw RuntimeError("deploy: the compose target is not written yet"); }

}  // namespace plexus::deploy
