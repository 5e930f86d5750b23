// `plexus bench compare A.json B.json ...`: key metrics of several results side by side, with the
// ratio of each to the first (B/A).
#pragma once
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus::bench {

struct CompareColumn {
  std::string label;  // the shortest path suffix that tells the files apart, "#i" for a sweep's runs
  Json result;
};

// Reads result files (one run, or a sweep summary's "runs": its failed or unmeasured points are
// left out). InputError naming the file when it is missing, not JSON, or not a plexus bench result.
std::vector<CompareColumn> load_compare_inputs(const std::vector<std::string>& files);

// Labels for result files: each file's shortest path suffix (whole components) that no other
// file shares, so a/demo.json and b/demo.json are "a/demo.json" and "b/demo.json", and
// x.json and y.json are "x.json" and "y.json". The same file named twice gets the same label.
std::vector<std::string> distinct_labels(const std::vector<std::string>& files);

// {"columns": [labels], "engines": [each result's engine], "metrics": [{"metric": "throughput.tokens_per_s", "better": "higher",
//  "values": [...], "ratios": [1.0, B/A, ...]}]}; null where a value (or the first) is missing.
Json compare_json(const std::vector<CompareColumn>& columns);

// The same as an aligned text table: metric, A, B, B/A, C, C/A, ...
std::string compare_table(const std::vector<CompareColumn>& columns);

}  // namespace plexus::bench
