// Reading a benchmark file: YAML syntax errors with their line, `--set key.path=value` overrides
// (values parsed as YAML scalars or lists), and `sweep` expanded into one configuration per point.
#pragma once
#include <string>
#include <vector>

#include "bench/bench_config.h"
#include "core/json.h"

namespace plexus::bench {

struct BenchPoint {
  BenchConfig config;
  Json sweep_point = Json::object();  // {"scenario.batch_size": 4, ...}; {} without a sweep
};

struct LoadedConfig {
  std::vector<BenchPoint> points;   // one without a sweep; the grid in order otherwise
  Json sweep = nullptr;             // {"key": [values...]} as written, or null
};

// `sets` are "key.path=value" strings. The sweep grid varies its last key fastest. InputError
// ("FILE:LINE: key.path: reason", "--set key.path: reason") for anything wrong.
LoadedConfig load_bench_config(const std::string& file, const std::vector<std::string>& sets);

// A YAML value as JSON: integers, numbers and booleans typed, other scalars strings.
Json yaml_to_json(const YAML::Node& node);

}  // namespace plexus::bench
