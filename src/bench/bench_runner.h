// Runs one benchmark point: makes the model if asked and missing, plans and opens it, runs the
// warm-up samples (not measured), then the measured samples inside a monitoring session, and
// returns the result tree (see docs/benchmarks.md for every key).
#pragma once
#include <functional>
#include <string>

#include "bench/config_loader.h"
#include "core/json.h"

namespace plexus::bench {

using Log = std::function<void(const std::string&)>;

// `config_file` prefixes errors about the backend ("FILE: backend: ..."). Progress goes to `log`.
Json run_point(const BenchPoint& point, const std::string& config_file, const Log& log);

// Makes config.model with config.model_make when the directory has no config.json; returns
// whether it did. InputError when the model is missing and there is no model_make.
bool ensure_model(const BenchConfig& config, const std::string& config_file, const Log& log);

// "2026-11-25T10:00:00Z"
std::string utc_timestamp();

}  // namespace plexus::bench
