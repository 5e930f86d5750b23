// PLACEHOLDER of the foundation commit: the docker target's helper replaces this file.
#include "deploy/docker.h"

#include "core/error.h"

namespace plexus::deploy {

std::vector<GeneratedFile> docker_files(const DeploySpec&) { throw RuntimeError("deploy: the docker target is not written yet"); }

std::string docker_run_command(const DeploySpec&) { throw RuntimeError("deploy: docker run line not written yet"); }
std::string plexus_dockerfile(const DeploySpec&) { throw RuntimeError("deploy: Dockerfile not written yet"); }
}  // namespace plexus::deploy
