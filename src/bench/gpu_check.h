// A benchmark configuration that names GPUs (backend.device_ids) on a host whose CUDA runtime
// sees none: refused (exit 2, naming the key and what was found), or with --allow-cpu-devices run
// on virtual CPU devices after a warning.
#pragma once
#include <string>

#include "bench/bench_config.h"

namespace plexus::bench {

// "" when the configuration names no GPU, or names GPUs the CUDA runtime sees. Otherwise: with
// `allow_cpu_devices`, the warning to print; without, InputError "FILE:LINE: backend.device_ids:
// ..." naming what this host has and the ways out.
std::string check_gpus_asked(const BenchConfig& config, const std::string& config_file, bool allow_cpu_devices);

}  // namespace plexus::bench
