// An openai benchmark point from configuration to result tree (bench/openai_runner.h).
#include "bench/openai_runner.h"

#include <algorithm>
#include <set>

#include "bench/bench_metrics.h"
#include "bench/environment.h"
#include "bench/http_client.h"
#include "bench/openai_metrics.h"
#include "bench/openai_prompts.h"
#include "core/error.h"
#include "monitor/monitor_session.h"

namespace plexus::bench {

namespace {

// backend.url parsed; a base path ending in /v1 (an OpenAI client's base URL) loses it, since
// the requests' paths start with /v1.
HttpUrl server_url(const std::string& text, const std::string& what) {
  HttpUrl url = parse_http_url(text, what);
  if (url.base_path.size() >= 3 && url.base_path.compare(url.base_path.size() - 3, 3, "/v1") == 0) url.base_path.resize(url.base_path.size() - 3);
  return url;
}

std::vector<std::string> auth_headers(const OpenAiConfig& o) {
  if (o.api_key.empty()) return {};
  return {"Authorization: Bearer " + o.api_key};
}

}  // namespace

ServerInfo probe_openai_server(const BenchConfig& c, const std::string& file) {
  const HttpUrl url = server_url(c.openai.url, where_in_file(c, file, "backend.url") + "backend.url");
  HttpCall call;
  call.path = "/v1/models";
  call.headers = auth_headers(c.openai);
  call.timeout_s = std::min(30.0, c.openai.timeout_s);
  const HttpReply r = http_request(url, call);
  if (r.status == 0) {
    throw InputError(where_in_file(c, file, "backend.url") + "backend.url: cannot reach " + c.openai.url + ": " + r.error);
  }
  ServerInfo info;
  const Json models = r.status == 200 ? Json::parse(r.body, nullptr, false) : Json();
  info.engine = engine_name(models.is_discarded() ? Json() : models, r.header("server"));
  if (models.is_object() && models.contains("data") && models["data"].is_array() && !models["data"].empty() &&
      models["data"][0].is_object() && models["data"][0].contains("id") && models["data"][0]["id"].is_string()) {
    info.first_model = models["data"][0]["id"].get<std::string>();
  }
  return info;
}

void check_openai_servers(const std::vector<BenchPoint>& points, const std::string& file) {
  std::set<std::string> seen;
  for (const BenchPoint& p : points) {
    if (p.config.backend.type != "openai" || !seen.insert(p.config.openai.url).second) continue;
    probe_openai_server(p.config, file);
  }
}

Json run_openai_point(const BenchPoint& point, const std::string& file, const Log& log, const StopRequested& stop) {
  const BenchConfig& c = point.config;
  const ScenarioConfig& sc = c.scenario;
  auto stopping = [&] { return stop && stop(); };
  const ServerInfo server = probe_openai_server(c, file);
  std::unique_ptr<Tokenizer> tok;
  if (!c.openai.tokenizer.empty()) {
    try {
      tok = Tokenizer::load(c.openai.tokenizer);
    } catch (const InputError& e) {
      throw InputError(where_in_file(c, file, "backend.tokenizer") + "backend.tokenizer: " + e.what());
    }
  }
  LoadTarget target;
  target.url = server_url(c.openai.url, "backend.url");
  target.config = c.openai;
  target.model = c.openai.model.empty() ? server.first_model : c.openai.model;
  if (target.model.empty()) {
    throw InputError(where_in_file(c, file, "backend") + "backend.model: not given, and " + c.openai.url +
                     "/v1/models lists no model: name the model to ask for");
  }
  target.temperature = sc.temperature;
  target.ignore_eos = sc.ignore_eos;
  target.tokenizer = tok.get();

  std::vector<LoadRequest> measured, warmup;
  try {
    const std::vector<LoadRequest> prompts = scenario_requests(sc, c.openai, tok.get());
    if (c.openai.random && sc.num_samples <= 0) throw InputError("scenario.num_samples: give the number of requests with scenario.random");
    const std::size_t n = sc.num_samples > 0 ? static_cast<std::size_t>(sc.num_samples) : prompts.size();
    measured = openai_requests(prompts, c.openai, tok.get(), n, sc.seed);
    // (other random prompts than the measured ones: a server's prefix cache learns nothing from them)
    warmup = openai_requests(prompts, c.openai, tok.get(), static_cast<std::size_t>(sc.warmup_samples), sc.seed + 0x9e3779b97f4a7c15ULL);
  } catch (const InputError& e) {
    const std::string m = e.what();
    if (m.rfind("scenario.", 0) != 0) throw;
    throw InputError(where_in_file(c, file, m.substr(0, m.find_first_of("[:"))) + m);
  }

  const std::string load = c.openai.request_rate
                               ? "open loop at " + Json(*c.openai.request_rate).dump() + " requests/s (burstiness " +
                                     Json(c.openai.burstiness).dump() + ")"
                               : "closed loop, " + std::to_string(c.openai.concurrency) + " client(s)";
  log("server " + c.openai.url + " (engine " + server.engine + ", model " + target.model + ")");
  std::string bad_shape;
  auto first_bad = [&](const std::vector<RequestRecord>& records) {
    for (const RequestRecord& r : records) {
      if (r.bad_shape && bad_shape.empty()) bad_shape = r.error;
    }
  };
  if (!warmup.empty()) {
    log("warm-up: " + std::to_string(warmup.size()) + " request(s), not measured");
    LoadTarget closed = target;
    closed.config.request_rate.reset();
    closed.config.concurrency = std::max<long long>(1, c.openai.concurrency);
    first_bad(run_load(closed, warmup, sc.seed, stop));
    if (stopping()) throw Interrupted("interrupted during the warm-up, before any request was measured");
  }

  SourceOptions so = source_options_for_run(device_options_from_env(), {});
  for (long long id : c.backend.device_ids) so.devices.push_back(static_cast<int>(id));
  MonitorSession session(make_sources(so));
  MonitorOptions mo;
  mo.interval_ms = c.monitor.interval_ms;
  mo.idle_baseline_s = c.monitor.load_idle_baseline_s();
  mo.stop_requested = stop;
  std::vector<RequestRecord> records;
  double wall_s = 0;
  const std::string timestamp = utc_timestamp();
  if (bad_shape.empty()) {
    session.start(mo);
    log("measuring: " + std::to_string(measured.size()) + " request(s), " + load);
    const double t0 = steady_now_s();
    records = run_load(target, measured, sc.seed, stop);
    wall_s = steady_now_s() - t0;
    first_bad(records);
  }
  const MonitorSummary summary = session.running() ? session.stop() : MonitorSummary{};
  const bool complete = records.size() == measured.size();
  if (bad_shape.empty() && records.empty()) throw Interrupted("interrupted before any request was measured");

  Json result;
  result["name"] = c.name;
  result["engine"] = server.engine;
  result["timestamp"] = timestamp;
  result["config"] = config_to_json(c);
  result["config"]["backend"]["model"] = target.model;
  result["config"]["device_ids"] = c.backend.device_ids;
  result["sweep_point"] = point.sweep_point;
  if (!bad_shape.empty()) {
    result["status"] = "failed";
    result["interrupted"] = false;
    result["error"] = "the server at " + c.openai.url + " does not answer as an OpenAI-compatible server: " + bad_shape;
    return result;
  }
  result["status"] = complete ? "ok" : "interrupted";
  result["interrupted"] = !complete;
  result["throughput"] = openai_throughput_json(records, wall_s);
  result["latency"] = openai_latency_json(records);
  result["errors"] = errors_json(records);
  result["goodput"] = goodput_json(records, c.openai.slo, wall_s);
  result["energy"] = openai_energy_json(summary, records);
  add_monitor_results(result, summary, session.unavailable(), c.monitor.interval_ms);
  result["server"] = {{"url", c.openai.url}, {"engine", server.engine}, {"model", target.model}, {"endpoint", c.openai.endpoint}};
  result["environment"] = environment_json();
  result["requests"] = openai_requests_json(records);
  result["timeline"] = timeline_json(session.samples());
  const std::int64_t failed = result["errors"]["count"].get<std::int64_t>();
  if (failed > 0) log(std::to_string(failed) + " request(s) failed (counted in errors.by_status): " + result["errors"]["first"].get<std::string>());
  return result;
}

}  // namespace plexus::bench
