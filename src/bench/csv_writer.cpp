// Flattening result trees into CSV rows, and writing / appending them.
#include "bench/csv_writer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mmap_file.h"

namespace plexus::bench {

namespace {

const char* const kExcluded[] = {"timeline", "device_timeline", "requests", "plan_device_map", "plan_placement", "config_scenario_prompts",
                                 "config_scenario_prompts_ids"};

std::string scalar_text(const Json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

bool all_scalars(const Json& a) {
  return std::all_of(a.begin(), a.end(), [](const Json& v) { return !v.is_object() && !v.is_array(); });
}

void flatten(const Json& v, const std::string& key, FlatRow& out) {
  for (const char* ex : kExcluded) {
    if (key == ex) return;
  }
  if (v.is_object()) {
    if (v.empty()) return;
    for (auto it = v.begin(); it != v.end(); ++it) flatten(it.value(), key.empty() ? it.key() : key + "_" + it.key(), out);
  } else if (v.is_array() && all_scalars(v)) {
    std::string joined;
    for (std::size_t i = 0; i < v.size(); ++i) joined += (i ? "," : "") + scalar_text(v[i]);
    out.emplace_back(key, joined);
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) flatten(v[i], key + "_" + std::to_string(i), out);
  } else {
    out.emplace_back(key, scalar_text(v));
  }
}

std::string header_line(const std::vector<std::string>& columns) {
  std::string line;
  for (std::size_t i = 0; i < columns.size(); ++i) line += (i ? "," : "") + csv_cell(columns[i]);
  return line;
}

}  // namespace

FlatRow flatten_result(const Json& result) {
  FlatRow row;
  flatten(result, "", row);
  // Tensor parallelism's cost per token, under short names (also in execution_communication_*).
  const Json* comm = nullptr;
  if (result.is_object() && result.contains("execution") && result["execution"].is_object() &&
      result["execution"].contains("communication") && result["execution"]["communication"].is_object()) {
    comm = &result["execution"]["communication"];
  }
  auto number = [&](const char* key, double scale) {
    if (!comm || !comm->contains(key) || !(*comm)[key].is_number()) return std::string();
    return Json((*comm)[key].get<double>() * scale).dump();
  };
  row.emplace_back("comm_bytes_per_token", number("bytes_per_token", 1));
  row.emplace_back("comm_ms_per_token", number("seconds_per_token", 1e3));
  row.emplace_back("comm_share", number("share_of_forward_time", 1));
  return row;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string q = "\"";
  for (char c : text) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string read_csv_header(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

const std::vector<std::string> kLeadingColumns = {
    "name", "engine",
    "throughput_tokens_per_s", "throughput_total_tokens_per_s", "throughput_samples_per_s",
    "latency_ttft_ms_p50", "latency_ttft_ms_p90", "latency_ttft_ms_p99",
    "latency_tpot_ms_p50", "latency_tpot_ms_p90", "latency_tpot_ms_p99",
    "latency_e2e_ms_p50", "latency_e2e_ms_p90", "latency_e2e_ms_p99",
    "energy_total_j", "energy_j_per_token", "config_device_ids",
    "comm_bytes_per_token", "comm_ms_per_token", "comm_share",
    "status", "error"};

std::vector<std::string> csv_columns(const std::vector<FlatRow>& rows) {
  std::vector<std::string> columns = kLeadingColumns;
  for (const FlatRow& r : rows) {
    for (const auto& [k, v] : r) {
      if (std::find(columns.begin(), columns.end(), k) == columns.end()) columns.push_back(k);
    }
  }
  return columns;
}

const std::optional<std::string>& CsvReport::original(const std::string& path) {
  auto it = originals_.find(path);
  if (it == originals_.end()) {
    std::optional<std::string> text;
    if (std::filesystem::exists(path)) text = read_text_file_or_empty(path);
    it = originals_.emplace(path, std::move(text)).first;
  }
  return it->second;
}

CsvWritten CsvReport::write(const std::vector<FlatRow>& rows) {
  namespace fs = std::filesystem;
  const std::vector<std::string> columns = csv_columns(rows);
  const std::string header = header_line(columns);
  CsvWritten w;
  w.path = path_;
  const fs::path p(path_);
  for (int n = 2;; ++n) {
    const std::optional<std::string>& old = original(w.path);
    if (!old || old->empty() || old->substr(0, old->find('\n')) == header) break;
    if (n > 1000) throw RuntimeError(path_ + ": no free file name for CSV rows with these columns");
    w.path = (p.parent_path() / (p.stem().string() + "-" + std::to_string(n) + p.extension().string())).string();
    w.diverted = true;
  }
  if (!written_.empty() && written_ != w.path) {  // the columns changed: undo the earlier file
    const std::optional<std::string>& old = original(written_);
    if (old) write_file_atomically(written_, *old);
    else std::filesystem::remove(written_);
    written_.clear();
  }
  const std::optional<std::string>& old = original(w.path);
  w.appended = old && !old->empty();
  std::string text = old.value_or("");
  if (!text.empty() && text.back() != '\n') text += "\n";
  if (text.empty()) text = header + "\n";
  for (const FlatRow& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      std::string cell;
      for (const auto& [k, v] : r) {
        if (k == columns[i]) {
          cell = v;
          break;
        }
      }
      line += (i ? "," : "") + csv_cell(cell);
    }
    text += line + "\n";
    ++w.rows;
  }
  write_file_atomically(w.path, text);
  written_ = w.path;
  return w;
}

CsvWritten write_csv(const std::string& path, const std::vector<FlatRow>& rows) { return CsvReport(path).write(rows); }

}  // namespace plexus::bench
