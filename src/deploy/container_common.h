// What the docker and compose targets share: the command a container runs (image entrypoint and
// arguments for each engine's published image), the health check's numbers, Docker size text.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

// How a container starts the server: arguments after the image (Docker's CMD), and an entrypoint
// override where the image's own entrypoint is not the server program.
//   plexus: the generated Dockerfile's ENTRYPOINT ["plexus"], args "serve MODEL ..."
//   vllm:   --entrypoint vllm, args "serve MODEL ..." (the same whether the image's entrypoint is
//           `vllm serve` or, in older images, the api_server module)
//   tgi:    the image's entrypoint (text-generation-launcher, or its wrapper script), args after it
//   tei:    the image's entrypoint text-embeddings-router, args after it
struct ContainerCommand {
  std::optional<std::string> entrypoint;
  std::vector<std::string> args;
};
ContainerCommand container_command(const DeploySpec& spec);

// http://localhost:PORT/health, as the health check inside the container asks it.
std::string health_url(const DeploySpec& spec);

// The health probe run inside the container, as argv: curl -fsS on health_url where the image has
// curl (plexus's image installs it; vLLM's and TGI's images ship it); TEI's image has no curl, so
// bash asks the same URL over /dev/tcp and passes on an HTTP 200 status line.
std::vector<std::string> health_probe(const DeploySpec& spec);

// Health check timing: every 30 s, 5 s to answer, 3 failures in a row = unhealthy; the start
// period gives the server time to load the model (60 s plus the checkpoint read at 200 MB/s,
// rounded up to 10 s) before failures count.
// The uid of the plexus image's non-root user: the Dockerfile's useradd creates it, Kubernetes'
// runAsUser / runAsGroup / fsGroup name it.
inline constexpr int kImageUid = 10001;

inline constexpr int kHealthIntervalS = 30;
inline constexpr int kHealthTimeoutS = 5;
inline constexpr int kHealthRetries = 3;
int health_start_period_s(const DeploySpec& spec);

// A size as Docker's --shm-size and compose's shm_size read it (binary units): "16g", "512m",
// else plain bytes.
std::string docker_size(std::int64_t bytes);

// The GPU indices as Docker names devices: "0,1"; for compose, each as its own string.
std::string gpu_device_list(const DeploySpec& spec);
std::vector<std::string> gpu_device_ids(const DeploySpec& spec);

// Dockerfile.dockerignore, beside the plexus Dockerfile (BuildKit reads it before the context's
// own .dockerignore): the build context is the plexus source tree; build trees and git stay out.
std::string plexus_dockerignore();

}  // namespace plexus::deploy
