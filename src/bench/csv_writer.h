// Results as CSV: one row per run, nested keys flattened with '_' (gpu_stats_gpu_0_power_draw_w,
// latency_ttft_ms_p50), lists of values joined with ',' (config_device_ids = "0,1"), lists of
// objects numbered (plan_devices_0_weights_bytes). The columns people compare come first (see
// kLeadingColumns); appends to a file with the same columns, always by an atomic rewrite.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"

namespace plexus::bench {

using FlatRow = std::vector<std::pair<std::string, std::string>>;  // column → cell, in key order

// Keys left out of CSV rows (long or per-sample data that lives in the JSON): timeline,
// device_timeline, requests, plan.device_map, plan.placement, config.scenario.prompts,
// config.scenario.prompts_ids. Added: comm_bytes_per_token, comm_ms_per_token and comm_share
// (execution.communication's bytes and milliseconds per token and rank, share of the forward
// time; empty cells for a run without collectives).
FlatRow flatten_result(const Json& result);

// The first columns of every CSV, in this order (empty cells where a run has no value, e.g. a
// failed point): name, output/total tokens and samples per second, TTFT/TPOT/E2E p50/p90/p99,
// energy, J/token, devices, communication per token (tensor parallelism), status and error. The rest follow in order of first appearance.
extern const std::vector<std::string> kLeadingColumns;
std::vector<std::string> csv_columns(const std::vector<FlatRow>& rows);

// Quotes a cell when it holds ',', '"', CR or LF (RFC 4180).
std::string csv_cell(const std::string& text);

struct CsvWritten {
  std::string path;   // the file written
  bool appended = false;
  bool diverted = false;  // `path` differs from the one asked for: its columns did not match
  int rows = 0;
};

// The CSV of one `plexus bench` invocation, rewritten as its rows grow (one more per finished
// run). Each write() replaces the file atomically with its content from before this invocation
// plus every row so far, so the file is never torn: a reader sees the old rows and either all or
// none of the new ones. A file that existed with other columns is left alone and the rows go to
// PATH-2.csv (or -3, ...: the first that is new or has these columns); when later rows change the
// columns, the file written before is restored to its old content.
class CsvReport {
 public:
  explicit CsvReport(std::string path) : path_(std::move(path)) {}
  // RuntimeError naming the file when it cannot be written (the old file stays as it was).
  CsvWritten write(const std::vector<FlatRow>& rows);

 private:
  const std::optional<std::string>& original(const std::string& path);
  std::string path_;
  std::map<std::string, std::optional<std::string>> originals_;  // content before this invocation
  std::string written_;                                           // the file written last
};

// One-shot CsvReport(path).write(rows).
CsvWritten write_csv(const std::string& path, const std::vector<FlatRow>& rows);

// The header line of a CSV file ("" when missing or empty).
std::string read_csv_header(const std::string& path);

}  // namespace plexus::bench
