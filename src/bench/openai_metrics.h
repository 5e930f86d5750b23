// The result sections of an openai run from its request records: throughput and latency of the
// good requests (bench_metrics' keys, plus inter-token latencies), errors by HTTP status, goodput
// under the scenario's SLOs, per-request rows, and the energy per request and token.
#pragma once
#include <string>
#include <vector>

#include "bench/openai_config.h"
#include "bench/openai_load.h"
#include "core/json.h"
#include "monitor/summary.h"

namespace plexus::bench {

// throughput_json's keys over the good requests in `wall_s`, with "requests_per_s" (= samples_per_s),
// "requests" (sent), "failed_requests"; decode_steps 0 and host_ms_per_step null (not ours).
Json openai_throughput_json(const std::vector<RequestRecord>& records, double wall_s);
// latency_json's ttft_ms, tpot_ms, e2e_ms of the good requests, and "itl_ms": every gap between
// content events, pooled.
Json openai_latency_json(const std::vector<RequestRecord>& records);
// {"count", "by_status": {"429": n, "200": n (a bad event), "no_response": n}, "first": "..."}.
Json errors_json(const std::vector<RequestRecord>& records);
// {"slo": {...}, "good_requests", "requests_per_s", "fraction"}: requests that succeeded within
// every bound given (tpot counts only with 2+ tokens); null without an SLO.
Json goodput_json(const std::vector<RequestRecord>& records, const Slo& slo, double wall_s);
// One row per request: {"scheduled_s", "send_s", "status", "ttft_ms", "tpot_ms", "e2e_ms", "itl_ms",
// "prompt_tokens", "output_tokens", "tokens_from", "energy_j", "error"}.
Json openai_requests_json(const std::vector<RequestRecord>& records);
// energy_json over the load window, with "j_per_request", "j_per_request_above_idle",
// "server_energy_j" (the sum of the server's usage.energy_j; null when it sent none) and
// "server_j_per_token".
Json openai_energy_json(const MonitorSummary& summary, const std::vector<RequestRecord>& records);

// The engine's name: /v1/models' first owned_by when it names one (vllm, plexus, llamacpp, ...),
// else the Server header when it names an engine, else "openai".
std::string engine_name(const Json& models, const std::string& server_header);

}  // namespace plexus::bench
