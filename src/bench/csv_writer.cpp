// Flattening result trees into CSV rows, and writing / appending them.
#include "bench/csv_writer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace plexus::bench {

namespace {

const char* const kExcluded[] = {"timeline", "requests", "plan_device_map", "plan_placement", "config_scenario_prompts",
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

CsvWritten write_csv(const std::string& path, const std::vector<FlatRow>& rows) {
  namespace fs = std::filesystem;
  std::vector<std::string> columns;
  for (const FlatRow& r : rows) {
    for (const auto& [k, v] : r) {
      if (std::find(columns.begin(), columns.end(), k) == columns.end()) columns.push_back(k);
    }
  }
  const std::string header = header_line(columns);
  CsvWritten w;
  w.path = path;
  const fs::path p(path);
  for (int n = 2; fs::exists(w.path) && fs::file_size(w.path) > 0 && read_csv_header(w.path) != header; ++n) {
    w.path = (p.parent_path() / (p.stem().string() + "-" + std::to_string(n) + p.extension().string())).string();
    w.diverted = true;
    if (n > 1000) throw RuntimeError(path + ": no free file name for CSV rows with these columns");
  }
  w.appended = fs::exists(w.path) && fs::file_size(w.path) > 0;
  bool needs_newline = false;
  if (w.appended) {
    std::ifstream in(w.path, std::ios::binary);
    in.seekg(-1, std::ios::end);
    char last = '\n';
    in.get(last);
    needs_newline = last != '\n';
  }
  std::ofstream out(w.path, std::ios::app | std::ios::binary);
  if (!out) throw RuntimeError(w.path + ": cannot write the CSV file");
  if (needs_newline) out << "\n";
  if (!w.appended) out << header << "\n";
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
    out << line << "\n";
    ++w.rows;
  }
  if (!out) throw RuntimeError(w.path + ": writing the CSV file failed");
  return w;
}

}  // namespace plexus::bench
