// Side-by-side comparison of benchmark results.
#include "bench/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/error.h"

namespace plexus::bench {

namespace {

struct Metric {
  const char* path;   // dotted
  const char* better;  // "higher" | "lower"
};

const Metric kMetrics[] = {
    {"throughput.tokens_per_s", "higher"},     {"throughput.total_tokens_per_s", "higher"},
    {"throughput.samples_per_s", "higher"},    {"latency.ttft_ms.p50", "lower"},
    {"latency.ttft_ms.p90", "lower"},          {"latency.ttft_ms.p99", "lower"},
    {"latency.tpot_ms.p50", "lower"},          {"latency.tpot_ms.p90", "lower"},
    {"latency.tpot_ms.p99", "lower"},          {"latency.e2e_ms.p50", "lower"},
    {"latency.e2e_ms.p90", "lower"},           {"latency.e2e_ms.p99", "lower"},
    {"energy.total_j", "lower"},               {"energy.j_per_token", "lower"},
    {"energy.tokens_per_j", "higher"},         {"energy.above_idle_j", "lower"},
    {"host_stats.cpu_utilization_percent", "higher"}, {"execution.busy_fraction_sum", "higher"},
    {"throughput.output_tokens", "higher"},    {"throughput.wall_s", "lower"},
    {"execution.communication.seconds_per_token", "lower"}, {"execution.communication.share_of_forward_time", "lower"},
    {"latency.itl_ms.p50", "lower"},           {"latency.itl_ms.p99", "lower"},  // openai runs
    {"energy.j_per_request", "lower"},         {"goodput.requests_per_s", "higher"},
    {"errors.count", "lower"},
};

bool is_result(const Json& j) { return j.is_object() && j.contains("throughput") && j.contains("latency"); }

std::string fmt(std::optional<double> v, const char* f = "%.3f") {
  if (!v) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, std::abs(*v) >= 1000 ? "%.1f" : f, *v);
  return buf;
}

}  // namespace

std::vector<std::string> distinct_labels(const std::vector<std::string>& files) {
  namespace fs = std::filesystem;
  std::vector<std::vector<std::string>> parts;  // components of each absolute path, last first
  for (const std::string& f : files) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::absolute(f), ec);
    if (ec) p = fs::absolute(f).lexically_normal();
    std::vector<std::string> c;
    for (const fs::path& e : p) {
      if (!e.empty() && e != "/") c.push_back(e.string());
    }
    parts.emplace_back(c.rbegin(), c.rend());
  }
  auto suffix = [&](std::size_t i, std::size_t k) {
    std::string s;
    for (std::size_t n = std::min(k, parts[i].size()); n-- > 0;) s += parts[i][n] + (n ? "/" : "");
    return s;
  };
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::size_t k = 1;
    for (bool clash = true; clash && k < parts[i].size();) {
      clash = false;
      for (std::size_t j = 0; j < files.size() && !clash; ++j) {
        clash = j != i && parts[j] != parts[i] && suffix(j, k) == suffix(i, k);
      }
      if (clash) ++k;
    }
    labels.push_back(suffix(i, k));
  }
  return labels;
}

std::vector<CompareColumn> load_compare_inputs(const std::vector<std::string>& files) {
  std::vector<CompareColumn> cols;
  const std::vector<std::string> labels = distinct_labels(files);
  for (std::size_t f_index = 0; f_index < files.size(); ++f_index) {
    const std::string& f = files[f_index];
    if (!std::filesystem::is_regular_file(f)) throw InputError(f + ": no such result file");
    const Json j = read_json_file(f);
    const std::string& label = labels[f_index];
    if (is_result(j)) {
      cols.push_back({label, j});
    } else if (j.is_object() && j.contains("runs") && j["runs"].is_array() &&
               std::any_of(j["runs"].begin(), j["runs"].end(), is_result)) {
      for (std::size_t i = 0; i < j["runs"].size(); ++i) {
        if (is_result(j["runs"][i])) cols.push_back({label + "#" + std::to_string(i), j["runs"][i]});
      }
    } else {
      throw InputError(f + ": not a plexus bench result (no \"throughput\" and \"latency\", and no \"runs\" of results)");
    }
  }
  if (cols.size() < 2) throw InputError("bench compare needs at least two results (a sweep summary counts as one per run)");
  return cols;
}

Json compare_json(const std::vector<CompareColumn>& cols) {
  Json labels = Json::array(), engines = Json::array();
  for (const CompareColumn& c : cols) {
    labels.push_back(c.label);
    engines.push_back(c.result.value("engine", std::string("plexus")));  // results from before the key: plexus's own
  }
  Json metrics = Json::array();
  for (const Metric& m : kMetrics) {
    Json values = Json::array(), ratios = Json::array();
    const auto base = json_number_at(cols.front().result, m.path);
    bool any = false;
    for (const CompareColumn& c : cols) {
      const auto v = json_number_at(c.result, m.path);
      any = any || v.has_value();
      values.push_back(v ? Json(*v) : Json(nullptr));
      ratios.push_back(v && base && *base != 0 ? Json(*v / *base) : Json(nullptr));
    }
    if (!any) continue;
    metrics.push_back({{"metric", m.path}, {"better", m.better}, {"values", values}, {"ratios", ratios}});
  }
  return {{"columns", labels}, {"engines", engines}, {"metrics", metrics}};
}

std::string compare_table(const std::vector<CompareColumn>& cols) {
  const Json j = compare_json(cols);
  // Columns are lettered A, B, C, ... (named in a legend above the table); ratios are B/A, C/A, ...
  auto letter = [](std::size_t i) { return i < 26 ? std::string(1, static_cast<char>('A' + i)) : "R" + std::to_string(i + 1); };
  std::string legend;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    legend += letter(i) + ": " + cols[i].label + " [" + j["engines"][i].get<std::string>() + "]";
    const Json& sp = cols[i].result.contains("sweep_point") ? cols[i].result["sweep_point"] : Json();
    if (sp.is_object() && !sp.empty()) {
      std::string point;
      for (auto it = sp.begin(); it != sp.end(); ++it) point += (point.empty() ? "" : ", ") + it.key() + "=" + it.value().dump();
      legend += " (" + point + ")";
    }
    legend += "\n";
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {"metric"};
  for (std::size_t i = 0; i < cols.size(); ++i) {
    head.push_back(letter(i));
    if (i > 0) head.push_back(letter(i) + "/" + letter(0));
  }
  rows.push_back(head);
  for (const Json& m : j["metrics"]) {
    std::vector<std::string> row = {m["metric"].get<std::string>() + (std::string(m["better"]) == "higher" ? " (+)" : " (-)")};
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const Json& v = m["values"][i];
      row.push_back(fmt(v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt));
      if (i > 0) {
        const Json& r = m["ratios"][i];
        row.push_back(r.is_number() ? fmt(r.get<double>(), "%.2fx") : "n/a");
      }
    }
    rows.push_back(row);
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out = legend + "\n";
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size(); ++c) {
      const std::string pad(width[c] - r[c].size(), ' ');
      out += c == 0 ? r[c] + pad : "  " + pad + r[c];
    }
    out += "\n";
  }
  out += "(+) higher is better, (-) lower is better; B/A is B's value divided by A's\n";
  return out;
}

}  // namespace plexus::bench
