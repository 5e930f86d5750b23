// The HTTP server in-process on a free loopback port, with a scripted model behind the API
// (no scheduler): routes, statuses and OpenAI-shaped errors, the API key, body limit, streaming,
// a client that goes away mid-stream cancelling its request, and the wire as raw sockets see it
// (HEAD, keep-alive, pipelining, HTTP/1.0, 100-continue, deadlines, the connection cap).
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <map>
#include <thread>

#include "fake_stream.h"
#include "raw_http.h"
#include "core/error.h"
#include "serve/http_server.h"
#include "serve/openai_api.h"

namespace plexus {
namespace {

const Tokenizer& llama3() {
  static std::unique_ptr<Tokenizer> tok = Tokenizer::load(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3");
  return *tok;
}

struct ServerFixture : ::testing::Test {
  ServedModel model;
  std::unique_ptr<OpenAiApi> api;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
  std::mutex mutex;
  std::vector<std::shared_ptr<testing::FakeStream>> streams;
  std::atomic<bool> queue_full{false};
  std::chrono::milliseconds delay{0};
  std::string reply = "Hello world";
  int port = 0;

  void start(const std::string& api_key = "", std::size_t max_body = kDefaultMaxBody, bool ready = true,
             HttpServerOptions o = {}) {
    model.name = "tiny";
    model.max_model_len = 128;
    model.vocab_size = llama3().vocab_size();
    model.tokenizer = &llama3();
    model.submit = [this](ServeRequest) -> std::shared_ptr<RequestStream> {
      if (queue_full) throw QueueFull("64 requests already wait");
      auto s = std::make_shared<testing::FakeStream>(llama3().encode(reply, false), FinishReason::kLength, delay);
      std::lock_guard lock(mutex);
      streams.push_back(s);
      return s;
    };
    o.host = "127.0.0.1";
    o.port = 0;
    o.api_key = api_key;
    o.max_body = max_body;
    server = std::make_unique<HttpServer>(o);
    port = server->bind();
    ASSERT_GT(port, 0);
    server->start();
    api = std::make_unique<OpenAiApi>(model, &server->metrics());
    if (ready) make_ready();
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
    client->set_read_timeout(20, 0);
  }
  void make_ready() {
    server->set_ready(api.get(), [] { return MetricsSnapshot{}; });
  }
  void TearDown() override {
    if (server) server->stop();
  }
  httplib::Result post(const std::string& path, const std::string& body, const httplib::Headers& headers = {}) {
    return client->Post(path.c_str(), headers, body, "application/json");
  }
};

// The status and the error body's shape.
void expect_error(const httplib::Result& r, int status, const std::string& code = "") {
  ASSERT_TRUE(r) << "no response";
  EXPECT_EQ(r->status, status) << r->body;
  const Json j = Json::parse(r->body);
  ASSERT_TRUE(j.contains("error")) << r->body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"]["type"].is_string());
  EXPECT_TRUE(j["error"].contains("param"));
  if (!code.empty()) {
    EXPECT_EQ(j["error"]["code"], code) << r->body;
  }
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
}

TEST_F(ServerFixture, HealthIsLoadingUntilReady) {
  start("", kDefaultMaxBody, /*ready=*/false);
  auto r = client->Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(Json::parse(r->body)["status"], "loading");
  expect_error(client->Get("/v1/models"), 503, "model_loading");
  make_ready();
  r = client->Get("/health");
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["status"], "ok");
  r = client->Get("/v1/models");
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["data"][0]["id"], "tiny");
  r = client->Get("/v1/models/tiny");
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["id"], "tiny");
  expect_error(client->Get("/v1/models/other"), 404, "model_not_found");
  server->set_draining();
  r = client->Get("/health");
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(Json::parse(r->body)["status"], "draining");
}

TEST_F(ServerFixture, CompletionAndErrorsThenStillServing) {
  start();
  auto r = post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["choices"][0]["text"], "Hello world");
  expect_error(post("/v1/completions", R"({"prompt": "Hi", "max_tok)"), 400, "invalid_json");
  expect_error(post("/v1/completions", R"({"prompt": "Hi", "model": "gpt-4"})"), 404, "model_not_found");
  expect_error(post("/v1/completions", R"({"prompt": "Hi", "temperature": 7000})"), 400);
  expect_error(client->Get("/v1/nothing"), 404);
  expect_error(client->Get("/v1/completions"), 405);
  expect_error(client->Delete("/health"), 405);
  expect_error(post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})"), 400, "no_chat_template");
  queue_full = true;
  expect_error(post("/v1/completions", R"({"prompt": "Hi"})"), 429, "queue_full");
  queue_full = false;
  r = post("/v1/completions", R"({"prompt": "Hi"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = post("/tokenize", R"({"prompt": "Hello world", "add_special_tokens": false})");
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["count"], 2);
  r = client->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("plexus_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("plexus_requests_total{endpoint=\"/v1/completions\",status=\"404\"} 1"), std::string::npos);
  EXPECT_NE(r->body.find("plexus_requests_total{endpoint=\"other\",status=\"404\"} 1"), std::string::npos);
  EXPECT_NE(r->body.find("plexus_process_resident_memory_bytes "), std::string::npos);
}

TEST_F(ServerFixture, OversizedBodyGets413AndTheServerGoesOn) {
  start("", 4096);
  expect_error(post("/v1/completions", "{\"prompt\": \"" + std::string(10000, 'a') + "\"}"), 413, "request_too_large");
  auto r = post("/v1/completions", R"({"prompt": "Hi"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServerFixture, ApiKeyGuardsAllButHealth) {
  start("sekret");
  expect_error(client->Get("/v1/models"), 401, "invalid_api_key");
  expect_error(post("/v1/completions", R"({"prompt": "Hi"})", {{"Authorization", "Bearer wrong"}}), 401, "invalid_api_key");
  expect_error(client->Get("/metrics"), 401);
  auto r = client->Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = post("/v1/completions", R"({"prompt": "Hi"})", {{"Authorization", "Bearer sekret"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServerFixture, StreamingSendsChunksThenDone) {
  start();
  std::string body;
  httplib::Request req;
  auto r = client->Post("/v1/completions", R"({"prompt": "Hi", "stream": true, "stream_options": {"include_usage": true}})",
                        "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  body = r->body;
  ASSERT_GE(body.size(), 20u);
  EXPECT_EQ(body.substr(body.size() - 14), "data: [DONE]\n\n");
  std::string text;
  std::size_t at = 0;
  int usage_chunks = 0;
  while ((at = body.find("data: {", at)) != std::string::npos) {
    const std::size_t end = body.find("\n\n", at);
    const Json j = Json::parse(body.substr(at + 6, end - at - 6));
    if (j.contains("usage")) {
      ++usage_chunks;
      EXPECT_EQ(j["usage"]["completion_tokens"], 2);
    } else {
      text += j["choices"][0]["text"].get<std::string>();
    }
    at = end;
  }
  EXPECT_EQ(text, "Hello world");
  EXPECT_EQ(usage_chunks, 1);
}

TEST_F(ServerFixture, ClientGoneMidStreamCancelsTheRequest) {
  reply = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen";
  delay = std::chrono::milliseconds(100);
  start();
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = R"({"prompt": "Hi", "stream": true})";
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, std::size_t, std::uint64_t, std::uint64_t) { return ++chunks < 2; };
  (void)client->send(req);  // the receiver's false ends the connection
  EXPECT_GE(chunks, 2);
  bool cancelled = false;
  for (int i = 0; i < 100 && !cancelled; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::lock_guard lock(mutex);
    cancelled = !streams.empty() && streams[0]->cancelled();
  }
  EXPECT_TRUE(cancelled);
  auto r = client->Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

const std::string kCompletion = R"({"prompt": "Hi", "max_tokens": 2})";

std::string post_request(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

TEST_F(ServerFixture, HeadKeepAliveAndPipelining) {
  start();
  testing::RawClient c(port);
  ASSERT_TRUE(c.send("HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  testing::RawResponse r = c.read_response(10, /*head=*/true);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(testing::header_of(r.head, "Content-Length"), "15");  // {"status":"ok"}, not sent
  // Three requests in one write: three answers in order, on the same connection.
  ASSERT_TRUE(c.send("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n" + post_request("/v1/completions", kCompletion) +
                     "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  r = c.read_response(10);
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("\"object\":\"list\""), std::string::npos) << r.body;
  r = c.read_response(10);
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("Hello world"), std::string::npos) << r.body;
  r = c.read_response(10);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"status":"ok"})");
  EXPECT_FALSE(r.closed);
}

TEST_F(ServerFixture, Http10ClosesAndStreamsToTheClose) {
  start();
  testing::RawClient c(port);
  ASSERT_TRUE(c.send("GET /health HTTP/1.0\r\n\r\n"));
  testing::RawResponse r = c.read_response(10);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(testing::header_of(r.head, "Connection"), "close");
  EXPECT_TRUE(r.closed);
  testing::RawClient s(port);
  const std::string body = R"({"prompt": "Hi", "stream": true})";
  ASSERT_TRUE(s.send("POST /v1/completions HTTP/1.0\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
  r = s.read_response(10);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(testing::header_of(r.head, "Transfer-Encoding"), "");
  EXPECT_EQ(r.body.substr(r.body.size() - 14), "data: [DONE]\n\n");
}

TEST_F(ServerFixture, ExpectContinueGetsAnInterimAnswer) {
  start();
  testing::RawClient c(port);
  ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " +
                     std::to_string(kCompletion.size()) + "\r\n\r\n"));
  testing::RawResponse r = c.read_response(10);
  EXPECT_EQ(r.status, 100);
  ASSERT_TRUE(c.send(kCompletion));
  r = c.read_response(10);
  EXPECT_EQ(r.status, 200) << r.body;
  // Over --max-body: 413 at once, the body never asked for.
  testing::RawClient big(port);
  ASSERT_TRUE(big.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 99999999\r\n\r\n"));
  r = big.read_response(10);
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(r.closed);
}

TEST_F(ServerFixture, RefusalsAreOpenAiShapedAndCounted) {
  start("", 4096);
  const std::pair<std::string, int> cases[] = {
      {"POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n", 411},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", 400},
      {"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"GET /health HTTP/3.0\r\n\r\n", 505},
      {"GET /" + std::string(10000, 'a') + " HTTP/1.1\r\n\r\n", 414},
      {"GET /health HTTP/1.1\r\nX: " + std::string(70000, 'a') + "\r\n\r\n", 431},
      {"PUT /v1/models HTTP/1.1\r\n\r\n", 405},
      {"POST /v1/models/tiny HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405},
      {"GET /v1/models/ti%6Ey HTTP/1.1\r\n\r\n", 200},
  };
  for (const auto& [request, status] : cases) {
    testing::RawClient c(port);
    ASSERT_TRUE(c.send(request));
    const testing::RawResponse r = c.read_response(10);
    EXPECT_EQ(r.status, status) << request.substr(0, 60) << " → " << r.head;
    EXPECT_EQ(testing::header_of(r.head, "Content-Type"), "application/json") << r.head;
    const Json j = Json::parse(r.body, nullptr, false);
    if (status != 200) {
      EXPECT_TRUE(j.contains("error") && j["error"]["message"].is_string()) << r.body;
    }
    if (status == 405) {
      EXPECT_FALSE(testing::header_of(r.head, "Allow").empty()) << r.head;
    }
  }
  auto m = client->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("plexus_requests_total{endpoint=\"/v1/completions\",status=\"411\"} 1"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("plexus_requests_total{endpoint=\"/v1/completions\",status=\"501\"} 1"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("plexus_requests_total{endpoint=\"other\",status=\"414\"} 1"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("plexus_requests_total{endpoint=\"/v1/models/{id}\",status=\"200\"} 1"), std::string::npos) << m->body;
}

TEST_F(ServerFixture, SlowRequestsGet408AndTheCapMakesRoom) {
  HttpServerOptions o;
  o.request_timeout_s = 0.5;
  o.max_connections = 4;
  start("", kDefaultMaxBody, true, o);
  std::vector<testing::RawClient> slow;
  for (int i = 0; i < 4; ++i) {
    slow.emplace_back(port);
    ASSERT_TRUE(slow.back().send("GET /health HTTP/1.1\r\n"));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // read in this order
  }
  // A fifth client: the oldest unfinished request makes room (503 to it), the new one is served.
  testing::RawClient fresh(port);
  ASSERT_TRUE(fresh.send("GET /health HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(fresh.read_response(10).status, 200);
  EXPECT_EQ(slow[0].read_response(10).status, 503);
  // The others time out: 408, and the connection closes.
  for (int i = 1; i < 4; ++i) {
    const testing::RawResponse r = slow[i].read_response(10);
    EXPECT_EQ(r.status, 408) << r.head;
    EXPECT_TRUE(r.closed);
  }
}

// Requests still waiting for a worker thread when the server stops are answered 503; they were
// closed without an answer.
TEST_F(ServerFixture, RequestsWaitingForAWorkerAtStopGet503) {
  HttpServerOptions o;
  o.threads = 2;
  delay = std::chrono::milliseconds(600);  // per event: each completion holds its worker ~1.8 s
  start("", kDefaultMaxBody, true, o);
  std::vector<testing::RawClient> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back(port);
    ASSERT_TRUE(clients.back().send(post_request("/v1/completions", kCompletion)));
  }
  // Two in the workers: the handler submits its stream there (a worker holds it until the
  // completion ends). However slow the machine, wait for that rather than a fixed time; then a
  // moment for the listener to queue the other two, sent already.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    {
      std::lock_guard lock(mutex);
      if (streams.size() >= 2) break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "no request reached a worker";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::thread stopper([&] { server->stop(std::chrono::milliseconds(8000)); });
  std::map<int, int> statuses;
  for (testing::RawClient& c : clients) {
    const testing::RawResponse r = c.read_response(10);
    ++statuses[r.status];
    if (r.status == 503) {
      EXPECT_NE(r.body.find("stopping"), std::string::npos) << r.body;
      EXPECT_TRUE(r.closed);
    }
  }
  stopper.join();
  EXPECT_EQ(statuses[200], 2);
  EXPECT_EQ(statuses[503], 2) << "a request waiting at the stop got no answer (status 0: " << statuses[0] << ")";
}

TEST(HttpServerPort, APortInUseIsRefusedNotShared) {
  // A second server on a port another one listens on must fail to bind, not share the port
  // (SO_REUSEPORT would let both listen and split the connections between them).
  HttpServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  HttpServer first(o);
  const int port = first.bind();
  ASSERT_GT(port, 0);
  first.start();
  o.port = port;
  HttpServer second(o);
  EXPECT_THROW(second.bind(), RuntimeError);
  first.stop();
}

// A stop right after start is not lost: stop() returns (the listener ends) at once.
TEST(HttpServerPort, StopRightAfterStartEndsTheListener) {
  for (int i = 0; i < 20; ++i) {
    HttpServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    HttpServer server(o);
    ASSERT_GT(server.bind(), 0);
    server.start();
    server.stop();
  }
}

}  // namespace
}  // namespace plexus
