// PLACEHOLDER of the foundation commit: the kubernetes target's helper replaces this file.
#include "deploy/kubernetes.h"

#include "core/error.h"

namespace plexus::deploy {

std::vector<GeneratedFile> kubernetes_files(const DeploySpec&) { throw RuntimeError("deploy: the kubernetes target is not written yet"); }

}  // namespace plexus::deploy
