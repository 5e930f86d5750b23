// plexus serve's HTTP server: the API router on the HTTP/1.1 loop (serve/http_server.h).
#include "serve/http_server.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "serve/api_router.h"
#include "serve/http/http_listener.h"

namespace plexus {

int default_max_connections(int threads) { return std::max(1024, threads + 256); }

struct HttpServer::Impl {
  explicit Impl(const HttpServerOptions& o)
      : options(o), router(o.api_key, metrics), listener(listener_options(o), [this](HttpExchange& ex) { router.handle(ex); },
                                                         [this](int status, const std::string& message, const std::string& path) {
                                                           return router.error_page(status, message, path);
                                                         }) {}

  static HttpListenerOptions listener_options(const HttpServerOptions& o) {
    HttpListenerOptions l;
    l.host = o.host;
    l.port = o.port;
    l.limits.max_body = o.max_body;
    l.workers = std::max(o.threads, 2);
    l.max_connections = o.max_connections > 0 ? o.max_connections : default_max_connections(l.workers);
    l.request_timeout = std::chrono::milliseconds(static_cast<long long>(o.request_timeout_s * 1000));
    l.keep_alive = std::chrono::seconds(o.keep_alive_s);
    return l;
  }

  HttpServerOptions options;
  Metrics metrics;
  ApiRouter router;
  HttpListener listener;
};

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(options)) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  const int port = impl_->listener.bind();
  if (port < 0) {
    const HttpServerOptions& o = impl_->options;
    throw RuntimeError("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                       ": the port is in use or the address is not this machine's (--host, --port)");
  }
  return port;
}

void HttpServer::start() { impl_->listener.start(); }

void HttpServer::set_ready(const OpenAiApi* api, std::function<MetricsSnapshot()> snapshot) {
  impl_->router.set_ready(api, std::move(snapshot));
}

void HttpServer::set_draining() { impl_->router.set_draining(); }

void HttpServer::stop(std::chrono::milliseconds grace) {
  impl_->listener.stop(grace);
  impl_->router.clear_api();
}

Metrics& HttpServer::metrics() { return impl_->metrics; }

int HttpServer::max_connections() const { return impl_->listener.max_connections(); }

}  // namespace plexus
