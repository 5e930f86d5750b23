// A fixed deployment for the generators' golden tests: a small Llama model on two H100s of a host,
// its numbers as a plan would give them, so a change to any generator shows as a diff.
#pragma once
#include "deploy/deploy_spec.h"

namespace plexus::deploy::testing {

// tiny-llama at /srv/models/tiny-llama, 2 × NVIDIA H100 80GB HBM3 (GPUs 0 and 1, compute
// capability 9.0), port 8080, env HF_HUB_OFFLINE=1, context 4096, 8 sequences; plexus plans stages over
// both GPUs (tp 1), vLLM and TGI shard over them (tp 2).
DeploySpec example_spec(Target target, ApiType api_type);

// The same model on CPUs only (no GPUs): the CPU build and run of each target.
DeploySpec example_cpu_spec(Target target);

}  // namespace plexus::deploy::testing
