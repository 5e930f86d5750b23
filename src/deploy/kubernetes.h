// The kubernetes target: a Deployment (nvidia.com/gpu limits, /dev/shm as a memory emptyDir,
// readiness and liveness probes on /health, requests from the plan's host memory), a Service and a
// PersistentVolumeClaim holding the model.
#pragma once
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

std::vector<GeneratedFile> kubernetes_files(const DeploySpec& spec);

}  // namespace plexus::deploy
