// Results as CSV: one row per run, nested keys flattened with '_' (gpu_stats_gpu_0_power_draw_w,
// latency_ttft_ms_p50), lists of values joined with ',' (config_device_ids = "0,1"), lists of
// objects numbered (plan_devices_0_weights_bytes). Appends to a file with the same columns.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"

namespace plexus::bench {

using FlatRow = std::vector<std::pair<std::string, std::string>>;  // column → cell, in key order

// Keys left out of CSV rows (long or per-sample data that lives in the JSON):
// timeline, requests, plan.device_map, plan.placement, config.scenario.prompts, config.scenario.prompts_ids.
FlatRow flatten_result(const Json& result);

// Quotes a cell when it holds ',', '"', CR or LF (RFC 4180).
std::string csv_cell(const std::string& text);

struct CsvWritten {
  std::string path;   // the file written
  bool appended = false;
  bool diverted = false;  // `path` differs from the one asked for: its columns did not match
  int rows = 0;
};

// Writes `rows` (columns: the union, in order of first appearance) to `path`. An existing file
// with exactly these columns is appended to; one with other columns is left alone and the rows
// go to PATH-2.csv (or -3, ...: the first that is new or has these columns).
CsvWritten write_csv(const std::string& path, const std::vector<FlatRow>& rows);

// The header line of a CSV file ("" when missing or empty).
std::string read_csv_header(const std::string& path);

}  // namespace plexus::bench
