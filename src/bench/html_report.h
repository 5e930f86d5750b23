// The HTML report: one self-contained file (inline CSS and SVG, no scripts, no network) with a
// summary table (TTFT/TPOT/E2E percentiles, energy and why it is unavailable, status), each
// run's scenario (batch size, samples, tokens, strategy, dtype, threads, devices), utilisation
// (host and devices), power and memory per device over the run, per-request latencies, plan and
// prediction, and for sweeps throughput and energy per point. One <section> per part.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus::bench {

// `results` are result trees (bench_runner.h; failed or interrupted points included); `sweep`
// the sweep's {key: [values]} or null; `points` how many runs were planned (0: results.size());
// `interrupted` says the set ended early.
std::string html_report(const std::string& name, const std::vector<Json>& results, const Json& sweep, std::size_t points = 0,
                        bool interrupted = false);

}  // namespace plexus::bench
