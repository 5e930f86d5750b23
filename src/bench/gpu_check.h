// A benchmark configuration that names GPUs (backend.device_ids) on a host whose CUDA runtime
// sees none: refused (exit 2, naming the key and what was found), or with --allow-cpu-devices run
// on virtual CPU devices after a warning.
#pragma once
#include <string>
#include <vector>

#include "bench/config_loader.h"

namespace plexus::bench {

// Checks every point of a bench run, probing the host (CUDA runtime, then the detected devices)
// once, when a point first names GPUs without backend.virtual_devices. Nothing to say when none
// does or the CUDA runtime sees GPUs. Otherwise: without `allow_cpu_devices`, InputError
// "FILE:LINE: backend.device_ids: ..." naming what this host has and the ways out; with it, the
// warnings to print (each once), and the points run on virtual CPU devices: budgeted by
// backend.max_memory, else by the detected GPUs' free memory, else (the point's
// backend.virtual_devices set to the highest id + 1) sharing the host's available memory as a
// plain CPU run with virtual devices does.
std::vector<std::string> check_gpus_asked(std::vector<BenchPoint>& points, const std::string& config_file, bool allow_cpu_devices);

}  // namespace plexus::bench
