// The docker target: a multi-stage Dockerfile for plexus (built in a CUDA devel image for the
// selected GPUs' architectures, run in the matching runtime image as a non-root user, with a
// HEALTHCHECK on /health) and run.sh, the `docker run` line (--gpus "device=…", --shm-size, the
// model mounted read-only, the port). vLLM, TGI and TEI run their own images: run.sh only.
#pragma once
#include <string>
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

std::vector<GeneratedFile> docker_files(const DeploySpec& spec);

// The `docker run …` command line (also printed by --dry-run).
std::string docker_run_command(const DeploySpec& spec);

// The Dockerfile that builds and runs plexus for `spec` (its CUDA architectures; a CPU build
// without GPUs). Shared by the docker and compose targets.
std::string plexus_dockerfile(const DeploySpec& spec);

}  // namespace plexus::deploy
