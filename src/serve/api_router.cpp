// Routing plexus serve's requests to the API (serve/api_router.h).
#include "serve/api_router.h"

#include <chrono>
#include <map>

#include "core/error.h"
#include "serve/api_error.h"
#include "serve/openai_response.h"

namespace plexus {

namespace {

// The routes and the method each answers.
const std::map<std::string, std::string, std::less<>> kRoutes = {
    {"/health", "GET"},          {"/v1/models", "GET"},      {"/metrics", "GET"},        {"/v1/completions", "POST"},
    {"/v1/chat/completions", "POST"}, {"/tokenize", "POST"}, {"/detokenize", "POST"},
};
constexpr std::string_view kModelPrefix = "/v1/models/";

constexpr std::chrono::seconds kKeepAliveComment{1};
constexpr int kLargeBodiesAtOnce = 2;

std::string endpoint_label(const std::string& path) {
  if (kRoutes.count(path)) return path;
  if (path.size() > kModelPrefix.size() && path.rfind(kModelPrefix, 0) == 0) return "/v1/models/{id}";
  return "other";
}

HttpResponse json_response(int status, const Json& j) {
  HttpResponse r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  return r;
}

HttpResponse error_response(const ApiError& e) { return json_response(e.status(), error_json(e)); }

}  // namespace

// What a request has been answered, counted once in /metrics.
struct ApiRouter::Answer {
  Answer(HttpExchange& ex, Metrics& m) : exchange(ex), metrics(m), endpoint(endpoint_label(ex.request().path)) {}
  void respond(HttpResponse r) {
    if (answered) return;
    answered = true;
    metrics.count_request(endpoint, r.status);
    exchange.respond(std::move(r));
  }
  void json(int status, const Json& j) { respond(json_response(status, j)); }
  void error(const ApiError& e) { respond(error_response(e)); }
  HttpExchange& exchange;
  Metrics& metrics;
  std::string endpoint;
  bool answered = false;
};

class ApiRouter::LargeBodyTurn {
 public:
  LargeBodyTurn(ApiRouter& r, std::size_t bytes) : r_(r), large_(bytes >= kLargeBody) {
    if (!large_) return;
    std::unique_lock lock(r_.large_mutex_);
    r_.large_cv_.wait(lock, [&] { return r_.large_parsing_ < kLargeBodiesAtOnce; });
    ++r_.large_parsing_;
  }
  ~LargeBodyTurn() {
    if (!large_) return;
    {
      std::lock_guard lock(r_.large_mutex_);
      --r_.large_parsing_;
    }
    r_.large_cv_.notify_one();
  }
  LargeBodyTurn(const LargeBodyTurn&) = delete;
  LargeBodyTurn& operator=(const LargeBodyTurn&) = delete;

 private:
  ApiRouter& r_;
  bool large_;
};

void ApiRouter::set_ready(const OpenAiApi* api, std::function<MetricsSnapshot()> snapshot) {
  {
    std::lock_guard lock(snapshot_mutex_);
    snapshot_ = std::move(snapshot);
  }
  api_.store(api);
}

const OpenAiApi& ApiRouter::ready_api() const {
  const OpenAiApi* a = api_.load();
  if (!a) throw ApiError(503, "the model is still loading: try again when GET /health answers 200", "service_unavailable", "",
                         "model_loading");
  return *a;
}

MetricsSnapshot ApiRouter::snapshot() {
  MetricsSnapshot s;
  {
    std::lock_guard lock(snapshot_mutex_);
    if (snapshot_) s = snapshot_();
  }
  if (!s.resident_bytes) s.resident_bytes = process_resident_bytes();
  return s;
}

HttpResponse ApiRouter::error_page(int status, const std::string& message, const std::string& path) {
  metrics_.count_request(endpoint_label(path), status);
  HttpResponse r = error_response(http_error(status, message));
  if (status == 503) r.headers.emplace_back("Retry-After", "1");
  return r;
}

void ApiRouter::handle(HttpExchange& exchange) {
  Answer answer(exchange, metrics_);
  try {
    route(exchange, answer);
  } catch (const ApiError& e) {
    answer.error(e);
  } catch (const InputError& e) {
    answer.error(invalid_request(e.what()));
  } catch (const std::bad_alloc&) {
    answer.error(ApiError(500, "out of memory", "server_error"));
  } catch (const std::exception& e) {
    answer.error(ApiError(500, e.what(), "server_error"));
  }
}

void ApiRouter::route(HttpExchange& exchange, Answer& answer) {
  const HttpRequest& req = exchange.request();
  if (req.method == "POST" && !req.framed) {
    // HTTP/1.1 has a request without Content-Length or chunked coding end at its headers; a
    // client that sent a body anyway must not have it read as the next request: 411 and close,
    // before any other answer (401, 404, 405 would keep the connection).
    HttpResponse r = error_response(http_error(411, "POST " + req.path + " needs its JSON body with a Content-Length (or chunked)"));
    r.close = true;
    return answer.respond(std::move(r));
  }
  if (!api_key_.empty() && req.path != "/health") {
    const std::string* auth = req.header("authorization");
    if (!auth || *auth != "Bearer " + api_key_) return answer.error(error_for_status(401));
  }
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  const auto route = kRoutes.find(req.path);
  const bool model_path = answer.endpoint == "/v1/models/{id}";
  if (route == kRoutes.end() && !model_path) return answer.error(error_for_status(404));
  const std::string allowed = model_path ? "GET" : route->second;
  if (method != allowed) {
    HttpResponse r = error_response(ApiError(405, "method " + req.method + " not allowed on " + req.path + ": use " + allowed,
                                             "invalid_request_error", "", "method_not_allowed"));
    r.headers.emplace_back("Allow", allowed);
    return answer.respond(std::move(r));
  }
  if (model_path) return answer.json(200, ready_api().model(req.path.substr(kModelPrefix.size())));
  if (req.path == "/health") {
    if (draining_) return answer.json(503, {{"status", "draining"}});
    return answer.json(api_.load() ? 200 : 503, {{"status", api_.load() ? "ok" : "loading"}});
  }
  if (req.path == "/v1/models") return answer.json(200, ready_api().models());
  if (req.path == "/metrics") {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics_.render(snapshot());
    return answer.respond(std::move(r));
  }
  if (req.path == "/v1/completions" || req.path == "/v1/chat/completions") {
    return generation(exchange, answer, req.path == "/v1/chat/completions");
  }
  const OpenAiApi& a = ready_api();
  Json result;
  {
    LargeBodyTurn turn(*this, req.body.size());
    result = req.path == "/tokenize" ? a.tokenize(req.body) : a.detokenize(req.body);
  }
  answer.json(200, result);
}

void ApiRouter::generation(HttpExchange& exchange, Answer& answer, bool chat) {
  const OpenAiApi& a = ready_api();
  const PreparedRequest prepared = [&] {
    LargeBodyTurn turn(*this, exchange.request().body.size());
    PreparedRequest p = a.prepare(exchange.request().body, chat);
    p.serve.arrived = exchange.request().received;  // latencies from arrival, parsing and tokenizing included
    return p;
  }();
  const std::shared_ptr<RequestStream> stream = a.submit(prepared);
  if (!prepared.api.stream) {
    // While the completion runs nothing is written: the socket is polled for the client's close
    // (EOF or a hang-up), which cancels the request as a failed write does a stream's.
    std::optional<Json> done = a.complete(prepared, *stream, [&] { return exchange.client_alive(); });
    if (done) return answer.json(200, *done);
    HttpResponse gone = error_response(ApiError(499, "the client closed its connection before the completion ended: cancelled",
                                                "invalid_request_error", "", "client_closed_request"));
    gone.close = true;
    return answer.respond(std::move(gone));
  }
  answer.answered = true;
  metrics_.count_request(answer.endpoint, 200);
  // While nothing is sent (the request waits in the queue, a long prompt prefills), an SSE
  // comment every second: clients skip it, and a client that left is noticed by its failed write.
  auto last_write = std::chrono::steady_clock::now();
  auto write = [&](const std::string& s) {
    last_write = std::chrono::steady_clock::now();
    return exchange.write(s);
  };
  auto alive = [&] {
    if (std::chrono::steady_clock::now() - last_write < kKeepAliveComment) return exchange.client_alive();
    return write(": waiting\n\n");
  };
  if (exchange.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}})) a.stream(prepared, *stream, write, alive);
  stream->cancel();  // the stream ended, however: the slot frees (a finished request ignores it)
}

}  // namespace plexus
