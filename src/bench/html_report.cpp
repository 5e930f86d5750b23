// The HTML report of benchmark results: the page, its tables and its sections (charts: svg_charts).
#include "bench/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "bench/svg_charts.h"

namespace plexus::bench {

namespace {

std::string num(double v, int digits = 1) { return fixed(v, digits); }

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

// Each device's series `key` of a timeline ({"t_s": [...], "devices": {name: {key: [...]}}}),
// values × scale; devices without a number in it are left out.
std::vector<Series> timeline_series(const Json& timeline, const char* key, double scale, const std::string& suffix = "",
                                    bool per_interval = false) {
  std::vector<Series> out;
  if (!timeline.is_object() || !timeline.contains("t_s") || !timeline.contains("devices")) return out;
  std::vector<double> t;
  for (const Json& v : timeline["t_s"]) t.push_back(v.is_number() ? v.get<double>() : 0.0);
  for (auto it = timeline["devices"].begin(); it != timeline["devices"].end(); ++it) {
    Series s{it.key() + suffix, t, {}, per_interval};
    bool any = false;
    for (const Json& v : it.value().value(key, Json::array())) {  // a device may lack a metric
      s.values.push_back(v.is_number() ? std::optional<double>(v.get<double>() * scale) : std::nullopt);
      any = any || v.is_number();
    }
    if (any) out.push_back(std::move(s));
  }
  return out;
}

double last_time(const Json& timeline) {
  if (!timeline.is_object() || !timeline.contains("t_s") || !timeline["t_s"].is_array() || timeline["t_s"].empty()) return 0;
  const Json& t = timeline["t_s"].back();
  return t.is_number() ? t.get<double>() : 0;
}

// The run over time: utilisation of every device — the monitor's (host CPU, GPUs) and the
// executor's busy share of each computing device (virtual devices have no counter of their
// own) —, power, and memory as the monitor and the executor see it. One time axis: both start
// when the measured part starts.
std::string timeline_charts(const Json& r) {
  const Json& tl = r.value("timeline", Json());
  const Json& dt = r.value("device_timeline", Json());
  const double t_end = std::max(last_time(tl), last_time(dt));
  // Both are shares of the time since the previous sample: levels over each interval.
  std::vector<Series> util = timeline_series(tl, "utilization_percent", 1.0, "", true);
  for (Series& s : timeline_series(dt, "busy_fraction", 100.0, " busy", true)) util.push_back(std::move(s));
  if (util.empty()) return "<p>No monitor samples.</p>";
  std::string out = line_chart("Utilisation per device (host CPU: /proc/stat; devices: share of time computing)", "%", t_end, util, 100.0);
  const std::vector<Series> power = timeline_series(tl, "power_w", 1.0);
  if (power.empty()) {
    out += "<p class=\"note\">No power readings on these devices (no GPU power and no readable RAPL): energy is reported as unavailable, not estimated.</p>";
  } else {
    out += line_chart("Power per device", "W", t_end, power);
  }
  const std::vector<Series> memory = timeline_series(tl, "memory_used_mb", 1.0);
  if (!memory.empty()) out += line_chart("Memory used per device (monitor)", "MiB", t_end, memory);
  const std::vector<Series> in_use = timeline_series(dt, "memory_in_use_mb", 1.0);
  if (!in_use.empty()) out += line_chart("Memory in use per device (executor)", "MiB", t_end, in_use);
  return out;
}

std::string latency_charts(const Json& r) {
  const Json& reqs = r.value("requests", Json::array());
  std::vector<double> e2e, ttft;
  for (const Json& q : reqs) {
    if (q.contains("e2e_ms") && q["e2e_ms"].is_number()) e2e.push_back(q["e2e_ms"].get<double>());
    if (q.contains("ttft_ms") && q["ttft_ms"].is_number()) ttft.push_back(q["ttft_ms"].get<double>());
  }
  return spread_chart("End-to-end latency per request", "ms", e2e) + spread_chart("Time to first token per request", "ms", ttft);
}

// The scenario as configured: what a reader needs to know to compare runs.
// The line of a run against another engine (backend.type openai): the server, the load, the prompts.
std::string server_line(const Json& r) {
  const Json& s = r["server"];
  const Json& sc = r.value("config", Json::object()).value("scenario", Json::object());
  auto text = [](const Json& v) { return v.is_null() ? std::string("n/a") : v.is_string() ? v.get<std::string>() : v.dump(); };
  const Json rate = sc.value("request_rate", Json(nullptr));
  const std::string load = rate.is_null() ? "closed loop, <b>" + html_escape(text(sc.value("concurrency", Json(1)))) + "</b> client(s)"
                                          : "open loop at <b>" + html_escape(text(rate)) + "</b> requests/s, burstiness <b>" +
                                                html_escape(text(sc.value("burstiness", Json(1)))) + "</b>";
  return "<p class=\"scenario\">engine <b>" + html_escape(text(s.value("engine", Json(nullptr)))) + "</b> at <code>" +
         html_escape(text(s.value("url", Json(nullptr)))) + "</code>, model <b>" + html_escape(text(s.value("model", Json(nullptr)))) +
         "</b>, endpoint <b>" + html_escape(text(s.value("endpoint", Json(nullptr)))) + "</b>; " + load + ", requests <b>" +
         html_escape(text(r.contains("throughput") ? r["throughput"].value("requests", Json(nullptr)) : sc.value("num_samples", Json(nullptr)))) +
         "</b>, errors <b>" + html_escape(text(r.value("errors", Json::object()).value("count", Json(nullptr)))) + "</b></p>";
}

std::string scenario_line(const Json& r) {
  if (r.contains("server") && r["server"].is_object()) return server_line(r);
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
  // The dtype the run computed in (the plan's: the checkpoint's own), else as configured.
  const Json& plan = r.value("plan", Json::object());
  const Json dtype = plan.is_object() && plan.contains("dtype") && plan["dtype"].is_string() ? plan["dtype"] : be.value("dtype", Json(nullptr));
  const Json quantize = be.value("quantize", Json(nullptr));
  const Json tp = be.value("tensor_parallel", Json(1)), pp = be.value("pipeline_parallel", Json(1));
  const Json ep = be.value("expert_parallel", Json(1));
  const std::string parallel = tp == Json(1) && pp == Json(1) && ep == Json(1) ? std::string()
                               : ", " + std::string(ep == Json(1) ? "tensor" : "expert") + " parallel <b>" +
                                     html_escape(text(ep == Json(1) ? tp : ep)) + "</b> × pipeline parallel <b>" + html_escape(text(pp)) + "</b>";
  return "<p class=\"scenario\">batch size <b>" + html_escape(text(sc.value("batch_size", Json(nullptr)))) + "</b>, samples <b>" +
         html_escape(text(r.contains("throughput") ? r["throughput"].value("samples", Json(nullptr)) : sc.value("num_samples", Json(nullptr)))) +
         "</b>, new tokens <b>" + html_escape(text(sc.value("max_new_tokens", Json(nullptr)))) + "</b>, warm-up <b>" +
         html_escape(text(sc.value("warmup_samples", Json(nullptr)))) + "</b>, strategy <b>" +
         html_escape(text(be.value("device_map", Json(nullptr)))) + "</b>, dtype <b>" + html_escape(text(dtype)) + "</b>" +
         (quantize.is_string() ? ", quantised on load <b>" + html_escape(quantize.get<std::string>()) + "</b>" : std::string()) +
         ", threads <b>" + html_escape(text(threads)) + "</b>, devices <b>" + html_escape(devices) + "</b>" + parallel + "</p>";
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
  auto num = [](double v, int digits) { return std::isnan(v) ? std::string("-") : fixed(v, digits); };
  const Json& b = p.value("bottleneck", Json::object());
  return "<h3>Predicted beside measured</h3><table><tr><th></th><th>predicted</th><th>measured</th></tr><tr><td>decode tok/s (batch " +
         num(batch, 0) + ")</td><td>" + num(pred, 1) + "</td><td>" + num(measured, 1) + "</td></tr><tr><td>TTFT ms</td><td>" +
         num(pttft, 1) + "</td><td>" + num(ttft, 1) + "</td></tr></table><p class=\"note\">bottleneck: device " +
         html_escape(b.value("device", Json("-")).is_string() ? b["device"].get<std::string>() : b.value("device", Json("-")).dump()) + ", " + html_escape(b.value("resource", std::string("-"))) +
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

// "p50 / p99" of a latency in one cell.
std::string percentiles_cell(const Json& r, const std::string& metric) {
  return cell(r, "latency." + metric + ".p50") + " / " + cell(r, "latency." + metric + ".p99", 2);
}

// One row per run (energy: J/token over the whole run and of the forward passes alone, the idle
// power before the load, the average power and GPU utilisation during it); energy that is not
// available says why below the table (energy.note: no power source on this host, ...), each
// reason once.
std::string summary_table(const std::vector<Json>& results) {
  std::string h = "<table class=\"summary\"><tr><th>run</th><th>status</th><th>output tok/s</th><th>total tok/s</th><th>samples/s</th>"
                  "<th>TTFT ms<br>p50 / p99</th><th>TPOT ms<br>p50 / p99</th><th>E2E ms<br>p50 / p99</th>"
                  "<th>energy J</th><th>J/token<br>run / forwards</th><th>idle W</th><th>load W / GPU util %</th>"
                  "<th>energy method</th></tr>\n";
  std::vector<std::string> reasons;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Json& r = results[i];
    const Json& energy = r.value("energy", Json::object());
    std::string method = html_escape(energy.value("method", std::string("unavailable")));
    const std::string note = energy.value("note", std::string());
    if (!note.empty() && r.contains("throughput")) {
      auto at = std::find(reasons.begin(), reasons.end(), note);
      if (at == reasons.end()) at = reasons.insert(reasons.end(), note);
      method += "<sup>" + std::to_string(at - reasons.begin() + 1) + "</sup>";
    }
    // Why J/token is empty (a command that printed no token line), as a footnote of its cell.
    std::string per_token = cell(r, "energy.j_per_token", 4);
    if (const std::string why = energy.value("j_per_token_note", std::string()); !why.empty()) {
      auto at = std::find(reasons.begin(), reasons.end(), why);
      if (at == reasons.end()) at = reasons.insert(reasons.end(), why);
      per_token += "<sup>" + std::to_string(at - reasons.begin() + 1) + "</sup>";
    }
    std::string run = html_escape(point_label(r, i));
    if (r.contains("engine") && r["engine"].is_string()) run += "<br>engine " + html_escape(r["engine"].get<std::string>());
    h += "<tr><td>" + run + "</td><td>" + html_escape(r.value("status", std::string("ok"))) + "</td><td>" +
         cell(r, "throughput.tokens_per_s") + "</td><td>" + cell(r, "throughput.total_tokens_per_s") + "</td><td>" +
         cell(r, "throughput.samples_per_s", 2) + "</td><td>" + percentiles_cell(r, "ttft_ms") + "</td><td>" +
         percentiles_cell(r, "tpot_ms") + "</td><td>" + percentiles_cell(r, "e2e_ms") + "</td><td>" + cell(r, "energy.total_j", 2) +
         "</td><td>" + per_token + " / " + cell(r, "energy.j_per_token_attributed", 4) + "</td><td>" +
         cell(r, "energy.idle_power_w") + "</td><td>" + cell(r, "energy.avg_power_w") + " / " +
         cell(r, "energy.avg_utilization_percent") + "</td><td>" + method + "</td></tr>\n";
  }
  h += "</table>\n";
  for (std::size_t k = 0; k < reasons.size(); ++k) {
    h += "<p class=\"note\"><sup>" + std::to_string(k + 1) + "</sup> " + html_escape(reasons[k]) + "</p>\n";
  }
  return h;
}

}  // namespace

std::string html_report(const std::string& name, const std::vector<Json>& results, const Json& sweep, std::size_t points,
                        bool interrupted) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>plexus bench: " + html_escape(name) +
                  "</title>\n<meta name=\"viewport\" content=\"width=device-width\">"
                  "<style>body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1100px;font-size:15px}"
                  "table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}"
                  "th{background:#f3f3f3;font-weight:600}td:first-child,th:first-child{text-align:left}"
                  "table.summary{font-size:13px}table.summary td,table.summary th{padding:3px 4px}table.summary td{white-space:nowrap}table.summary td:first-child{white-space:normal}"
                  "p{overflow-wrap:anywhere}.ct{font-size:13px;font-weight:bold}"
                  ".yl{font-size:10px;text-anchor:end}.xl{font-size:10px;text-anchor:middle}.lg{font-size:11px}"
                  ".grid{stroke:#e5e5e5}.axis{stroke:#999}.median{stroke:#d62728;stroke-dasharray:4 3}.plot{stroke:#eee}"
                  ".note{color:#666}code{background:#f3f3f3}svg{display:block;margin:0.5em 0;max-width:100%;height:auto}"
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
  h += "<section id=\"summary\"><h2>Summary</h2>" + summary_table(results) + "</section>\n";
  if (!sweep.is_null() && results.size() > 1) {
    std::vector<std::string> labels;
    std::vector<std::optional<double>> tps, jpt;
    for (std::size_t i = 0; i < results.size(); ++i) {
      labels.push_back(point_label(results[i], i));
      tps.push_back(json_number_at(results[i], "throughput.tokens_per_s"));
      jpt.push_back(json_number_at(results[i], "energy.j_per_token"));
    }
    h += "<section id=\"sweep\"><h2>Sweep</h2><p>Keys swept: <code>" + html_escape(sweep.dump()) + "</code></p>\n";
    h += bar_chart("Output throughput per point", "tokens/s", labels, tps);
    h += bar_chart("Energy per output token per point", "J/token", labels, jpt) + "</section>\n";
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Json& r = results[i];
    h += "<section id=\"run-" + std::to_string(i) + "\"><h2>Run " + html_escape(point_label(r, i)) + "</h2>\n" + scenario_line(r) + "\n";
    if (r.contains("error") && r["error"].is_string()) {
      h += "<p class=\"failed\">" + html_escape(r.value("status", std::string("failed"))) + ": " + html_escape(r["error"].get<std::string>()) + "</p>\n";
    }
    if (!r.contains("throughput")) {  // nothing measured
      h += "</section>\n";
      continue;
    }
    if (r.value("interrupted", false)) h += "<p class=\"warn\">Interrupted: the figures cover the samples measured before the signal.</p>\n";
    h += timeline_charts(r) + "\n<h3>Latency</h3>" + latency_charts(r);
    if (!r.contains("server")) {  // another engine's plan is its own
      h += "\n<h3>Plan and devices</h3>" + plan_table(r) + communication_line(r) + "\n" + predicted_table(r);
    }
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
    h += "</section>\n";
  }
  h += "<p class=\"note\">Written by plexus bench. Metric definitions: docs/benchmarks.md.</p>\n</body></html>\n";
  return h;
}

}  // namespace plexus::bench
