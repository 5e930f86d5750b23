// JSON, CSV and HTML files of a benchmark, rewritten atomically after every run.
#include "bench/report_files.h"

#include <algorithm>
#include <filesystem>

#include "bench/html_report.h"
#include "core/atomic_file.h"
#include "core/error.h"

namespace plexus::bench {

namespace {

std::string dump(const Json& j) { return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"; }

bool wants(const std::vector<std::string>& formats, const char* f) {
  return std::find(formats.begin(), formats.end(), f) != formats.end();
}

std::string base_path(const std::string& dir, const std::string& name) { return (std::filesystem::path(dir) / name).string(); }

}  // namespace

std::string result_status(const Json& r) {
  if (r.is_object() && r.contains("status") && r["status"].is_string()) return r["status"].get<std::string>();
  return "ok";
}

Json sweep_summary(const std::string& name, const std::vector<Json>& results, const Json& sweep, std::size_t points,
                   bool interrupted) {
  std::size_t failed = 0, completed = 0;
  for (const Json& r : results) {
    const std::string s = result_status(r);
    failed += s == "failed";
    completed += s == "ok";
  }
  return {{"name", name},
          {"timestamp", results.empty() ? Json(nullptr) : results.front().value("timestamp", Json(nullptr))},
          {"sweep", sweep},
          {"points", points ? points : results.size()},
          {"completed", completed},
          {"failed", failed},
          {"interrupted", interrupted},
          {"runs", results}};
}

ReportWriter::ReportWriter(std::string dir, std::string name, std::vector<std::string> formats, Json sweep, std::size_t points,
                           const std::string& dir_source)
    : dir_(std::move(dir)),
      name_(std::move(name)),
      formats_(std::move(formats)),
      sweep_(std::move(sweep)),
      points_(points),
      csv_(base_path(dir_, name_) + ".csv") {
  ensure_writable_dir(dir_, dir_source);
}

void ReportWriter::add(Json result) {
  const std::size_t i = results_.size();
  results_.push_back(std::move(result));
  rows_.push_back(flatten_result(results_.back()));
  if (!sweep_.is_null() && wants(formats_, "json")) {
    const std::string p = base_path(dir_, name_) + "-" + std::to_string(i) + ".json";
    write_file_atomically(p, dump(results_.back()));
    if (std::find(written_.json.begin(), written_.json.end(), p) == written_.json.end()) written_.json.push_back(p);
  }
  write_all();
}

void ReportWriter::mark_interrupted() {
  interrupted_ = true;
  if (!results_.empty()) write_all();
}

void ReportWriter::write_all() {
  const std::string base = base_path(dir_, name_);
  if (wants(formats_, "json")) {
    const std::string main = base + ".json";
    write_file_atomically(main, dump(sweep_.is_null() ? results_.back() : sweep_summary(name_, results_, sweep_, points_, interrupted_)));
    if (written_.json.empty() || written_.json.front() != main) written_.json.insert(written_.json.begin(), main);
  }
  if (wants(formats_, "csv")) {
    const CsvWritten c = csv_.write(rows_);
    written_.csv = c.path;
    written_.csv_appended = c.appended;
    written_.csv_diverted = c.diverted;
    written_.csv_rows = c.rows;
  }
  if (wants(formats_, "html")) {
    written_.html = base + ".html";
    write_file_atomically(written_.html, html_report(name_, results_, sweep_, points_, interrupted_));
  }
}

}  // namespace plexus::bench
