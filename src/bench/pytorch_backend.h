// `backend.type: pytorch`: configurations in the shape of the energy-benchmark suite's
// (device_ids, device_map, max_memory, torch_dtype) run scripts/hf_runner.py, a small
// transformers runner shipped with plexus that prints the token line bench reads.
#pragma once
#include <string>
#include <vector>

#include "bench/bench_config.h"

namespace plexus::bench {

// scripts/hf_runner.py: $PLEXUS_HF_RUNNER, else next to the plexus binary (../scripts/), else in
// the source tree plexus was built from. InputError when none is there.
std::string hf_runner_path();

// The python3 command line that runs `c` with hf_runner.py. InputError (exit 2) naming what is
// missing when python3, torch or transformers cannot be found, or a key the runner cannot take.
std::vector<std::string> pytorch_command(const BenchConfig& c, const std::string& config_file);

}  // namespace plexus::bench
