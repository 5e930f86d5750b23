// One `backend.type: openai` benchmark point: finds the server (exit 2 before any load when it
// cannot be reached), sends the warm-up requests, then the measured load inside a monitoring
// session on this host (the idle power measured before it), and returns the result tree in the
// shape of a plexus run's (throughput, latency, energy, ...) with the engine named, errors by
// status, goodput and one row per request.
#pragma once
#include <string>
#include <vector>

#include "bench/bench_runner.h"
#include "bench/config_loader.h"
#include "core/json.h"

namespace plexus::bench {

// What /v1/models says: the engine's name and the first model's id.
struct ServerInfo {
  std::string engine;
  std::string first_model;  // "" when none is listed
};

// GET URL/v1/models. InputError "WHERE: backend.url: cannot reach URL: why" when nothing answers.
ServerInfo probe_openai_server(const BenchConfig& config, const std::string& config_file);

// Every openai point's server probed once per URL, before any run (exit 2 before any load).
void check_openai_servers(const std::vector<BenchPoint>& points, const std::string& config_file);

Json run_openai_point(const BenchPoint& point, const std::string& config_file, const Log& log, const StopRequested& stop);

}  // namespace plexus::bench
