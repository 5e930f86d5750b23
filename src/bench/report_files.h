// Writing a benchmark's results: DIR/NAME.json (the result; for a sweep a summary with every run
// under "runs", plus DIR/NAME-<i>.json per point), DIR/NAME.csv (one row per run, appended) and
// DIR/NAME.html.
#pragma once
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus::bench {

struct WrittenReports {
  std::vector<std::string> json;  // NAME.json first
  std::string csv, html;          // "" when not asked for
  bool csv_appended = false, csv_diverted = false;
  int csv_rows = 0;
};

// `formats` from output.formats. Creates DIR. RuntimeError when a file cannot be written.
WrittenReports write_reports(const std::string& dir, const std::string& name, const std::vector<std::string>& formats,
                             const std::vector<Json>& results, const Json& sweep);

// The sweep summary written as NAME.json: {"name", "timestamp", "sweep", "runs": [...]}.
Json sweep_summary(const std::string& name, const std::vector<Json>& results, const Json& sweep);

}  // namespace plexus::bench
