// The HTML report: one self-contained file (inline CSS and SVG, no scripts, no network) with a
// summary table (TTFT/TPOT/E2E percentiles, energy, status), each run's scenario (batch size,
// samples, tokens, strategy, threads, devices), per-device utilisation, power, memory and busy
// time over the run, a latency histogram, and for sweeps throughput and energy per point.
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

// Text safe inside HTML elements and attribute values.
std::string html_escape(const std::string& text);

}  // namespace plexus::bench
