// Runs one benchmark point: makes the model if asked and missing, plans and opens it, runs the
// warm-up samples (not measured), then the measured samples inside a monitoring session, and
// returns the result tree (see docs/benchmarks.md for every key). Stops early when asked.
#pragma once
#include <functional>
#include <string>

#include "bench/config_loader.h"
#include "core/json.h"

namespace plexus::bench {

using Log = std::function<void(const std::string&)>;
// Polled between batches: true ends the run early (SIGINT / SIGTERM).
using StopRequested = std::function<bool()>;

// `config_file` prefixes errors about the backend ("FILE: backend: ..."). Progress goes to `log`.
// When `stop` turns true during the measured samples, the run ends after the current batch and
// the result covers the samples measured so far, with "status": "interrupted" and
// "interrupted": true; before any measured sample it throws Interrupted.
Json run_point(const BenchPoint& point, const std::string& config_file, const Log& log, const StopRequested& stop = {});

// The record of a point that produced no measurement: {"name", "timestamp", "config",
// "sweep_point", "status": "failed" | "interrupted", "interrupted", "error"}.
Json unmeasured_point(const BenchPoint& point, const std::string& status, const std::string& error);

// Makes config.model with config.model_make when the directory has no config.json; returns
// whether it did. InputError when the model is missing and there is no model_make.
bool ensure_model(const BenchConfig& config, const std::string& config_file, const Log& log, const StopRequested& stop = {});

// "2026-11-25T10:00:00Z"
std::string utc_timestamp();

}  // namespace plexus::bench
