// The routes of plexus serve over any HttpExchange: the API key, a known path with the wrong
// method (405 with Allow), POST bodies without a length (411), the endpoints run against the
// OpenAiApi once the model is loaded (/health before), errors in OpenAI's shape for every status,
// server-sent event streams that cancel their request when the client goes away, and request
// counts for /metrics. No sockets: the HTTP server runs it on its workers, the fuzzer directly.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include "serve/http/http_exchange.h"
#include "serve/metrics.h"
#include "serve/openai_api.h"

namespace plexus {

class ApiRouter {
 public:
  // `api_key` "": none needed. `metrics` must outlive the router.
  ApiRouter(std::string api_key, Metrics& metrics) : api_key_(std::move(api_key)), metrics_(metrics) {}

  // Answers one request (on a worker thread; any number at once).
  void handle(HttpExchange& exchange);
  // The OpenAI-shaped answer to a request refused before routing (malformed, too large, too
  // slow, no room), counted in /metrics.
  HttpResponse error_page(int status, const std::string& message, const std::string& path);

  // See HttpServer: the API opens; /health says draining; the API closes (server stopped).
  void set_ready(const OpenAiApi* api, std::function<MetricsSnapshot()> snapshot);
  void set_draining() { draining_ = true; }
  void clear_api() { api_.store(nullptr); }

 private:
  struct Answer;
  const OpenAiApi& ready_api() const;
  void route(HttpExchange& exchange, Answer& answer);
  void generation(HttpExchange& exchange, Answer& answer, bool chat);
  MetricsSnapshot snapshot();
  // Bodies of 1 MiB and more are parsed two at a time at most: their documents' peak memory
  // adds up over concurrent requests, not over the workers.
  class LargeBodyTurn;

  std::string api_key_;
  Metrics& metrics_;
  std::atomic<const OpenAiApi*> api_{nullptr};
  std::atomic<bool> draining_{false};
  std::mutex snapshot_mutex_;
  std::function<MetricsSnapshot()> snapshot_;
  std::mutex large_mutex_;
  std::condition_variable large_cv_;
  int large_parsing_ = 0;
};

}  // namespace plexus
