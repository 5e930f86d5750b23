// The HTML report: one self-contained file (inline CSS and SVG, no scripts, no network) with a
// summary table, per-device utilisation and power over time for every run, and for sweeps
// throughput and energy per point.
#pragma once
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus::bench {

// `results` are result trees (bench_runner.h); `sweep` the sweep's {key: [values]} or null.
std::string html_report(const std::string& name, const std::vector<Json>& results, const Json& sweep);

// Text safe inside HTML elements and attribute values.
std::string html_escape(const std::string& text);

}  // namespace plexus::bench
