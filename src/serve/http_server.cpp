// Routes and HTTP behaviour of `plexus serve` on cpp-httplib (serve/http_server.h).
#include "serve/http_server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "serve/api_error.h"
#include "serve/openai_response.h"

namespace plexus {

namespace {

// The routes and the method each answers.
const std::map<std::string, std::string> kRoutes = {
    {"/health", "GET"},          {"/v1/models", "GET"},      {"/metrics", "GET"},        {"/v1/completions", "POST"},
    {"/v1/chat/completions", "POST"}, {"/tokenize", "POST"}, {"/detokenize", "POST"},
};

constexpr const char* kJson = "application/json";
constexpr std::chrono::seconds kKeepAliveComment{1};

void send_json(httplib::Response& res, int status, const Json& j) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, Json::error_handler_t::replace), kJson);
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status(), error_json(e)); }

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  httplib::Server server;
  Metrics metrics;
  std::thread thread;
  std::atomic<bool> listen_returned{false};
  std::atomic<const OpenAiApi*> api{nullptr};
  std::atomic<bool> draining{false};
  std::mutex snapshot_mutex;
  std::function<MetricsSnapshot()> snapshot;
  int port = -1;

  const OpenAiApi& ready_api() const {
    const OpenAiApi* a = api.load();
    if (!a) throw ApiError(503, "the model is still loading: try again when GET /health answers 200", "service_unavailable", "",
                           "model_loading");
    return *a;
  }

  // Runs a handler, answering its errors in OpenAI's shape.
  void guarded(httplib::Response& res, const std::function<void()>& handler) {
    try {
      handler();
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const InputError& e) {
      send_error(res, invalid_request(e.what()));
    } catch (const std::bad_alloc&) {
      send_error(res, ApiError(500, "out of memory", "server_error"));
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, e.what(), "server_error"));
    }
  }

  void generation(const httplib::Request& req, httplib::Response& res, bool chat) {
    const OpenAiApi& a = ready_api();
    auto prepared = std::make_shared<PreparedRequest>(a.prepare(req.body, chat));
    std::shared_ptr<RequestStream> stream = a.submit(*prepared);
    if (!prepared->api.stream) {
      send_json(res, 200, a.complete(*prepared, *stream));
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [&a, prepared, stream](std::size_t, httplib::DataSink& sink) {
          // While nothing is sent (the request waits in the queue, a long prompt prefills), an SSE
          // comment every second: clients skip it, and a client that left is noticed by its
          // failed write.
          auto last_write = std::chrono::steady_clock::now();
          auto write = [&](const std::string& s) {
            last_write = std::chrono::steady_clock::now();
            return sink.write(s.data(), s.size());
          };
          auto alive = [&] {
            if (std::chrono::steady_clock::now() - last_write < kKeepAliveComment) return sink.is_writable();
            return write(": waiting\n\n");
          };
          const bool ok = a.stream(*prepared, *stream, write, alive);
          if (!ok) {
            stream->cancel();
            return false;
          }
          sink.done();
          return true;
        },
        [stream](bool) { stream->cancel(); });  // the connection ended, however: free the slot
  }

  void routes() {
    server.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (draining) {
        send_json(res, 503, {{"status", "draining"}});
      } else if (api.load()) {
        send_json(res, 200, {{"status", "ok"}});
      } else {
        send_json(res, 503, {{"status", "loading"}});
      }
    });
    server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      guarded(res, [&] { send_json(res, 200, ready_api().models()); });
    });
    server.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { send_json(res, 200, ready_api().model(req.matches[1].str())); });
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      guarded(res, [&] {
        MetricsSnapshot s;
        {
          std::lock_guard lock(snapshot_mutex);
          if (snapshot) s = snapshot();
        }
        if (!s.resident_bytes) s.resident_bytes = process_resident_bytes();
        res.set_content(metrics.render(s), "text/plain; version=0.0.4; charset=utf-8");
      });
    });
    server.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { generation(req, res, false); });
    });
    server.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { generation(req, res, true); });
    });
    server.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { send_json(res, 200, ready_api().tokenize(req.body)); });
    });
    server.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { send_json(res, 200, ready_api().detokenize(req.body)); });
    });
    // Before routing: the API key, and a known path asked with the wrong method (405).
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!options.api_key.empty() && req.path != "/health" &&
          req.get_header_value("Authorization") != "Bearer " + options.api_key) {
        send_error(res, error_for_status(401));
        return httplib::Server::HandlerResponse::Handled;
      }
      auto route = kRoutes.find(req.path);
      if (route != kRoutes.end() && route->second != req.method && !(route->second == "GET" && req.method == "HEAD")) {
        res.set_header("Allow", route->second);
        send_error(res, ApiError(405, "method " + req.method + " not allowed on " + req.path + ": use " + route->second,
                                 "invalid_request_error", "", "method_not_allowed"));
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    // Every error status without a body of its own (unknown route, body too large, ...).
    server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, error_for_status(res.status));
      return httplib::Server::HandlerResponse::Handled;
    }));
    server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      const bool model_path = req.path.rfind("/v1/models/", 0) == 0;
      metrics.count_request(kRoutes.count(req.path) ? req.path : model_path ? "/v1/models/{id}" : "other", res.status);
    });
  }
};

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  const int threads = std::max(impl_->options.threads, 2);
  impl_->server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  impl_->server.set_payload_max_length(impl_->options.max_body);
  impl_->server.set_keep_alive_timeout(impl_->options.keep_alive_s);
  impl_->server.set_keep_alive_max_count(1000);
  impl_->server.set_read_timeout(30, 0);
  impl_->server.set_write_timeout(30, 0);
  // SO_REUSEADDR (a restart may bind while old connections linger in TIME_WAIT), but not
  // cpp-httplib's default SO_REUSEPORT, with which a second server on a port in use binds too and
  // the kernel splits the connections between the two: that must be "the port is in use".
  impl_->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  impl_->routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  const HttpServerOptions& o = impl_->options;
  if (o.port == 0) {
    impl_->port = impl_->server.bind_to_any_port(o.host);
  } else {
    impl_->port = impl_->server.bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (impl_->port < 0) {
    throw RuntimeError("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                       ": the port is in use or the address is not this machine's (--host, --port)");
  }
  return impl_->port;
}

void HttpServer::start() {
  impl_->thread = std::thread([this] {
    impl_->server.listen_after_bind();
    impl_->listen_returned = true;
  });
  // cpp-httplib's stop() only stops a server that is already listening: wait until it is, so that
  // a stop right after start (a model that fails to load at once) is not lost with the listener
  // left waiting in accept() and the destructor in join().
  while (!impl_->server.is_running() && !impl_->listen_returned) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void HttpServer::set_ready(const OpenAiApi* api, std::function<MetricsSnapshot()> snapshot) {
  {
    std::lock_guard lock(impl_->snapshot_mutex);
    impl_->snapshot = std::move(snapshot);
  }
  impl_->api.store(api);
}

void HttpServer::set_draining() { impl_->draining = true; }

void HttpServer::stop() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->api.store(nullptr);
}

Metrics& HttpServer::metrics() { return impl_->metrics; }

}  // namespace plexus
