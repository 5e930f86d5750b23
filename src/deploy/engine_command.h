// The server process a deployment runs, as argv: `plexus serve` with the plan's flags, or vLLM's
// `vllm serve`, TGI's `text-generation-launcher`, TEI's `text-embeddings-router` with the flags
// their documentation names (docs/deploy.md cites each), their numbers from the plan.
#pragma once
#include <string>
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

// The flags whose values the plan decided, as the engine's command line carries them: plexus's
// plan flags; vLLM's parallel sizes, --max-model-len, --gpu-memory-utilization; TGI's
// --num-shard and token limits; none for TEI.
std::vector<std::string> plan_flags(const DeploySpec& spec);

// Full argv, program first. `model_path`: where the server reads the model (a container's
// read-only mount, or the shared filesystem under Slurm). Listens on 0.0.0.0:spec.port.
std::vector<std::string> server_command(const DeploySpec& spec, const std::string& model_path);

// The path every engine answers health checks on (200 once the model is loaded).
inline constexpr const char* kHealthPath = "/health";

}  // namespace plexus::deploy
