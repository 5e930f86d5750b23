// JSON, CSV and HTML files of a benchmark.
#include "bench/report_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "bench/csv_writer.h"
#include "bench/html_report.h"
#include "core/error.h"

namespace plexus::bench {

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw RuntimeError(path + ": cannot write (check output.dir / --output-dir)");
  out << text;
  if (!out) throw RuntimeError(path + ": writing failed");
}

std::string dump(const Json& j) { return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n"; }

bool wants(const std::vector<std::string>& formats, const char* f) {
  return std::find(formats.begin(), formats.end(), f) != formats.end();
}

}  // namespace

Json sweep_summary(const std::string& name, const std::vector<Json>& results, const Json& sweep) {
  return {{"name", name},
          {"timestamp", results.empty() ? Json(nullptr) : results.front().value("timestamp", Json(nullptr))},
          {"sweep", sweep},
          {"runs", results}};
}

WrittenReports write_reports(const std::string& dir, const std::string& name, const std::vector<std::string>& formats,
                             const std::vector<Json>& results, const Json& sweep) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw RuntimeError(dir + ": cannot create the output directory: " + ec.message());
  const fs::path base = fs::path(dir) / name;
  WrittenReports w;
  const bool is_sweep = !sweep.is_null();
  if (wants(formats, "json")) {
    const std::string main = base.string() + ".json";
    write_text(main, dump(is_sweep ? sweep_summary(name, results, sweep) : results.front()));
    w.json.push_back(main);
    if (is_sweep) {
      for (std::size_t i = 0; i < results.size(); ++i) {
        const std::string p = base.string() + "-" + std::to_string(i) + ".json";
        write_text(p, dump(results[i]));
        w.json.push_back(p);
      }
    }
  }
  if (wants(formats, "csv")) {
    std::vector<FlatRow> rows;
    for (const Json& r : results) rows.push_back(flatten_result(r));
    const CsvWritten c = write_csv(base.string() + ".csv", rows);
    w.csv = c.path;
    w.csv_appended = c.appended;
    w.csv_diverted = c.diverted;
    w.csv_rows = c.rows;
  }
  if (wants(formats, "html")) {
    w.html = base.string() + ".html";
    write_text(w.html, html_report(name, results, sweep));
  }
  return w;
}

}  // namespace plexus::bench
