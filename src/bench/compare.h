// `plexus bench compare A.json B.json ...`: key metrics of several results side by side, with the
// ratio of each to the first (B/A).
#pragma once
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus::bench {

struct CompareColumn {
  std::string label;  // the file name, with "#i" for the runs of a sweep summary
  Json result;
};

// Reads result files (one run, or a sweep summary's "runs"). InputError naming the file when it
// is missing, not JSON, or not a plexus bench result.
std::vector<CompareColumn> load_compare_inputs(const std::vector<std::string>& files);

// {"columns": [labels], "metrics": [{"metric": "throughput.tokens_per_s", "better": "higher",
//  "values": [...], "ratios": [1.0, B/A, ...]}]}; null where a value (or the first) is missing.
Json compare_json(const std::vector<CompareColumn>& columns);

// The same as an aligned text table: metric, A, B, B/A, C, C/A, ...
std::string compare_table(const std::vector<CompareColumn>& columns);

}  // namespace plexus::bench
