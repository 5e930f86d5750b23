// Inline SVG charts for the HTML report.
#include "bench/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace plexus::bench {

namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
// Dash patterns and widths by series: a line drawn over an equal one leaves the one below
// showing through its gaps.
const char* const kDashes[] = {"", "7 4", "2 3", "10 3 2 3", "4 4", "1 5"};
const double kWidths[] = {3.2, 2.4, 1.8, 1.4};

template <typename T, std::size_t N>
const T& cyclic(const T (&a)[N], std::size_t i) {
  return a[i % N];
}

// The smallest of 1, 2, 4, 6, 8 × 10^k at or above v (> 0): an axis maximum whose quarters are
// round numbers.
double nice_ceiling(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 4.0, 6.0, 8.0, 10.0})
    if (m * p >= v * (1 - 1e-9)) return m * p;
  return 10 * p;
}

// Digits that tell ticks of `step` apart.
int digits_for(double step) { return step >= 10 ? 0 : step >= 1 ? 1 : step >= 0.1 ? 2 : 3; }

std::string svg_open(const std::string& cls, double w, double h, const std::string& title) {
  return "<svg class=\"chart " + cls + "\" role=\"img\" width=\"" + fixed(w, 0) + "\" height=\"" + fixed(h, 0) + "\" viewBox=\"0 0 " +
         fixed(w, 0) + " " + fixed(h, 0) + "\"><title>" + html_escape(title) + "</title>";
}

std::string text(double x, double y, const std::string& cls, const std::string& body, const std::string& extra = "") {
  return "<text x=\"" + fixed(x) + "\" y=\"" + fixed(y) + "\" class=\"" + cls + "\"" + extra + ">" + body + "</text>";
}

// Whether two series hold the same samples (within 0.5% of the chart's height).
bool same_line(const Series& a, const Series& b, double ymax) {
  if (a.t != b.t || a.values.size() != b.values.size()) return false;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    if (a.values[i].has_value() != b.values[i].has_value()) return false;
    if (a.values[i] && std::abs(*a.values[i] - *b.values[i]) > 0.005 * ymax) return false;
  }
  return true;
}

}  // namespace

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string line_chart(const std::string& title, const std::string& unit, double t_end, const std::vector<Series>& series,
                       std::optional<double> y_max) {
  const double w = 640, h = 220, l = 56, r = 170, top = 28, bottom = 36;
  const double pw = w - l - r, ph = h - top - bottom;
  const double t_max = std::max(1e-9, t_end);
  double ymax = 0;
  for (const Series& s : series)
    for (const auto& v : s.values)
      if (v) ymax = std::max(ymax, *v);
  ymax = y_max ? std::max(ymax, *y_max) : nice_ceiling(ymax);
  std::string svg = svg_open("line", w, h, title) + text(l, 16, "ct", html_escape(title));
  svg += "<rect class=\"plot\" x=\"" + fixed(l) + "\" y=\"" + fixed(top) + "\" width=\"" + fixed(pw) + "\" height=\"" + fixed(ph) +
         "\" fill=\"none\"/>";
  for (int k = 0; k <= 4; ++k) {  // grid and y labels
    const double y = top + ph - ph * k / 4.0;
    svg += "<line x1=\"" + fixed(l) + "\" y1=\"" + fixed(y) + "\" x2=\"" + fixed(l + pw) + "\" y2=\"" + fixed(y) + "\" class=\"grid\"/>";
    svg += text(l - 6, y + 4, "yl", fixed(ymax * k / 4.0, digits_for(ymax / 4)));
  }
  for (int k = 0; k <= 4; ++k) svg += text(l + pw * k / 4.0, top + ph + 16, "xl", fixed(t_max * k / 4.0, digits_for(t_max / 4)));
  svg += text(l + pw / 2, h - 4, "xl", "time since the measured run started (s)");
  svg += text(12, top + ph / 2, "yl", html_escape(unit), " transform=\"rotate(-90 12 " + fixed(top + ph / 2) + ")\"");
  for (std::size_t s = 0; s < series.size(); ++s) {
    const Series& se = series[s];
    const std::string color = cyclic(kColors, s);
    std::string points, dots;
    std::size_t n = 0;
    auto x_of = [&](double t) { return l + pw * std::clamp(t / t_max, 0.0, 1.0); };
    for (std::size_t i = 0; i < se.values.size() && i < se.t.size(); ++i) {
      if (!se.values[i]) continue;
      const double x = x_of(se.t[i]), y = top + ph - ph * std::clamp(*se.values[i] / ymax, 0.0, 1.0);
      if (se.per_interval && i > 0) points += fixed(x_of(se.t[i - 1])) + "," + fixed(y) + " ";  // the interval's start
      points += fixed(x) + "," + fixed(y) + " ";
      dots += "<circle cx=\"" + fixed(x) + "\" cy=\"" + fixed(y) + "\" r=\"2.2\" fill=\"" + color + "\"/>";
      ++n;
    }
    if (n > 0) {
      const std::string dash = cyclic(kDashes, s);
      svg += "<polyline data-series=\"" + html_escape(se.name) + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"" +
             fixed(cyclic(kWidths, s)) + "\"" + (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + " points=\"" + points + "\"/>";
      if (n <= 40) svg += dots;  // few samples: each one visible
    }
    std::string label = se.name;
    for (std::size_t e = 0; e < s; ++e) {
      if (same_line(series[e], se, ymax)) {
        label += " (= " + series[e].name + ")";
        break;
      }
    }
    if (n == 0) label += ": no data";
    const double ly = top + 8 + 16.0 * static_cast<double>(s);
    const std::string dash = cyclic(kDashes, s);
    svg += "<line x1=\"" + fixed(l + pw + 8) + "\" y1=\"" + fixed(ly - 4) + "\" x2=\"" + fixed(l + pw + 26) + "\" y2=\"" + fixed(ly - 4) +
           "\" stroke=\"" + color + "\" stroke-width=\"2.4\"" + (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>";
    svg += text(l + pw + 30, ly, "lg", html_escape(label));
  }
  return svg + "</svg>";
}

std::string bar_chart(const std::string& title, const std::string& unit, const std::vector<std::string>& labels,
                      const std::vector<std::optional<double>>& values) {
  const double bar = 28, gap = 8, l = 220, top = 28, w = 640;
  const double h = top + static_cast<double>(labels.size()) * (bar + gap) + 10;
  double vmax = 0;
  for (const auto& v : values)
    if (v) vmax = std::max(vmax, *v);
  if (vmax <= 0) vmax = 1;
  const double pw = w - l - 90;
  std::string svg = svg_open("bar", w, h, title) + text(8, 16, "ct", html_escape(title) + " (" + html_escape(unit) + ")");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const double y = top + static_cast<double>(i) * (bar + gap);
    svg += text(l - 6, y + bar / 2 + 4, "yl", html_escape(labels[i]));
    if (!values[i]) {
      svg += text(l + 4, y + bar / 2 + 4, "lg", "n/a");
      continue;
    }
    const double bw = std::max(1.0, pw * *values[i] / vmax);
    svg += "<rect x=\"" + fixed(l) + "\" y=\"" + fixed(y) + "\" width=\"" + fixed(bw) + "\" height=\"" + fixed(bar) + "\" fill=\"" +
           kColors[0] + "\"/>";
    svg += text(l + bw + 6, y + bar / 2 + 4, "lg", fixed(*values[i], *values[i] < 10 ? 3 : 1));
  }
  return svg + "</svg>";
}

std::string spread_chart(const std::string& title, const std::string& unit, const std::vector<double>& values) {
  if (values.empty()) return "";
  constexpr std::size_t kDotsUpTo = 60;  // beyond: a histogram
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  const double xmax = nice_ceiling(v.back());
  const double w = 640, l = 50, r = 20, pw = w - l - r, top = 28, bottom = 36;
  auto x_of = [&](double value) { return l + pw * std::clamp(value / xmax, 0.0, 1.0); };
  std::string body;
  double ph = 0;
  if (v.size() <= kDotsUpTo) {
    // One dot per request; dots closer than a dot's width stack upwards.
    const double dot = 5, step = 2 * dot + 1;
    std::vector<std::pair<double, int>> placed;  // (x, level)
    int levels = 1;
    for (double value : v) {
      const double x = x_of(value);
      int level = 0;
      for (const auto& [px, pl] : placed)
        if (std::abs(px - x) < 2 * dot && pl >= level) level = pl + 1;
      placed.emplace_back(x, level);
      levels = std::max(levels, level + 1);
    }
    ph = std::max(40.0, levels * step + 8);
    for (const auto& [x, level] : placed) {
      body += "<circle class=\"dot\" cx=\"" + fixed(x) + "\" cy=\"" + fixed(top + ph - dot - 2 - level * step) + "\" r=\"" + fixed(dot) +
              "\" fill=\"" + kColors[0] + "\" fill-opacity=\"0.75\"/>";
    }
  } else {
    const int bins = std::clamp(static_cast<int>(std::ceil(std::sqrt(static_cast<double>(v.size())))), 5, 40);
    const double width = xmax / bins;
    std::vector<int> count(static_cast<std::size_t>(bins), 0);
    for (double value : v) ++count[static_cast<std::size_t>(std::clamp(static_cast<int>(value / width), 0, bins - 1))];
    const int cmax = *std::max_element(count.begin(), count.end());
    ph = 120;
    const double bw = pw / bins;
    for (int b = 0; b < bins; ++b) {
      const int c = count[static_cast<std::size_t>(b)];
      const double bh = ph * c / std::max(1, cmax);
      body += "<rect x=\"" + fixed(l + bw * b + 0.5) + "\" y=\"" + fixed(top + ph - bh) + "\" width=\"" + fixed(std::max(1.0, bw - 1)) +
              "\" height=\"" + fixed(bh) + "\" fill=\"" + kColors[0] + "\"><title>" + fixed(width * b, 2) + "–" + fixed(width * (b + 1), 2) +
              " " + html_escape(unit) + ": " + std::to_string(c) + "</title></rect>";
    }
    body += text(l - 6, top + 4, "yl", std::to_string(cmax)) + text(l - 6, top + ph + 4, "yl", "0");
  }
  const double h = top + ph + bottom;
  std::string svg = svg_open("spread", w, h, title) +
                    text(l, 16, "ct", html_escape(title) + " (" + std::to_string(v.size()) + " requests, median " +
                                          fixed(median, median < 10 ? 2 : 1) + " " + html_escape(unit) + ")");
  svg += "<rect class=\"plot\" x=\"" + fixed(l) + "\" y=\"" + fixed(top) + "\" width=\"" + fixed(pw) + "\" height=\"" + fixed(ph) +
         "\" fill=\"none\"/>";
  svg += "<line x1=\"" + fixed(l) + "\" y1=\"" + fixed(top + ph) + "\" x2=\"" + fixed(l + pw) + "\" y2=\"" + fixed(top + ph) + "\" class=\"axis\"/>";
  svg += body;
  svg += "<line x1=\"" + fixed(x_of(median)) + "\" y1=\"" + fixed(top) + "\" x2=\"" + fixed(x_of(median)) + "\" y2=\"" + fixed(top + ph) +
         "\" class=\"median\"/>";
  for (int k = 0; k <= 4; ++k) svg += text(l + pw * k / 4.0, top + ph + 16, "xl", fixed(xmax * k / 4.0, digits_for(xmax / 4)));
  svg += text(l + pw / 2, h - 4, "xl", html_escape(unit) + (v.size() <= kDotsUpTo ? " (one dot per request)" : " (requests per bin)"));
  return svg + "</svg>";
}

}  // namespace plexus::bench
