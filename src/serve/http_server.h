// The HTTP side of `plexus serve`: the API's routes (serve/api_router.h) on plexus' own HTTP/1.1
// server loop (serve/http/http_listener.h) with its limits — body size however framed, a
// deadline for each request's head and body, a cap on open connections, a deep listen backlog.
// It binds and answers /health (503, "loading") before the model is loaded; set_ready() then
// opens the API.
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "serve/metrics.h"
#include "serve/openai_api.h"

namespace plexus {

inline constexpr std::size_t kDefaultMaxBody = 8u << 20;  // 8 MiB
inline constexpr int kDefaultRequestTimeout = 10;        // seconds

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;             // 0: any free port
  std::string api_key;         // "": no key needed
  std::size_t max_body = kDefaultMaxBody;  // request bodies larger (however framed) → 413
  int threads = 16;            // requests handled at once (streaming clients each hold one)
  int max_connections = 0;     // connections open at once; 0: max(1024, threads + 256)
  double request_timeout_s = kDefaultRequestTimeout;  // a request's head and body, from its first byte → else 408
  int keep_alive_s = 5;        // idle keep-alive connections close after this
};

// The connection cap HttpServerOptions' 0 stands for.
int default_max_connections(int threads);

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // stops
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the address; returns the port. RuntimeError when it cannot (in use, bad host).
  int bind();
  // Serves on threads of its own (after bind).
  void start();
  // The model is loaded: `api` answers the API from now on; `snapshot` gives /metrics what it
  // shows beyond the request counts. Both must outlive the server (or stop()).
  void set_ready(const OpenAiApi* api, std::function<MetricsSnapshot()> snapshot);
  // Shutting down: /health answers 503 {"status": "draining"} (requests still get their answers).
  void set_draining();
  // Closes the listener and the connections waiting for or sending a request at once; answers
  // under way may be written for `grace` (the drain has ended their requests; those still waiting
  // for a worker get 503), then every
  // connection closes, whatever the clients do (streams still going are cut), and the serving
  // threads end.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  Metrics& metrics();
  // The connection cap in force (lower than asked where the open-file limit is).
  int max_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus
