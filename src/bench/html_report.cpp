// HTML + inline SVG charts for benchmark results.
#include "bench/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace plexus::bench {

namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string num(double v, int digits = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string cell(const Json& j, const std::string& path, int digits = 1) {
  const auto v = json_number_at(j, path);
  return v ? num(*v, digits) : std::string("n/a");
}

std::string point_label(const Json& r, std::size_t i) {
  const Json& sp = r.value("sweep_point", Json::object());
  if (!sp.is_object() || sp.empty()) return r.value("name", std::string("run"));
  std::string s = "#" + std::to_string(i);
  for (auto it = sp.begin(); it != sp.end(); ++it) {
    std::string key = it.key();
    const std::size_t dot = key.rfind('.');
    if (dot != std::string::npos) key = key.substr(dot + 1);
    s += " " + key + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return s;
}

struct Series {
  std::string name;
  std::vector<std::optional<double>> values;
};

// A line chart of series over t (seconds), y from 0 to the largest value (or `y_max`).
std::string line_chart(const std::string& title, const std::string& unit, const std::vector<double>& t,
                       const std::vector<Series>& series, std::optional<double> y_max = std::nullopt) {
  const double w = 640, h = 220, l = 56, r = 130, top = 28, bottom = 36;
  const double pw = w - l - r, ph = h - top - bottom;
  double t_max = t.empty() ? 1 : std::max(1e-9, t.back());
  double ymax = 0;
  for (const Series& s : series) {
    for (const auto& v : s.values) {
      if (v) ymax = std::max(ymax, *v);
    }
  }
  if (y_max) ymax = std::max(ymax, *y_max);
  if (ymax <= 0) ymax = 1;
  std::string svg = "<svg role=\"img\" width=\"" + num(w, 0) + "\" height=\"" + num(h, 0) + "\" viewBox=\"0 0 " + num(w, 0) +
                    " " + num(h, 0) + "\"><title>" + html_escape(title) + "</title>";
  svg += "<text x=\"" + num(l, 0) + "\" y=\"16\" class=\"ct\">" + html_escape(title) + "</text>";
  for (int k = 0; k <= 4; ++k) {  // grid and y labels
    const double y = top + ph - ph * k / 4.0;
    svg += "<line x1=\"" + num(l) + "\" y1=\"" + num(y) + "\" x2=\"" + num(l + pw) + "\" y2=\"" + num(y) + "\" class=\"grid\"/>";
    svg += "<text x=\"" + num(l - 6) + "\" y=\"" + num(y + 4) + "\" class=\"yl\">" + num(ymax * k / 4.0, ymax < 10 ? 1 : 0) + "</text>";
  }
  for (int k = 0; k <= 4; ++k) {
    const double x = l + pw * k / 4.0;
    svg += "<text x=\"" + num(x) + "\" y=\"" + num(top + ph + 16) + "\" class=\"xl\">" + num(t_max * k / 4.0, 2) + "</text>";
  }
  svg += "<text x=\"" + num(l + pw / 2) + "\" y=\"" + num(h - 4) + "\" class=\"xl\">time (s)</text>";
  svg += "<text x=\"12\" y=\"" + num(top + ph / 2) + "\" class=\"yl\" transform=\"rotate(-90 12 " + num(top + ph / 2) + ")\">" +
         html_escape(unit) + "</text>";
  for (std::size_t s = 0; s < series.size(); ++s) {
    const std::string color = kColors[s % (sizeof kColors / sizeof kColors[0])];
    std::string points;
    for (std::size_t i = 0; i < series[s].values.size() && i < t.size(); ++i) {
      if (!series[s].values[i]) continue;
      points += num(l + pw * t[i] / t_max) + "," + num(top + ph - ph * *series[s].values[i] / ymax) + " ";
    }
    if (!points.empty()) svg += "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"1.8\" points=\"" + points + "\"/>";
    const double ly = top + 12 + 16.0 * static_cast<double>(s);
    svg += "<rect x=\"" + num(l + pw + 10) + "\" y=\"" + num(ly - 9) + "\" width=\"10\" height=\"10\" fill=\"" + color + "\"/>";
    svg += "<text x=\"" + num(l + pw + 24) + "\" y=\"" + num(ly) + "\" class=\"lg\">" + html_escape(series[s].name) + "</text>";
  }
  return svg + "</svg>";
}

// A bar chart, one bar per label; missing values are marked n/a.
std::string bar_chart(const std::string& title, const std::string& unit, const std::vector<std::string>& labels,
                      const std::vector<std::optional<double>>& values) {
  const double bar = 28, gap = 8, l = 220, top = 28, w = 640;
  const double h = top + static_cast<double>(labels.size()) * (bar + gap) + 10;
  double vmax = 0;
  for (const auto& v : values) {
    if (v) vmax = std::max(vmax, *v);
  }
  if (vmax <= 0) vmax = 1;
  const double pw = w - l - 90;
  std::string svg = "<svg role=\"img\" width=\"" + num(w, 0) + "\" height=\"" + num(h, 0) + "\" viewBox=\"0 0 " + num(w, 0) + " " +
                    num(h, 0) + "\"><title>" + html_escape(title) + "</title>";
  svg += "<text x=\"8\" y=\"16\" class=\"ct\">" + html_escape(title) + " (" + html_escape(unit) + ")</text>";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const double y = top + static_cast<double>(i) * (bar + gap);
    svg += "<text x=\"" + num(l - 6) + "\" y=\"" + num(y + bar / 2 + 4) + "\" class=\"yl\">" + html_escape(labels[i]) + "</text>";
    if (!values[i]) {
      svg += "<text x=\"" + num(l + 4) + "\" y=\"" + num(y + bar / 2 + 4) + "\" class=\"lg\">n/a</text>";
      continue;
    }
    const double bw = std::max(1.0, pw * *values[i] / vmax);
    svg += "<rect x=\"" + num(l) + "\" y=\"" + num(y) + "\" width=\"" + num(bw) + "\" height=\"" + num(bar) + "\" fill=\"" +
           kColors[0] + "\"/>";
    svg += "<text x=\"" + num(l + bw + 6) + "\" y=\"" + num(y + bar / 2 + 4) + "\" class=\"lg\">" +
           num(*values[i], *values[i] < 10 ? 3 : 1) + "</text>";
  }
  return svg + "</svg>";
}

std::string timeline_charts(const Json& r) {
  const Json& tl = r.value("timeline", Json::object());
  if (!tl.is_object() || !tl.contains("t_s")) return "<p>No monitor samples.</p>";
  std::vector<double> t;
  for (const Json& v : tl["t_s"]) t.push_back(v.is_number() ? v.get<double>() : 0.0);
  std::vector<Series> util, power, memory;
  for (auto it = tl["devices"].begin(); it != tl["devices"].end(); ++it) {
    auto read = [&](const char* key) {
      Series s{it.key(), {}};
      bool any = false;
      const Json values = it.value().value(key, Json::array());  // a device may lack a metric
      for (const Json& v : values) {
        s.values.push_back(v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt);
        any = any || v.is_number();
      }
      return any ? std::optional<Series>(s) : std::nullopt;
    };
    if (auto s = read("utilization_percent")) util.push_back(*s);
    if (auto s = read("power_w")) power.push_back(*s);
    if (auto s = read("memory_used_mb")) memory.push_back(*s);
  }
  std::string out = line_chart("Utilisation per device", "%", t, util, 100.0);
  if (power.empty()) {
    out += "<p class=\"note\">No power readings on these devices (no GPU power and no readable RAPL): energy is reported as unavailable, not estimated.</p>";
  } else {
    out += line_chart("Power per device", "W", t, power);
  }
  if (!memory.empty()) out += line_chart("Memory used per device (monitor)", "MiB", t, memory);
  return out;
}

// The executor's per-device counters after every batch: busy fraction and memory in use over the
// measured part (virtual devices and GPUs alike; the monitor cannot see virtual devices).
std::string device_timeline_charts(const Json& r) {
  const Json& dt = r.value("device_timeline", Json());
  if (!dt.is_object() || !dt.contains("t_s") || !dt.contains("devices")) return "";
  std::vector<double> t;
  for (const Json& v : dt["t_s"]) t.push_back(v.is_number() ? v.get<double>() : 0.0);
  std::vector<Series> busy, memory;
  for (auto it = dt["devices"].begin(); it != dt["devices"].end(); ++it) {
    auto read = [&](const char* key, double scale) {
      Series s{it.key(), {}};
      for (const Json& v : it.value().value(key, Json::array())) {
        s.values.push_back(v.is_number() ? std::optional<double>(v.get<double>() * scale) : std::nullopt);
      }
      return s;
    };
    busy.push_back(read("busy_fraction", 100.0));
    memory.push_back(read("memory_in_use_mb", 1.0));
  }
  if (busy.empty()) return "";
  return line_chart("Busy time per device (share of each interval, executor)", "% busy", t, busy, 100.0) +
         line_chart("Memory in use per device (executor)", "MiB", t, memory);
}

// Counts of `values` in equal-width bins from the smallest to the largest, as vertical bars.
std::string histogram(const std::string& title, const std::string& unit, const std::vector<double>& values) {
  if (values.empty()) return "";
  const int bins = std::clamp(static_cast<int>(std::ceil(std::sqrt(static_cast<double>(values.size())))), 1, 20);
  double lo = *std::min_element(values.begin(), values.end()), hi = *std::max_element(values.begin(), values.end());
  if (hi - lo < 1e-9) lo = std::max(0.0, lo - 0.5), hi = lo + 1.0;  // all equal: one bar in the middle
  const double width = (hi - lo) / bins;
  std::vector<int> count(static_cast<std::size_t>(bins), 0);
  for (double v : values) ++count[static_cast<std::size_t>(std::clamp(static_cast<int>((v - lo) / width), 0, bins - 1))];
  const int cmax = *std::max_element(count.begin(), count.end());
  const double w = 640, h = 200, l = 50, top = 28, bottom = 36, pw = w - l - 20, ph = h - top - bottom;
  std::string svg = "<svg role=\"img\" width=\"" + num(w, 0) + "\" height=\"" + num(h, 0) + "\" viewBox=\"0 0 " + num(w, 0) + " " +
                    num(h, 0) + "\"><title>" + html_escape(title) + "</title>";
  svg += "<text x=\"" + num(l, 0) + "\" y=\"16\" class=\"ct\">" + html_escape(title) + " (" + std::to_string(values.size()) +
         " requests)</text>";
  const double bw = pw / bins;
  for (int b = 0; b < bins; ++b) {
    const int c = count[static_cast<std::size_t>(b)];
    const double bh = ph * c / std::max(1, cmax);
    svg += "<rect x=\"" + num(l + bw * b + 1) + "\" y=\"" + num(top + ph - bh) + "\" width=\"" + num(std::max(1.0, bw - 2)) +
           "\" height=\"" + num(bh) + "\" fill=\"" + kColors[0] + "\"><title>" + num(lo + width * b, 2) + "–" +
           num(lo + width * (b + 1), 2) + " " + html_escape(unit) + ": " + std::to_string(c) + "</title></rect>";
  }
  for (int k = 0; k <= 4; ++k) {
    svg += "<text x=\"" + num(l + pw * k / 4.0) + "\" y=\"" + num(top + ph + 16) + "\" class=\"xl\">" + num(lo + (hi - lo) * k / 4.0, 1) +
           "</text>";
  }
  svg += "<text x=\"" + num(l - 6) + "\" y=\"" + num(top + 4) + "\" class=\"yl\">" + std::to_string(cmax) + "</text>";
  svg += "<text x=\"" + num(l - 6) + "\" y=\"" + num(top + ph + 4) + "\" class=\"yl\">0</text>";
  svg += "<text x=\"" + num(l + pw / 2) + "\" y=\"" + num(h - 4) + "\" class=\"xl\">" + html_escape(unit) + " (requests per bin)</text>";
  return svg + "</svg>";
}

std::string latency_histograms(const Json& r) {
  const Json& reqs = r.value("requests", Json::array());
  std::vector<double> e2e, ttft;
  for (const Json& q : reqs) {
    if (q.contains("e2e_ms") && q["e2e_ms"].is_number()) e2e.push_back(q["e2e_ms"].get<double>());
    if (q.contains("ttft_ms") && q["ttft_ms"].is_number()) ttft.push_back(q["ttft_ms"].get<double>());
  }
  return histogram("End-to-end latency per request", "ms", e2e) + histogram("Time to first token per request", "ms", ttft);
}

// The scenario as configured: what a reader needs to know to compare runs.
std::string scenario_line(const Json& r) {
  const Json& c = r.value("config", Json::object());
  const Json& sc = c.value("scenario", Json::object());
  const Json& be = c.value("backend", Json::object());
  auto text = [](const Json& v) { return v.is_null() ? std::string("n/a") : v.is_string() ? v.get<std::string>() : v.dump(); };
  std::string devices = "one engine on the host";
  const Json ids = c.value("device_ids", Json::array());
  if (ids.is_array() && !ids.empty()) {
    devices.clear();
    for (const Json& d : ids) devices += (devices.empty() ? "" : ",") + text(d);
  }
  const Json& ex = r.value("execution", Json::object());
  const Json threads = ex.contains("threads") ? ex["threads"] : be.value("threads", Json(nullptr));
  const Json tp = be.value("tensor_parallel", Json(1)), pp = be.value("pipeline_parallel", Json(1));
  const std::string parallel = tp == Json(1) && pp == Json(1) ? std::string()
                               : ", tensor parallel <b>" + html_escape(text(tp)) + "</b> × pipeline parallel <b>" + html_escape(text(pp)) + "</b>";
  return "<p class=\"scenario\">batch size <b>" + html_escape(text(sc.value("batch_size", Json(nullptr)))) + "</b>, samples <b>" +
         html_escape(text(r.contains("throughput") ? r["throughput"].value("samples", Json(nullptr)) : sc.value("num_samples", Json(nullptr)))) +
         "</b>, new tokens <b>" + html_escape(text(sc.value("max_new_tokens", Json(nullptr)))) + "</b>, warm-up <b>" +
         html_escape(text(sc.value("warmup_samples", Json(nullptr)))) + "</b>, strategy <b>" +
         html_escape(text(be.value("device_map", Json(nullptr)))) + "</b>, dtype <b>" + html_escape(text(be.value("dtype", Json(nullptr)))) +
         "</b>, threads <b>" + html_escape(text(threads)) + "</b>, devices <b>" + html_escape(devices) + "</b>" + parallel + "</p>";
}

// The cost model's prediction beside the measurement: decode tokens/s of all sequences (measured
// as batch size × 1000 / TPOT p50) and time to first token.
std::string predicted_table(const Json& r) {
  const Json& p = r.value("predicted", Json());
  if (!p.is_object()) return "";
  const double batch = json_number_at(r, "config.scenario.batch_size").value_or(1.0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double tpot = json_number_at(r, "latency.tpot_ms.p50").value_or(nan);
  const double ttft = json_number_at(r, "latency.ttft_ms.p50").value_or(nan);
  const double pred = json_number_at(p, "decode_tokens_per_s.batch_" + std::to_string(static_cast<long long>(batch))).value_or(nan);
  const double pttft = json_number_at(p, "seconds_to_first_token").value_or(nan) * 1e3;
  const double measured = tpot > 0 ? batch * 1000.0 / tpot : nan;
  auto num = [](double v, int digits) {
    if (std::isnan(v)) return std::string("-");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return std::string(buf);
  };
  const Json& b = p.value("bottleneck", Json::object());
  return "<h3>Predicted beside measured</h3><table><tr><th></th><th>predicted</th><th>measured</th></tr><tr><td>decode tok/s (batch " +
         num(batch, 0) + ")</td><td>" + num(pred, 1) + "</td><td>" + num(measured, 1) + "</td></tr><tr><td>TTFT ms</td><td>" +
         num(pttft, 1) + "</td><td>" + num(ttft, 1) + "</td></tr></table><p class=\"note\">bottleneck: device " +
         html_escape(b.value("device", Json("-")).dump()) + ", " + html_escape(b.value("resource", std::string("-"))) +
         "; facts: " + html_escape(p.value("facts_source", std::string())) + "</p>\n";
}

// Tensor parallelism's collectives: what one rank moved and waited per token, and their share of
// the forward time (execution.communication); empty for a run without collectives.
std::string communication_line(const Json& r) {
  const Json& ex = r.value("execution", Json::object());
  const Json comm = ex.is_object() ? ex.value("communication", Json()) : Json();
  if (!comm.is_object()) return "";
  auto calls = [&](const char* op) { return json_number_at(comm, std::string("collectives.") + op + ".calls").value_or(0.0); };
  return "<p class=\"comm\">Communication of " + num(comm.value("ranks", 0.0), 0) + " tensor-parallel ranks: " +
         num(comm.value("bytes_per_token", 0.0) / 1024.0, 2) + " KiB per token and rank in " +
         num(comm.value("seconds_per_token", 0.0) * 1e3, 3) + " ms, " + num(comm.value("share_of_forward_time", 0.0) * 100.0, 1) +
         "% of the forward time (" + num(calls("all_reduce"), 0) + " all-reduce, " + num(calls("all_gather"), 0) +
         " all-gather calls).</p>";
}

std::string plan_table(const Json& r) {
  std::string out = "<table><tr><th>device</th><th>holds</th><th>busy</th><th>peak</th><th>budget</th></tr>";
  const Json& ex = r.value("execution", Json::object());
  const Json devices = ex.value("devices", Json::array());
  if (devices.empty()) {
    return "<p>One engine on the host (no devices named in <code>backend</code>); " +
           html_escape(std::to_string(ex.value("threads", 0))) + " threads, " + html_escape(ex.value("isa", std::string("?"))) + ".</p>";
  }
  std::vector<std::string> names;
  std::vector<std::optional<double>> busy;
  for (const Json& d : devices) {
    if (d.value("holds", std::string()).empty()) continue;  // computes nothing (e.g. the host holding no offload)
    names.push_back(d.value("name", std::string()));
    busy.push_back(json_number_at(d, "busy_fraction"));
  }
  for (const Json& d : devices) {
    out += "<tr><td>" + html_escape(d.value("name", std::string())) + "</td><td>" + html_escape(d.value("holds", std::string())) +
           "</td><td>" + cell(d, "busy_fraction", 2) + "</td><td>" + num(d.value("peak_bytes", 0.0) / 1048576.0) +
           " MiB</td><td>" + num(d.value("budget_bytes", 0.0) / 1048576.0, 0) + " MiB</td></tr>";
  }
  out += "</table>";
  // Virtual devices have no utilisation counter of their own: their busy fraction (time their
  // queue computed / wall time of the forward passes) is the per-device utilisation of the run.
  if (!names.empty()) out += bar_chart("Busy fraction per device (measured part)", "fraction of forward wall time", names, busy);
  return out;
}

}  // namespace

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

std::string html_report(const std::string& name, const std::vector<Json>& results, const Json& sweep, std::size_t points,
                        bool interrupted) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>plexus bench: " + html_escape(name) +
                  "</title>\n<style>body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}"
                  "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
                  "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.ct{font-size:13px;font-weight:bold}"
                  ".yl{font-size:10px;text-anchor:end}.xl{font-size:10px;text-anchor:middle}.lg{font-size:11px}"
                  ".grid{stroke:#e5e5e5}.note{color:#666}code{background:#f3f3f3}svg{display:block;margin:0.5em 0}"
                  ".warn{background:#fff3cd;padding:0.5em}.failed{color:#b00}</style>"
                  "</head><body>\n<h1>plexus bench: " + html_escape(name) + "</h1>\n";
  if (!results.empty()) {
    const Json& env = results.front().value("environment", Json::object());
    h += "<p>" + html_escape(results.front().value("timestamp", std::string())) + " on " + html_escape(env.value("hostname", std::string())) +
         " (" + html_escape(env.value("cpu", std::string())) + "), plexus " + html_escape(env.value("plexus_version", std::string())) +
         " " + html_escape(env.value("plexus_commit", std::string())) + "; model <code>" +
         html_escape(results.front()["config"].value("model", std::string())) + "</code></p>\n";
  }
  std::size_t failed = 0;
  for (const Json& r : results) failed += r.value("status", std::string("ok")) == "failed";
  const std::size_t planned = points ? points : results.size();
  if (interrupted || failed > 0 || planned > results.size()) {
    h += "<p class=\"warn\">" + std::to_string(results.size()) + " of " + std::to_string(planned) + " run(s) recorded" +
         (failed ? ", " + std::to_string(failed) + " failed" : std::string()) + (interrupted ? "; interrupted (SIGINT/SIGTERM)" : "") +
         (!interrupted && planned > results.size() ? "; in progress" : "") + ".</p>\n";
  }
  h += "<h2>Summary</h2><table><tr><th>run</th><th>status</th><th>output tok/s</th><th>total tok/s</th><th>samples/s</th>"
       "<th>TTFT p50 ms</th><th>TTFT p99 ms</th><th>TPOT p50 ms</th><th>TPOT p99 ms</th><th>E2E p50 ms</th><th>E2E p99 ms</th>"
       "<th>energy J</th><th>J/token</th><th>energy method</th></tr>\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Json& r = results[i];
    h += "<tr><td>" + html_escape(point_label(r, i)) + "</td><td>" + html_escape(r.value("status", std::string("ok"))) + "</td><td>" +
         cell(r, "throughput.tokens_per_s") + "</td><td>" + cell(r, "throughput.total_tokens_per_s") + "</td><td>" +
         cell(r, "throughput.samples_per_s", 2) + "</td><td>" + cell(r, "latency.ttft_ms.p50") + "</td><td>" + cell(r, "latency.ttft_ms.p99") +
         "</td><td>" + cell(r, "latency.tpot_ms.p50") + "</td><td>" + cell(r, "latency.tpot_ms.p99", 2) + "</td><td>" + cell(r, "latency.e2e_ms.p50") + "</td><td>" + cell(r, "latency.e2e_ms.p99") + "</td><td>" +
         cell(r, "energy.total_j", 2) + "</td><td>" + cell(r, "energy.j_per_token", 4) + "</td><td>" +
         html_escape(r.value("energy", Json::object()).value("method", std::string("unavailable"))) + "</td></tr>\n";
  }
  h += "</table>\n";
  if (!sweep.is_null() && results.size() > 1) {
    std::vector<std::string> labels;
    std::vector<std::optional<double>> tps, jpt;
    for (std::size_t i = 0; i < results.size(); ++i) {
      labels.push_back(point_label(results[i], i));
      tps.push_back(json_number_at(results[i], "throughput.tokens_per_s"));
      jpt.push_back(json_number_at(results[i], "energy.j_per_token"));
    }
    h += "<h2>Sweep</h2><p>Keys swept: <code>" + html_escape(sweep.dump()) + "</code></p>\n";
    h += bar_chart("Output throughput per point", "tokens/s", labels, tps);
    h += bar_chart("Energy per output token per point", "J/token", labels, jpt);
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Json& r = results[i];
    h += "<h2>Run " + html_escape(point_label(r, i)) + "</h2>\n" + scenario_line(r) + "\n";
    if (r.contains("error") && r["error"].is_string()) {
      h += "<p class=\"failed\">" + html_escape(r.value("status", std::string("failed"))) + ": " + html_escape(r["error"].get<std::string>()) + "</p>\n";
    }
    if (!r.contains("throughput")) continue;  // nothing measured
    if (r.value("interrupted", false)) h += "<p class=\"warn\">Interrupted: the figures cover the samples measured before the signal.</p>\n";
    h += timeline_charts(r) + device_timeline_charts(r) + "\n<h3>Latency</h3>" + latency_histograms(r) +
         "\n<h3>Plan and devices</h3>" + plan_table(r) + communication_line(r) + "\n" + predicted_table(r);
    const Json& gpus = r.value("gpu_stats", Json::object());
    if (gpus.is_object() && !gpus.empty()) {
      h += "<table><tr><th>GPU</th><th>name</th><th>util %</th><th>memory MiB</th><th>memory %</th><th>temp °C</th><th>power W</th></tr>";
      for (auto it = gpus.begin(); it != gpus.end(); ++it) {
        const Json& g = it.value();
        h += "<tr><td>" + html_escape(it.key()) + "</td><td>" + html_escape(g.value("name", std::string())) + "</td><td>" +
             cell(g, "utilization_percent") + "</td><td>" + cell(g, "memory_used_mb", 0) + "</td><td>" + cell(g, "memory_percent") +
             "</td><td>" + cell(g, "temperature_c") + "</td><td>" + cell(g, "power_draw_w") + "</td></tr>";
      }
      h += "</table>\n";
    }
  }
  h += "<p class=\"note\">Written by plexus bench. Metric definitions: docs/benchmarks.md.</p>\n</body></html>\n";
  return h;
}

}  // namespace plexus::bench
