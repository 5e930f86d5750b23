// The settings of a `backend.type: openai` benchmark (docs/benchmarks.md, "Any OpenAI-compatible
// server"): where the server is and how to talk to it (backend.url, model, api_key, endpoint,
// tokenizer, timeout_s), and the load's shape (scenario.concurrency, request_rate, burstiness,
// random prompt lengths, slo).
#pragma once
#include <optional>
#include <string>

namespace plexus::bench {

// scenario.random: prompts of random tokens, lengths drawn per request.
struct RandomLengths {
  long long input_tokens = 128;   // mean prompt length
  long long output_tokens = 128;  // mean max_tokens asked
  double range_ratio = 0;         // uniform: [L(1-r), L(1+r)]; normal: sd = r L; exponential: ignored
  std::string distribution = "uniform";  // uniform | normal | exponential (means as above; 1 token at least)
};

// scenario.slo: a request is "good" when it meets every bound given.
struct Slo {
  std::optional<double> ttft_ms, tpot_ms, e2e_ms;
  bool any() const { return ttft_ms || tpot_ms || e2e_ms; }
};

struct OpenAiConfig {
  std::string url;          // http://HOST:PORT[/PREFIX]: /v1/... is appended
  std::string model;        // the served model's id ("" = the first /v1/models lists)
  std::string api_key;      // sent as "Authorization: Bearer KEY" ("" = none)
  std::string endpoint = "completions";  // completions | chat
  std::string tokenizer;    // directory with tokenizer.json, or the file: counts tokens when a server sends no usage
  double timeout_s = 600;   // most seconds a request may go without a byte
  long long concurrency = 1;           // closed loop: clients; open loop: most requests in flight (0: no limit)
  std::optional<double> request_rate;  // requests per second: open loop (arrivals drawn in advance)
  double burstiness = 1;               // gamma shape of the inter-arrival times (1: Poisson)
  std::optional<RandomLengths> random;
  Slo slo;
};

}  // namespace plexus::bench
