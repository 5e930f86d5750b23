// The HTTP side of `plexus serve` (cpp-httplib): routes, the API key, body size limit, errors
// in OpenAI's shape for every status, server-sent event streaming that cancels its request when
// the client goes away, and request counts for /metrics. It binds and answers /health (503,
// "loading") before the model is loaded; set_ready() then opens the API.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "serve/metrics.h"
#include "serve/openai_api.h"

namespace plexus {

inline constexpr std::size_t kDefaultMaxBody = 8u << 20;  // 8 MiB

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;             // 0: any free port
  std::string api_key;         // "": no key needed
  std::size_t max_body = kDefaultMaxBody;  // request bodies larger → 413
  int threads = 16;            // connections served at once (streaming clients each hold one)
  int keep_alive_s = 5;        // idle keep-alive connections close after this
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // stops
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the address; returns the port. RuntimeError when it cannot (in use, bad host).
  int bind();
  // Serves on a thread of its own (after bind).
  void start();
  // The model is loaded: `api` answers the API from now on; `snapshot` gives /metrics what it
  // shows beyond the request counts. Both must outlive the server (or stop()).
  void set_ready(const OpenAiApi* api, std::function<MetricsSnapshot()> snapshot);
  // Shutting down: /health answers 503 {"status": "draining"} (requests still get their answers).
  void set_draining();
  // Stops accepting connections and ends the serving thread (streams in progress are cut).
  void stop();
  Metrics& metrics();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus
