// The load generator of `backend.type: openai`: requests to an OpenAI-compatible server,
// streamed (stream: true, stream_options.include_usage), timed per token as the server-sent
// events arrive; sent by N clients in a closed loop, or at planned arrival times (open loop:
// gamma-distributed gaps of mean 1/rate and shape = burstiness, as vLLM's benchmark; 1 = Poisson).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/http_client.h"
#include "bench/openai_config.h"
#include "core/json.h"
#include "tokenizer/tokenizer.h"

namespace plexus::bench {

// One request to send.
struct LoadRequest {
  Json prompt;                        // a string, or a list of token ids (completions only)
  std::int64_t prompt_tokens = -1;    // known locally (ids, or the tokenizer's count); -1: unknown
  std::int64_t max_tokens = 0;
};

// What one request measured. Times are milliseconds; send_s counts from the load's start.
struct RequestRecord {
  double scheduled_s = 0;  // planned send time (open loop; the send time in a closed loop)
  double send_s = 0;
  int status = 0;          // HTTP status; 0: no response (error says why)
  std::string error;       // "" for a good response; else why it failed (counted by status)
  bool bad_shape = false;  // answered 200 in a shape that is not OpenAI's: `error` quotes it
  std::optional<double> ttft_ms;  // send → first content
  std::vector<double> itl_ms;     // between successive content events
  double e2e_ms = 0;              // send → data: [DONE] (else the response's end)
  std::int64_t prompt_tokens = -1, output_tokens = -1;  // -1: unknown
  std::string tokens_from;  // "usage" | "tokenizer" | "events" (content events counted)
  std::optional<double> energy_j;  // usage.energy_j (plexus serve)
  std::string text;                // the generated text
  bool ok() const { return error.empty(); }
};

// Planned send times (seconds from the start) of n requests: the first at 0, then gaps drawn
// from Gamma(shape = burstiness, scale = 1 / (rate · burstiness)) with `seed`.
std::vector<double> arrival_times(std::size_t n, double rate, double burstiness, std::uint64_t seed);

struct LoadTarget {
  HttpUrl url;
  OpenAiConfig config;
  std::string model;       // the model id sent
  double temperature = 0;
  bool ignore_eos = true;
  const Tokenizer* tokenizer = nullptr;  // counts tokens when the server sends no usage
};

// Sends one request and reads its stream. Never throws for what the server does.
RequestRecord send_request(const LoadTarget& target, const LoadRequest& request, double load_t0_s);

// Sends every request: open loop when config.request_rate is set (planned by arrival_times
// with `seed`, at most config.concurrency in flight, 0 = no limit), else a closed loop of
// config.concurrency clients. `stop` (polled between requests) ends it early: the records
// are those of the requests sent. Records are in request order.
std::vector<RequestRecord> run_load(const LoadTarget& target, const std::vector<LoadRequest>& requests, std::uint64_t seed,
                                    const std::function<bool()>& stop);

// Seconds on the steady clock (the records' clock).
double steady_now_s();

}  // namespace plexus::bench
