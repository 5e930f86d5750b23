// Sections of an openai run's result (bench/openai_metrics.h).
#include "bench/openai_metrics.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "bench/bench_metrics.h"
#include "bench/percentiles.h"

namespace plexus::bench {

namespace {

std::optional<double> tpot_of(const RequestRecord& r) {
  if (!r.ttft_ms || r.output_tokens < 2) return std::nullopt;
  return (r.e2e_ms - *r.ttft_ms) / static_cast<double>(r.output_tokens - 1);
}

RunTimings timings_of(const std::vector<RequestRecord>& records, double wall_s) {
  RunTimings t;
  t.wall_s = wall_s;
  for (const RequestRecord& r : records) {
    if (!r.ok()) continue;
    // A request that produced no content has no first token: its e2e stands for its ttft.
    t.samples.push_back({std::max<std::int64_t>(0, r.prompt_tokens), std::max<std::int64_t>(0, r.output_tokens), r.ttft_ms.value_or(r.e2e_ms),
                         r.e2e_ms});
  }
  return t;
}

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace

Json openai_throughput_json(const std::vector<RequestRecord>& records, double wall_s) {
  Json j = throughput_json(timings_of(records, wall_s));
  j["requests_per_s"] = j["samples_per_s"];
  j["requests"] = records.size();
  j["failed_requests"] = std::count_if(records.begin(), records.end(), [](const RequestRecord& r) { return !r.ok(); });
  return j;
}

Json openai_latency_json(const std::vector<RequestRecord>& records) {
  Json j = latency_json(timings_of(records, 0));
  std::vector<double> itl;
  for (const RequestRecord& r : records) {
    if (r.ok()) itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
  }
  j["itl_ms"] = to_json(latency_stats(itl));
  return j;
}

Json errors_json(const std::vector<RequestRecord>& records) {
  std::map<std::string, std::int64_t> by;
  std::int64_t n = 0;
  Json first = nullptr;
  for (const RequestRecord& r : records) {
    if (r.ok()) continue;
    ++n;
    ++by[r.status ? std::to_string(r.status) : "no_response"];
    if (first.is_null()) first = r.error;
  }
  Json b = Json::object();
  for (const auto& [k, v] : by) b[k] = v;
  return {{"count", n}, {"by_status", b}, {"first", first}};
}

Json goodput_json(const std::vector<RequestRecord>& records, const Slo& slo, double wall_s) {
  if (!slo.any()) return nullptr;
  std::int64_t good = 0;
  for (const RequestRecord& r : records) {
    if (!r.ok()) continue;
    const double ttft = r.ttft_ms.value_or(r.e2e_ms);
    if (slo.ttft_ms && ttft > *slo.ttft_ms) continue;
    if (slo.e2e_ms && r.e2e_ms > *slo.e2e_ms) continue;
    if (const auto tpot = tpot_of(r); slo.tpot_ms && tpot && *tpot > *slo.tpot_ms) continue;
    ++good;
  }
  return {{"slo", {{"ttft_ms", opt(slo.ttft_ms)}, {"tpot_ms", opt(slo.tpot_ms)}, {"e2e_ms", opt(slo.e2e_ms)}}},
          {"good_requests", good},
          {"requests_per_s", wall_s > 0 ? Json(static_cast<double>(good) / wall_s) : Json(nullptr)},
          {"fraction", records.empty() ? Json(nullptr) : Json(static_cast<double>(good) / static_cast<double>(records.size()))}};
}

Json openai_requests_json(const std::vector<RequestRecord>& records) {
  Json rows = Json::array();
  for (const RequestRecord& r : records) {
    auto count = [](std::int64_t v) { return v >= 0 ? Json(v) : Json(nullptr); };
    rows.push_back({{"scheduled_s", r.scheduled_s},
                    {"send_s", r.send_s},
                    {"status", r.status},
                    {"ttft_ms", opt(r.ttft_ms)},
                    {"tpot_ms", opt(tpot_of(r))},
                    {"e2e_ms", r.e2e_ms},
                    {"itl_ms", r.itl_ms},
                    {"prompt_tokens", count(r.prompt_tokens)},
                    {"output_tokens", count(r.output_tokens)},
                    {"tokens_from", r.tokens_from.empty() ? Json(nullptr) : Json(r.tokens_from)},
                    {"energy_j", opt(r.energy_j)},
                    {"error", r.ok() ? Json(nullptr) : Json(r.error)}});
  }
  return rows;
}

Json openai_energy_json(const MonitorSummary& summary, const std::vector<RequestRecord>& records) {
  std::int64_t tokens = 0, good = 0, reported = 0;
  double server_j = 0;
  for (const RequestRecord& r : records) {
    if (!r.ok()) continue;
    ++good;
    tokens += std::max<std::int64_t>(0, r.output_tokens);
    if (r.energy_j) server_j += *r.energy_j, ++reported;
  }
  Json e = energy_json(summary, tokens);
  auto per = [](const Json& j, double n) { return j.is_number() && n > 0 ? Json(j.get<double>() / n) : Json(nullptr); };
  e["requests"] = good;
  e["j_per_request"] = per(e["total_j"], static_cast<double>(good));
  e["j_per_request_above_idle"] = per(e["above_idle_j"], static_cast<double>(good));
  e["server_energy_j"] = reported > 0 ? Json(server_j) : Json(nullptr);
  e["server_j_per_token"] = reported > 0 && tokens > 0 ? Json(server_j / static_cast<double>(tokens)) : Json(nullptr);
  return e;
}

std::string engine_name(const Json& models, const std::string& server_header) {
  static const char* kGeneric[] = {"", "system", "user", "openai", "organization-owner", "org", "library"};
  if (models.is_object() && models.contains("data") && models["data"].is_array() && !models["data"].empty() &&
      models["data"][0].is_object() && models["data"][0].contains("owned_by") && models["data"][0]["owned_by"].is_string()) {
    const std::string owner = models["data"][0]["owned_by"].get<std::string>();
    if (std::none_of(std::begin(kGeneric), std::end(kGeneric), [&](const char* g) { return owner == g; })) return owner;
  }
  std::string s = server_header.substr(0, server_header.find_first_of(" /"));
  std::string low = s;
  std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const char* kHttpServers[] = {"", "uvicorn", "hypercorn", "gunicorn", "nginx", "apache", "envoy", "caddy", "werkzeug", "python", "cpython"};
  if (std::none_of(std::begin(kHttpServers), std::end(kHttpServers), [&](const char* g) { return low == g; })) return s;
  return "openai";
}

}  // namespace plexus::bench
