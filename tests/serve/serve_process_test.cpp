// The real `plexus serve` on a free loopback port with a tiny random model (Llama 3 tokenizer),
// driven with curl: health, models, completions checked against `plexus generate`, streaming,
// stop strings, logprobs, tokenize/detokenize, chat, metrics, the API key, errors after which
// the server still serves, a client killed mid-stream freeing its slot, and SIGTERM draining.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "server_process.h"

namespace plexus::testing {
namespace {

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

const std::string kTokenizer = std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3";

// One model and one server for the suite (loading is the slow part).
struct Shared {
  TempDir dir{"serve"};
  std::string model = dir / "tiny";
  std::unique_ptr<ServerProcess> server;
};
Shared* shared = nullptr;

class ServeProcess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared = new Shared;
    const ProcessResult made = run_plexus("make-model " + shell_quote(shared->model) + " --tokenizer " + shell_quote(kTokenizer));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    shared->server = std::make_unique<ServerProcess>(
        shell_quote(shared->model) + " --served-model-name tiny --threads 2 --context 2048 --max-sequences 4 --max-body 65536",
        shared->dir);
  }
  static void TearDownTestSuite() {
    delete shared;
    shared = nullptr;
  }
  void SetUp() override {
    if (!shared->server->ok()) GTEST_SKIP() << "the server did not start (see the suite's first failure)";
  }
  static std::string url(const std::string& path) { return shared->server->url(path); }
  static HttpResult post(const std::string& path, const Json& body, const std::vector<std::string>& headers = {}) {
    return curl("POST", url(path), body.dump(), headers);
  }
  // The value of a metric line "NAME VALUE" in /metrics (nullopt when absent).
  static std::optional<double> metric(const std::string& name) {
    const HttpResult r = curl("GET", url("/metrics"));
    const std::size_t at = r.body.find("\n" + name + " ");
    if (at == std::string::npos) return std::nullopt;
    return std::atof(r.body.c_str() + at + name.size() + 2);
  }
};

void expect_error(const HttpResult& r, int status, const std::string& param_or_code = "") {
  EXPECT_EQ(r.status, status) << r.body;
  const Json j = r.json();
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string()) << r.body;
  EXPECT_TRUE(j["error"]["type"].is_string()) << r.body;
  if (!param_or_code.empty()) {
    EXPECT_TRUE(j["error"]["param"] == param_or_code || j["error"]["code"] == param_or_code) << r.body;
  }
}

TEST_F(ServeProcess, HealthModelsMetrics) {
  HttpResult r = curl("GET", url("/health"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["status"], "ok");
  r = curl("GET", url("/v1/models"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["object"], "list");
  EXPECT_EQ(r.json()["data"][0]["id"], "tiny");
  EXPECT_EQ(r.json()["data"][0]["max_model_len"], 2048);
  r = curl("GET", url("/metrics"));
  EXPECT_EQ(r.status, 200);
  for (const char* name : {"plexus_requests_total", "plexus_requests_running", "plexus_requests_waiting",
                           "plexus_kv_cache_usage_ratio", "plexus_time_to_first_token_seconds_bucket",
                           "plexus_process_resident_memory_bytes"}) {
    EXPECT_NE(r.body.find(name), std::string::npos) << name;
  }
  EXPECT_NE(shared->server->log().find("plexus serve: model 'tiny' loaded"), std::string::npos) << shared->server->log();
}

TEST_F(ServeProcess, GreedyCompletionEqualsGenerate) {
  const ProcessResult g = run_plexus("generate " + shell_quote(shared->model) + " --prompt 'The llama' --max-tokens 12 --json --threads 2");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const Json want = Json::parse(g.out);
  HttpResult r = post("/v1/completions", {{"model", "tiny"}, {"prompt", "The llama"}, {"max_tokens", 12}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = r.json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["text"], want["text"]);
  EXPECT_EQ(j["choices"][0]["finish_reason"], want["finish_reason"]);
  EXPECT_EQ(j["usage"]["prompt_tokens"], want["prompt_tokens"]);
  EXPECT_EQ(j["usage"]["completion_tokens"], want["completion_tokens"]);
  EXPECT_EQ(j["usage"]["total_tokens"], want["prompt_tokens"].get<int>() + want["completion_tokens"].get<int>());
  EXPECT_TRUE(j["usage"]["time_s"].is_number());
  EXPECT_TRUE(j["usage"].contains("energy_j"));
  // The steps' host time (outside their forwards): some for every step, and its mean per step.
  const std::string m = curl("GET", url("/metrics")).body;
  auto value = [&m](const std::string& name) {
    const std::size_t at = m.find("\n" + name + " ");
    return at == std::string::npos ? -1.0 : std::atof(m.c_str() + at + name.size() + 2);
  };
  const double steps = value("plexus_scheduler_steps_total"), host = value("plexus_scheduler_host_seconds_total");
  EXPECT_GE(steps, j["usage"]["completion_tokens"].get<double>()) << m;  // a step per token at least
  EXPECT_GT(host, 0.0) << m;
  EXPECT_NEAR(value("plexus_scheduler_host_seconds_per_step"), host / steps, 1e-6 * host / steps + 1e-9) << m;
  // The same prompt as token ids.
  const ProcessResult ids = run_plexus("generate " + shell_quote(shared->model) + " --ids 1,2,3,4 --max-tokens 6 --json --threads 2");
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  r = post("/v1/completions", {{"prompt", {1, 2, 3, 4}}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["text"], Json::parse(ids.out)["text"]);
}

// Issue 32 item 6: a temperature below 1e-5 is greedy (runtime/sampler.h), as in generate and
// batch; 1e-310 and 5e-324 used to make every token the vocabulary's last id.
TEST_F(ServeProcess, TemperatureBelowTheThresholdIsGreedy) {
  const std::string greedy_body = R"({"prompt": [1, 2, 3], "max_tokens": 6, "temperature": 0})";
  const HttpResult greedy = curl("POST", url("/v1/completions"), greedy_body);
  ASSERT_EQ(greedy.status, 200) << greedy.body;
  const Json want = greedy.json()["choices"][0]["text"];
  for (const std::string t : {"1e-310", "5e-324", "9e-6"}) {
    const HttpResult r = curl("POST", url("/v1/completions"), R"({"prompt": [1, 2, 3], "max_tokens": 6, "temperature": )" + t + "}");
    ASSERT_EQ(r.status, 200) << t << " " << r.body;
    EXPECT_EQ(r.json()["choices"][0]["text"], want) << "temperature " << t;
  }
}

TEST_F(ServeProcess, ConcurrentRequestsGetTheirOwnResults) {
  // Each prompt alone first, then all at once (streaming and not, greedy and seeded): the same
  // results, none mixed up.
  std::vector<Json> requests;
  for (int i = 0; i < 6; ++i) {
    Json r = {{"prompt", "Request number " + std::to_string(i)}, {"max_tokens", 8 + i}, {"ignore_eos", true}};
    if (i % 2) r["temperature"] = 0;
    if (i % 2 == 0) r["seed"] = 100 + i;
    requests.push_back(r);
  }
  std::vector<std::string> alone;
  for (const Json& r : requests) {
    const HttpResult h = post("/v1/completions", r);
    ASSERT_EQ(h.status, 200) << h.body;
    alone.push_back(h.json()["choices"][0]["text"]);
  }
  std::vector<std::string> together(requests.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    clients.emplace_back([&, i] {
      Json r = requests[i];
      if (i % 3 == 0) r["stream"] = true;
      const HttpResult h = post("/v1/completions", r);
      if (!r.contains("stream")) {
        together[i] = h.json()["choices"][0]["text"];
        return;
      }
      bool done = false;
      for (const Json& e : sse_events(h.body, &done)) together[i] += e["choices"][0]["text"].get<std::string>();
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(together, alone);
}

TEST_F(ServeProcess, StreamingMatchesWholeResponse) {
  const Json req = {{"prompt", "Once upon"}, {"max_tokens", 10}, {"temperature", 0}};
  const HttpResult whole = post("/v1/completions", req);
  ASSERT_EQ(whole.status, 200) << whole.body;
  Json sreq = req;
  sreq["stream"] = true;
  sreq["stream_options"] = {{"include_usage", true}};
  const HttpResult s = post("/v1/completions", sreq);
  ASSERT_EQ(s.status, 200) << s.body;
  bool done = false;
  const std::vector<Json> events = sse_events(s.body, &done);
  EXPECT_TRUE(done) << s.body;
  ASSERT_GE(events.size(), 2u);
  std::string text;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_EQ(events[i]["object"], "text_completion");
    text += events[i]["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, whole.json()["choices"][0]["text"]);
  EXPECT_EQ(events[events.size() - 2]["choices"][0]["finish_reason"], whole.json()["choices"][0]["finish_reason"]);
  EXPECT_TRUE(events.back()["choices"].empty());
  EXPECT_EQ(events.back()["usage"]["completion_tokens"], whole.json()["usage"]["completion_tokens"]);
}

TEST_F(ServeProcess, StopStringTrimsAndStops) {
  const Json req = {{"prompt", "Tell me"}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}};
  const HttpResult whole = post("/v1/completions", req);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const std::string text = whole.json()["choices"][0]["text"];
  // A stop string from the middle of the text, whole characters (ASCII) only.
  std::size_t at = std::string::npos;
  for (std::size_t i = text.size() / 3; i + 2 < text.size(); ++i) {
    if (std::isalnum(static_cast<unsigned char>(text[i])) && std::isalnum(static_cast<unsigned char>(text[i + 1]))) {
      at = i;
      break;
    }
  }
  if (at == std::string::npos) GTEST_SKIP() << "no ASCII pair in the random model's text: " << text;
  const std::string stop = text.substr(at, 2);
  Json sreq = req;
  sreq["stop"] = {stop, "\x01never"};
  HttpResult r = post("/v1/completions", sreq);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
  sreq["stream"] = true;
  r = post("/v1/completions", sreq);
  bool done = false;
  std::string streamed;
  for (const Json& e : sse_events(r.body, &done)) streamed += e["choices"][0]["text"].get<std::string>();
  EXPECT_TRUE(done);
  EXPECT_EQ(streamed, text.substr(0, text.find(stop)));
}

TEST_F(ServeProcess, LogprobsLegacyShape) {
  const HttpResult r = post("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 4}, {"temperature", 0}, {"logprobs", 2},
                                                {"ignore_eos", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json lp = r.json()["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 4u) << lp;
  ASSERT_EQ(lp["token_logprobs"].size(), 4u);
  ASSERT_EQ(lp["top_logprobs"].size(), 4u);
  ASSERT_EQ(lp["text_offset"].size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    const double chosen = lp["token_logprobs"][i];
    EXPECT_LE(chosen, 0.0);
    double best = -1e30;
    for (const auto& [tok, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<double>());
    EXPECT_NEAR(chosen, best, 1e-4);  // greedy: the chosen token is the most likely
    if (i > 0) {
      EXPECT_GE(lp["text_offset"][i], lp["text_offset"][i - 1]);
    }
  }
}

TEST_F(ServeProcess, TokenizeDetokenizeRoundTrip) {
  HttpResult r = post("/tokenize", {{"prompt", "Hello, llamas!"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json t = r.json();
  EXPECT_EQ(t["count"], t["tokens"].size());
  EXPECT_EQ(t["max_model_len"], 2048);
  r = post("/detokenize", {{"tokens", t["tokens"]}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["prompt"], "Hello, llamas!");
  r = post("/tokenize", {{"prompt", "Hello, llamas!"}, {"add_special_tokens", false}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["tokens"], t["tokens"]);  // this tokenizer adds no special tokens to a prompt
  expect_error(post("/detokenize", {{"tokens", {1, -5}}}), 400, "tokens");
}

TEST_F(ServeProcess, ChatCompletionIsTheTemplatedPromptsCompletion) {
  const Json messages = Json::array({{{"role", "user"}, {"content", "Hi there"}}});
  HttpResult t = post("/tokenize", {{"messages", messages}});
  if (t.status == 400 && t.json()["error"]["code"] == "no_chat_template") GTEST_SKIP() << "this build has no chat templates";
  ASSERT_EQ(t.status, 200) << t.body;
  const HttpResult c = post("/v1/completions", {{"prompt", t.json()["tokens"]}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(c.status, 200) << c.body;
  HttpResult r = post("/v1/chat/completions", {{"model", "tiny"}, {"messages", messages}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], c.json()["choices"][0]["text"]);
  EXPECT_EQ(j["usage"]["prompt_tokens"], t.json()["count"]);
  r = post("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 6}, {"temperature", 0}, {"stream", true}});
  bool done = false;
  const std::vector<Json> events = sse_events(r.body, &done);
  ASSERT_GE(events.size(), 2u) << r.body;
  EXPECT_TRUE(done);
  EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (const Json& e : events) {
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    if (e["choices"][0]["delta"].contains("content")) text += e["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, c.json()["choices"][0]["text"]);
}

TEST_F(ServeProcess, ErrorsAreOpenAiShapedAndTheServerGoesOn) {
  expect_error(curl("POST", url("/v1/completions"), "{\"prompt\": \"x\", "), 400, "invalid_json");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"model", "gpt-4o"}}), 404, "model_not_found");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", -3}}), 400, "max_tokens");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"top_p", 2}}), 400, "top_p");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 5000}}), 400, "max_tokens");
  expect_error(post("/v1/completions", {{"prompt", std::string(70000, 'a')}}), 413, "request_too_large");
  expect_error(curl("GET", url("/v1/unknown")), 404);
  expect_error(curl("PUT", url("/v1/models")), 405);
  const HttpResult r = post("/v1/completions", {{"prompt", "still here"}, {"max_tokens", 2}});
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(ServeProcess, ARepeatedPromptStartComesFromThePrefixCacheWithTheSameText) {
  std::string system = "You are a careful assistant. Answer briefly and cite the document.";
  for (int i = 0; i < 4; ++i) system += " Rule " + std::to_string(i) + ": never invent a number you were not given.";
  const double hits = metric("plexus_prefix_cache_hits_total").value_or(-1);
  const double hit_tokens = metric("plexus_prefix_cache_hit_tokens_total").value_or(-1);
  ASSERT_GE(hits, 0);
  std::vector<std::string> texts;
  for (const char* question : {" Q: what is two and two?", " Q: what is two and two?", " Q: name a colour."}) {
    const HttpResult r = post("/v1/completions", {{"prompt", system + question}, {"max_tokens", 6}, {"temperature", 0}});
    ASSERT_EQ(r.status, 200) << r.body;
    texts.push_back(r.json()["choices"][0]["text"].get<std::string>());
  }
  EXPECT_EQ(texts[0], texts[1]);
  // The second and third requests started from the first one's cached blocks (>= 3 of 16 tokens).
  EXPECT_EQ(metric("plexus_prefix_cache_hits_total").value_or(-1), hits + 2);
  EXPECT_GE(metric("plexus_prefix_cache_hit_tokens_total").value_or(-1), hit_tokens + 2 * 48);
  EXPECT_GE(metric("plexus_prefix_cache_sequences").value_or(-1), 1);

  // --no-prefix-cache: the same texts, every prompt run whole.
  ServerProcess plain(shell_quote(shared->model) + " --threads 2 --context 2048 --max-sequences 4 --no-prefix-cache", shared->dir);
  ASSERT_TRUE(plain.ok());
  std::size_t i = 0;
  for (const char* question : {" Q: what is two and two?", " Q: what is two and two?", " Q: name a colour."}) {
    const HttpResult r = curl("POST", plain.url("/v1/completions"),
                              Json{{"prompt", system + question}, {"max_tokens", 6}, {"temperature", 0}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["choices"][0]["text"].get<std::string>(), texts[i++]);
  }
  const std::string m = curl("GET", plain.url("/metrics")).body;
  EXPECT_NE(m.find("\nplexus_prefix_cache_hits_total 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\nplexus_prefix_cache_misses_total 0\n"), std::string::npos) << m;
  EXPECT_EQ(plain.stop(SIGTERM, 30), 0) << plain.log();
}

TEST_F(ServeProcess, ClientKilledMidStreamFreesItsSlot) {
  const double cancelled_before = metric("plexus_requests_finished_total{reason=\"cancelled\"}").value_or(0);
  const Json req = {{"prompt", "Go on"}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}};
  // curl's output goes into head, which exits after the first chunk's bytes: curl dies of SIGPIPE
  // at its next write, closing the connection a few tokens into the 2000, however fast the
  // machine (a client leaving after a fixed time raced the whole generation on a quiet one).
  TempDir tmp("killed-client");
  std::ofstream(tmp / "request", std::ios::binary) << req.dump();
  // (In a subshell: run_command's </dev/null would otherwise be head's input instead of the pipe.)
  const ProcessResult r = run_command("(curl -s -N --max-time 120 -H 'Content-Type: application/json' --data-binary @" +
                                      shell_quote(tmp / "request") + " " + shell_quote(url("/v1/completions")) + " | head -c 200)");
  EXPECT_EQ(r.out.rfind("data: {", 0), 0u) << "no chunk before the client went away: " << r.out << r.err;
  bool freed = false;
  for (int i = 0; i < 200 && !freed; ++i) {
    freed = metric("plexus_requests_running") == 0.0;
    if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(freed);
  EXPECT_GT(metric("plexus_requests_finished_total{reason=\"cancelled\"}").value_or(0), cancelled_before);
  EXPECT_EQ(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}}).status, 200);
}

TEST(ServeProcessAlone, ApiKeyEnforcedHealthOpenChatTemplateFile) {
  TempDir dir("serve-key");
  ASSERT_EQ(run_plexus("make-model " + shell_quote(dir / "m") + " --tokenizer " + shell_quote(kTokenizer)).exit_code, 0);
  write_text(dir / "t.jinja", "{{ bos_token }}{% for m in messages %}[{{ m.role }}: {{ m.content }}]{% endfor %}");
  ServerProcess server(shell_quote(dir / "m") + " --api-key s3cret --threads 2 --context 256 --chat-template " +
                           shell_quote(dir / "t.jinja"), dir);
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(curl("GET", server.url("/health")).status, 200);
  expect_error(curl("GET", server.url("/v1/models")), 401, "invalid_api_key");
  expect_error(curl("POST", server.url("/v1/completions"), R"({"prompt": "x"})", {"Authorization: Bearer nope"}), 401);
  expect_error(curl("GET", server.url("/metrics")), 401);
  const HttpResult ok = curl("POST", server.url("/v1/completions"), R"({"prompt": "x", "max_tokens": 2})",
                             {"Authorization: Bearer s3cret"});
  EXPECT_EQ(ok.status, 200) << ok.body;
  // --chat-template FILE replaces the model's template, with the model's special tokens.
  const HttpResult t = curl("POST", server.url("/tokenize"), R"({"messages": [{"role": "user", "content": "Hi"}]})",
                            {"Authorization: Bearer s3cret"});
  ASSERT_EQ(t.status, 200) << t.body;
  const HttpResult d = curl("POST", server.url("/detokenize"), Json{{"tokens", t.json()["tokens"]}}.dump(),
                            {"Authorization: Bearer s3cret"});
  EXPECT_EQ(d.json()["prompt"], "<|begin_of_text|>[user: Hi]") << d.body;
  EXPECT_EQ(server.stop(SIGTERM, 30), 0) << server.log();
}

TEST(ServeProcessAlone, SigtermFinishesTheRunningRequestThenExitsZero) {
  TempDir dir("serve-term");
  ASSERT_EQ(run_plexus("make-model " + shell_quote(dir / "m") + " --tokenizer " + shell_quote(kTokenizer)).exit_code, 0);
  ServerProcess server(shell_quote(dir / "m") + " --threads 2 --context 1024 --drain-timeout 60", dir);
  ASSERT_TRUE(server.ok());
  // A request in the background; SIGTERM once it runs.
  HttpResult result;
  std::thread client([&] {
    result = curl("POST", server.url("/v1/completions"), R"({"prompt": "x", "max_tokens": 400, "ignore_eos": true})", {}, 120);
  });
  bool running = false;
  for (int i = 0; i < 200 && !running; ++i) {
    const HttpResult m = curl("GET", server.url("/metrics"));
    running = m.body.find("\nplexus_requests_running 1\n") != std::string::npos;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(running);
  const int code = server.stop(SIGTERM, 90);
  client.join();
  EXPECT_EQ(code, 0) << server.log();
  ASSERT_EQ(result.status, 200) << result.body;
  EXPECT_EQ(result.json()["usage"]["completion_tokens"], 400);
  EXPECT_EQ(result.json()["choices"][0]["finish_reason"], "length");
}

// The value of metric line NAME in a /metrics body (-1 when absent).
double metric_in(const std::string& body, const std::string& name) {
  const std::size_t at = body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::atof(body.c_str() + at + name.size() + 2);
}

TEST(ServeProcessAlone, AStreamingClientThatLeavesTheQueueIsDroppedBeforeItRuns) {
  TempDir dir("serve-queue");
  ASSERT_EQ(run_plexus("make-model " + shell_quote(dir / "m") + " --tokenizer " + shell_quote(kTokenizer)).exit_code, 0);
  ServerProcess server(shell_quote(dir / "m") + " --threads 2 --max-sequences 1", dir);
  ASSERT_TRUE(server.ok());
  // Four long requests one after another (one sequence at a time), then a streaming client
  // queued behind them that gives up after 1.5 s.
  std::vector<std::thread> long_clients;
  for (int i = 0; i < 4; ++i) {
    long_clients.emplace_back([&] {
      curl("POST", server.url("/v1/completions"), R"({"prompt": "x", "max_tokens": 2000, "ignore_eos": true})", {}, 120);
    });
  }
  bool queued = false;
  for (int i = 0; i < 200 && !queued; ++i) {
    queued = metric_in(curl("GET", server.url("/metrics")).body, "plexus_requests_waiting") == 3;
    if (!queued) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(queued);
  const HttpResult gone = curl("POST", server.url("/v1/completions"), R"({"prompt": "y", "max_tokens": 5, "stream": true})", {}, 1.5);
  EXPECT_NE(gone.body.find(": waiting"), std::string::npos) << gone.body;  // the SSE comment sent while it waits
  EXPECT_EQ(gone.body.find("data: "), std::string::npos) << gone.body;
  // Its request is cancelled while the long ones still wait: not only once its turn comes.
  bool dropped_early = false;
  for (int i = 0; i < 150 && !dropped_early; ++i) {
    const std::string body = curl("GET", server.url("/metrics")).body;
    dropped_early = metric_in(body, "plexus_requests_finished_total{reason=\"cancelled\"}") == 1 &&
                    metric_in(body, "plexus_requests_waiting") >= 1;
    if (!dropped_early) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(dropped_early);
  for (std::thread& t : long_clients) t.join();
  EXPECT_EQ(server.stop(SIGTERM, 30), 0) << server.log();
}

TEST(ServeProcessAlone, BadFlagsExit2) {
  TempDir dir("serve-flags");
  const std::pair<const char*, const char*> cases[] = {{"--port 70000", "--port"},
                                                       {"--max-sequences 0", "--max-sequences"},
                                                       {"--max-queue -1", "--max-queue"},
                                                       {"--drain-timeout -1", "--drain-timeout"},
                                                       {"--max-body 10", "--max-body"},
                                                       {"--batch 0", "--max-sequences"},  // its old spelling
                                                       {"--max-queue 0", "--max-queue"},
                                                       {"--max-connections 0", "--max-connections"},
                                                       {"--request-timeout 0", "--request-timeout"},
                                                       {"--request-timeout x", "--request-timeout"},
                                                       {"--tool-call-parser qwen", "--tool-call-parser"}};
  for (const auto& [flags, mention] : cases) {
    const ProcessResult r = run_plexus("serve " + shell_quote(dir / "none") + " " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
    EXPECT_NE(r.err.find(mention), std::string::npos) << flags << ": " << r.err;
  }
}

TEST(ServeProcessAlone, PlanErrorsNameMaxSequencesNotBatch) {
  // The plan's batch is --max-sequences under serve: more sequences than tokens per forward.
  TempDir dir("serve-plan-error");
  ASSERT_EQ(run_plexus("make-model " + shell_quote(dir / "m") + " --tokenizer " + shell_quote(kTokenizer)).exit_code, 0);
  const std::string serve = "timeout -k 5 60 env CUDA_VISIBLE_DEVICES= " + shell_quote(PLEXUS_BINARY) + " serve " +
                            shell_quote(dir / "m") + " --port 0 ";
  const ProcessResult r = run_command(serve + "--max-sequences 300 --batch-tokens 256");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--max-sequences 300"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--batch-tokens"), std::string::npos) << r.err;
  // Budgets too small for the KV caches of 4 sequences: the planner's advice, in serve's flags.
  const ProcessResult b = run_command(serve + "--max-sequences 4 --max-memory 0=12MiB,1=12MiB,cpu=1GiB");
  EXPECT_NE(b.exit_code, 0) << b.err;
  EXPECT_NE(b.err.find("--max-sequences (4)"), std::string::npos) << b.err;
  for (const ProcessResult* x : {&r, &b}) EXPECT_EQ(x->err.find("--batch "), std::string::npos) << x->err;
  EXPECT_EQ(b.err.find("--batch ("), std::string::npos) << b.err;
}

TEST(ServeProcessAlone, AModelThatFailsToLoadEndsTheServerWithExit2) {
  // The listener is up (and /health 503) before the model loads: a model that fails at once
  // must still end the process, not leave it listening.
  TempDir dir("serve-bad-model");
  std::filesystem::create_directories(dir / "no-tokenizer");
  for (const char* model : {"missing", "no-tokenizer"}) {
    // Bounded: the bug this guards against is a process that never ends (then exit 124).
    const ProcessResult r = run_command("timeout -k 5 60 env CUDA_VISIBLE_DEVICES= " + shell_quote(PLEXUS_BINARY) +
                                        " serve " + shell_quote(dir / model) + " --port 0");
    EXPECT_EQ(r.exit_code, 2) << model << ": " << r.err;
    EXPECT_NE(r.err.find(model), std::string::npos) << r.err;
  }
}

// "listening on" means ready: a model that fails while loading never printed it; one that loads
// prints the "loading" line at once and "listening" only after its "loaded" line.
TEST(ServeProcessAlone, ListeningIsPrintedOnlyOnceTheModelIsReady) {
  TempDir dir("serve-startup");
  const std::string bad = dir / "bad-weights";
  const ProcessResult made = run_plexus("make-model " + shell_quote(bad) + " --tokenizer " + shell_quote(kTokenizer));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  write_text(bad + "/model.safetensors", "not a safetensors file");
  const ProcessResult r = run_command("timeout -k 5 60 env CUDA_VISIBLE_DEVICES= " + shell_quote(PLEXUS_BINARY) + " serve " +
                                      shell_quote(bad) + " --port 0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("plexus serve: loading '" + bad + "'; http://127.0.0.1:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("listening on"), std::string::npos) << r.err;

  const std::string good = dir / "good";
  ASSERT_EQ(run_plexus("make-model " + shell_quote(good) + " --tokenizer " + shell_quote(kTokenizer)).exit_code, 0);
  ServerProcess server(shell_quote(good) + " --threads 1", dir);
  ASSERT_GT(server.port(), 0);
  const std::string log = server.log();
  const std::size_t loading = log.find("plexus serve: loading '" + good + "'; http://127.0.0.1:" + std::to_string(server.port()) +
                                       "/health answers 503 until it is ready\n");
  const std::size_t loaded = log.find("loaded in");
  const std::size_t listening = log.find("plexus serve: listening on http://127.0.0.1:" + std::to_string(server.port()) + "\n");
  ASSERT_NE(loading, std::string::npos) << log;
  ASSERT_NE(loaded, std::string::npos) << log;
  ASSERT_NE(listening, std::string::npos) << log;
  EXPECT_LT(loading, loaded) << log;
  EXPECT_LT(loaded, listening) << log;
}

}  // namespace
}  // namespace plexus::testing
