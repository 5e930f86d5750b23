// The HTML report's inline SVG charts: lines over the run's time, bars per label, and the spread
// of per-request latencies. Each returns one <svg> element (no scripts, no external references);
// the plot area is a <rect class="plot"> so that a browser test can measure what is drawn in it.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace plexus::bench {

// One line: its own sample times (seconds from the start of the measured run) and values; a
// missing value is skipped. `per_interval`: values[i] is an average over (t[i-1], t[i]] (a
// utilisation), drawn as a level over that interval rather than a point at its end.
struct Series {
  std::string name;
  std::vector<double> t;
  std::vector<std::optional<double>> values;
  bool per_interval = false;
};

// Lines over 0..t_end seconds (the whole run, whatever the series cover), y from 0 to the largest
// value or `y_max`. Series that coincide stay visible: each has its own dash pattern and width,
// few samples are marked with dots, and the legend names a series equal to an earlier one.
std::string line_chart(const std::string& title, const std::string& unit, double t_end, const std::vector<Series>& series,
                       std::optional<double> y_max = std::nullopt);

// One horizontal bar per label; missing values are marked n/a.
std::string bar_chart(const std::string& title, const std::string& unit, const std::vector<std::string>& labels,
                      const std::vector<std::optional<double>>& values);

// Per-request values (latencies) on an axis from 0: few requests as one dot each (stacked where
// they coincide), many as a histogram; the median marked. Empty for no values.
std::string spread_chart(const std::string& title, const std::string& unit, const std::vector<double>& values);

// Text safe inside HTML/SVG elements and attribute values.
std::string html_escape(const std::string& text);
// `v` with `digits` decimals ("%.*f").
std::string fixed(double v, int digits = 1);

}  // namespace plexus::bench
