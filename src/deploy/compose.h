// The compose target: compose.yaml with the GPUs reserved under
// deploy.resources.reservations.devices (driver nvidia, device_ids, capabilities [gpu]), a
// healthcheck on /health, a restart policy, the model volume read-only, shm_size, the port
// (plus the Dockerfile it builds for plexus).
#pragma once
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

std::vector<GeneratedFile> compose_files(const DeploySpec& spec);

}  // namespace plexus::deploy
