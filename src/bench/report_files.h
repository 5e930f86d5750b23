// Writing a benchmark's results as they come: DIR/NAME.json (the result; for a sweep a summary
// with every run so far under "runs", plus DIR/NAME-<i>.json per point), DIR/NAME.csv (one row
// per run, appended) and DIR/NAME.html. Every file is replaced atomically (core/atomic_file.h)
// after each run, so a crash, a signal or a full disk never leaves a half-written report.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "bench/csv_writer.h"
#include "core/json.h"

namespace plexus::bench {

struct WrittenReports {
  std::vector<std::string> json;  // NAME.json first
  std::string csv, html;          // "" when not asked for
  bool csv_appended = false, csv_diverted = false;
  int csv_rows = 0;
};

class ReportWriter {
 public:
  // `formats` from output.formats; `sweep` the sweep's {key: [values]} or null; `points` how many
  // runs are planned. Creates DIR and proves it writable before anything is measured
  // (InputError naming `dir_source` and DIR, e.g. "--output-dir '/ro'", when it is not).
  ReportWriter(std::string dir, std::string name, std::vector<std::string> formats, Json sweep, std::size_t points,
               const std::string& dir_source);

  // Records one run's result (or a failed / interrupted point's record) and rewrites the
  // reports. RuntimeError naming the file when one cannot be written; files already written stay.
  void add(Json result);
  // Marks the reports interrupted (no more runs will come) and rewrites them.
  void mark_interrupted();

  const WrittenReports& written() const { return written_; }
  const std::vector<Json>& results() const { return results_; }

 private:
  void write_all();
  std::string dir_, name_;
  std::vector<std::string> formats_;
  Json sweep_;
  std::size_t points_;
  bool interrupted_ = false;
  std::vector<Json> results_;
  std::vector<FlatRow> rows_;
  CsvReport csv_;
  WrittenReports written_;
};

// The sweep summary written as NAME.json: {"name", "timestamp", "sweep", "points" (planned),
// "completed", "failed", "interrupted", "runs": [...]}.
Json sweep_summary(const std::string& name, const std::vector<Json>& results, const Json& sweep, std::size_t points = 0,
                   bool interrupted = false);

// A result's "status": "ok" | "failed" | "interrupted" ("ok" for results older than the key).
std::string result_status(const Json& result);

}  // namespace plexus::bench
