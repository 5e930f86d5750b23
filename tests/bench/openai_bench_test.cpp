// `backend.type: openai`: `plexus bench` as a process against a real `plexus serve` (another
// process on loopback, a tiny random model): request and token counts equal the server's
// /metrics counters, TTFT and E2E fall in the server's own histogram buckets (or the next: the
// client sees the network too), an open loop's send times pass a KS test of the Poisson process,
// 429s and a server killed mid-run are counted, not fatal; an unreachable URL and unknown keys
// exit 2, a server that does not speak OpenAI fails the run quoting it; energy over the load
// from the fake NVML. And the pieces alone: arrival times, engine names, URLs, config keys.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "bench/config_loader.h"
#include "bench/http_client.h"
#include "bench/openai_load.h"
#include "bench/openai_metrics.h"
#include "bench/openai_prompts.h"
#include "core/error.h"
#include "server_process.h"

namespace plexus::testing {
namespace {

const std::string kTokenizer = std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3";

// The largest gap between the empirical CDF of `x` and Exponential(rate)'s (Kolmogorov-Smirnov D).
double ks_exponential(std::vector<double> x, double rate) {
  std::sort(x.begin(), x.end());
  double d = 0;
  const double n = static_cast<double>(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double f = 1 - std::exp(-rate * x[i]);
    d = std::max({d, std::abs(f - static_cast<double>(i) / n), std::abs(static_cast<double>(i + 1) / n - f)});
  }
  return d;
}
// D's critical value at the 1% level (asymptotic, fine from n of about 35).
double ks_critical_1pct(std::size_t n) { return 1.628 / std::sqrt(static_cast<double>(n)); }

std::vector<double> gaps(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  std::vector<double> g;
  for (std::size_t i = 1; i < t.size(); ++i) g.push_back(t[i] - t[i - 1]);
  return g;
}

TEST(OpenAiLoad, ArrivalTimesArePoissonWithTheRateAndGammaWithTheBurstiness) {
  const std::vector<double> t = bench::arrival_times(2001, 50, 1, 7);
  EXPECT_EQ(t.front(), 0);
  const std::vector<double> g = gaps(t);
  double mean = 0;
  for (double x : g) mean += x / static_cast<double>(g.size());
  EXPECT_NEAR(mean, 1.0 / 50, 0.002);
  EXPECT_LT(ks_exponential(g, 50), ks_critical_1pct(g.size()));
  EXPECT_GT(ks_exponential(g, 25), ks_critical_1pct(g.size())) << "the test tells a wrong rate apart";
  // Burstiness 4: the same mean, a gamma of shape 4 (variance mean²/4), not an exponential.
  const std::vector<double> b = gaps(bench::arrival_times(2001, 50, 4, 7));
  double m = 0, v = 0;
  for (double x : b) m += x / static_cast<double>(b.size());
  for (double x : b) v += (x - m) * (x - m) / static_cast<double>(b.size());
  EXPECT_NEAR(m, 1.0 / 50, 0.001);
  EXPECT_NEAR(v / (m * m), 0.25, 0.04);
  EXPECT_GT(ks_exponential(b, 50), ks_critical_1pct(b.size()));
  EXPECT_EQ(bench::arrival_times(10, 50, 1, 7), bench::arrival_times(10, 50, 1, 7)) << "the seed decides";
}

TEST(OpenAiLoad, EngineNames) {
  const Json plexus = {{"data", Json::array({{{"id", "tiny"}, {"owned_by", "plexus"}}})}};
  EXPECT_EQ(bench::engine_name(plexus, "uvicorn"), "plexus");
  const Json generic = {{"data", Json::array({{{"id", "m"}, {"owned_by", "system"}}})}};
  EXPECT_EQ(bench::engine_name(generic, "llama.cpp"), "llama.cpp");
  EXPECT_EQ(bench::engine_name(generic, "uvicorn"), "openai");
  EXPECT_EQ(bench::engine_name(nullptr, ""), "openai");
  EXPECT_EQ(bench::engine_name({{"data", Json::array({{{"owned_by", "vllm"}}})}}, ""), "vllm");
}

TEST(OpenAiLoad, Urls) {
  const bench::HttpUrl u = bench::parse_http_url("http://127.0.0.1:8080/prefix/", "backend.url");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(u.base_path, "/prefix");
  EXPECT_EQ(bench::parse_http_url("http://[::1]:9/", "x").host, "::1");
  EXPECT_EQ(bench::parse_http_url("http://localhost", "x").port, 80);
  EXPECT_THROW(bench::parse_http_url("https://api.example.com", "backend.url"), InputError);
  EXPECT_THROW(bench::parse_http_url("127.0.0.1:8000", "backend.url"), InputError);
  EXPECT_THROW(bench::parse_http_url("http://h:99999", "backend.url"), InputError);
}

TEST(OpenAiLoad, GoodputAndErrors) {
  std::vector<bench::RequestRecord> r(4);
  r[0].ttft_ms = 10, r[0].e2e_ms = 100, r[0].output_tokens = 10;  // tpot 10
  r[1].ttft_ms = 50, r[1].e2e_ms = 140, r[1].output_tokens = 10;  // ttft over 20
  r[2].ttft_ms = 10, r[2].e2e_ms = 400, r[2].output_tokens = 10;  // tpot 43.3
  r[3].status = 429, r[3].error = "HTTP 429";
  bench::Slo slo;
  slo.ttft_ms = 20, slo.tpot_ms = 20;
  const Json g = bench::goodput_json(r, slo, 2.0);
  EXPECT_EQ(g["good_requests"], 1);
  EXPECT_DOUBLE_EQ(g["requests_per_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(g["fraction"].get<double>(), 0.25);
  EXPECT_TRUE(bench::goodput_json(r, {}, 2.0).is_null());
  const Json e = bench::errors_json(r);
  EXPECT_EQ(e["count"], 1);
  EXPECT_EQ(e["by_status"]["429"], 1);
  EXPECT_EQ(bench::openai_throughput_json(r, 2.0)["samples"], 3);
}

TEST(OpenAiLoad, PromptsFromADatasetShareGptAndRandomLengths) {
  TempDir dir("bench-openai-prompts");
  const auto tok = Tokenizer::load(kTokenizer);
  bench::ScenarioConfig s;
  s.max_new_tokens = 7;
  bench::OpenAiConfig o;
  s.dataset = dir / "d.jsonl";
  std::ofstream(s.dataset) << R"({"prompt": "Hello there", "output_tokens": 3})" "\n\n"
                           << R"({"ids": [1, 2, 3]})" "\n"
                           << R"({"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello, how are you today?"}]})" "\n";
  const auto r = bench::openai_requests(bench::scenario_requests(s, o, tok.get()), o, tok.get(), 4, 0);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].prompt, "Hello there");
  EXPECT_EQ(r[0].max_tokens, 3);
  EXPECT_EQ(r[0].prompt_tokens, static_cast<std::int64_t>(tok->encode("Hello there", true).size()));
  EXPECT_EQ(r[1].prompt, Json::array({1, 2, 3}));  // completions sends the ids
  EXPECT_EQ(r[1].max_tokens, 7);                   // no length given: scenario.max_tokens
  EXPECT_EQ(r[2].prompt, "Hi");
  EXPECT_EQ(r[2].max_tokens, static_cast<std::int64_t>(tok->encode("Hello, how are you today?", false).size()));
  EXPECT_EQ(r[3].prompt, r[0].prompt) << "reused in order";
  o.endpoint = "chat";
  EXPECT_TRUE(bench::scenario_requests(s, o, tok.get())[1].prompt.is_string()) << "chat: ids as text";
  EXPECT_THROW(bench::scenario_requests(s, o, nullptr), InputError) << "chat ids without a tokenizer";
  std::ofstream(s.dataset) << "{\"prompt\": \"a\"}\nnot json\n";
  try {
    bench::scenario_requests(s, o, tok.get());
    ADD_FAILURE() << "a bad line passed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("d.jsonl:2:"), std::string::npos) << e.what();
  }
  // Random lengths: uniform within [L(1-r), L(1+r)], the seed deciding.
  s.dataset.clear();
  o.random = bench::RandomLengths{100, 20, 0.5, "uniform"};
  const auto a = bench::openai_requests({}, o, tok.get(), 50, 3), b = bench::openai_requests({}, o, tok.get(), 50, 3);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_GE(a[i].prompt_tokens, 50);
    EXPECT_LE(a[i].prompt_tokens, 150);
    EXPECT_GE(a[i].max_tokens, 10);
    EXPECT_LE(a[i].max_tokens, 30);
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_TRUE(a[i].prompt.is_string());
  }
  EXPECT_TRUE(bench::scenario_requests(s, o, tok.get()).empty());
  EXPECT_THROW(bench::openai_requests({}, o, nullptr, 1, 0), InputError) << "random prompts need a tokenizer";
}

// A server on loopback that answers every request with 200 and `body` (not OpenAI's shape).
class WrongServer {
 public:
  explicit WrongServer(std::string body) : body_(std::move(body)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 16);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0 || stop_) {
          if (c >= 0) ::close(c);
          return;
        }
        char buf[65536];
        std::string got;
        while (got.find("\r\n\r\n") == std::string::npos) {  // the head; the body is small and dropped
          const ssize_t n = ::recv(c, buf, sizeof buf, 0);
          if (n <= 0) break;
          got.append(buf, static_cast<std::size_t>(n));
        }
        const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                                   std::to_string(body_.size()) + "\r\nConnection: close\r\n\r\n" + body_;
        ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
        ::close(c);
      }
    });
  }
  ~WrongServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }

 private:
  std::string body_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The suite's model and server (loading is the slow part).
struct Shared {
  TempDir dir{"bench-openai"};
  std::string model = dir / "tiny";
  std::unique_ptr<ServerProcess> server;
};
Shared* shared = nullptr;

class BenchOpenAi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("PLEXUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    ::setenv("PLEXUS_ROCM_SMI_LIBRARY", "/nonexistent/librocm_smi64.so", 1);
    shared = new Shared;
    const ProcessResult made = run_plexus("make-model " + shell_quote(shared->model) + " --tokenizer " + shell_quote(kTokenizer));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    shared->server = std::make_unique<ServerProcess>(
        shell_quote(shared->model) + " --served-model-name tiny --threads 2 --context 1024 --max-sequences 4", shared->dir);
  }
  static void TearDownTestSuite() {
    delete shared;
    shared = nullptr;
  }
  void SetUp() override {
    if (!shared->server->ok()) GTEST_SKIP() << "the server did not start (see the suite's first failure)";
  }
  std::string config(const std::string& name, const std::string& yaml) {
    const std::string path = work_ / (name + ".yaml");
    std::ofstream(path) << "name: " << name << "\n" << yaml << "output: {dir: " << out() << ", formats: [json, csv]}\n";
    return path;
  }
  std::string out() const { return work_ / "results"; }
  static std::string server_url() { return "http://127.0.0.1:" + std::to_string(shared->server->port()); }
  TempDir work_{"bench-openai-run"};
};

// The metrics text of a server, and a value in it.
std::string metrics_text(const ServerProcess& s) { return curl("GET", s.url("/metrics")).body; }
double metric(const std::string& text, const std::string& line_start) {
  const std::size_t at = text.find("\n" + line_start + " ");
  return at == std::string::npos ? 0 : std::atof(text.c_str() + at + line_start.size() + 2);
}
// A histogram's cumulative bucket counts by upper bound ("+Inf" last).
std::vector<std::pair<double, double>> buckets(const std::string& text, const std::string& name) {
  std::vector<std::pair<double, double>> out;
  const std::string head = name + "_bucket{le=\"";
  for (std::size_t at = text.find(head); at != std::string::npos; at = text.find(head, at + 1)) {
    const std::size_t q = text.find('"', at + head.size());
    const std::string le = text.substr(at + head.size(), q - at - head.size());
    out.emplace_back(le == "+Inf" ? INFINITY : std::atof(le.c_str()), std::atof(text.c_str() + text.find("} ", q) + 2));
  }
  return out;
}
// The bucket index of each observation the histogram gained between `before` and `after`, sorted.
std::vector<int> observed_buckets(const std::vector<std::pair<double, double>>& before, const std::vector<std::pair<double, double>>& after) {
  std::vector<int> idx;
  double below = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    const double cum = after[i].second - before[i].second;
    for (double k = below; k < cum; ++k) idx.push_back(static_cast<int>(i));
    below = cum;
  }
  return idx;
}
int bucket_of(const std::vector<std::pair<double, double>>& b, double seconds) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (seconds <= b[i].first) return static_cast<int>(i);
  }
  return static_cast<int>(b.size()) - 1;
}

TEST_F(BenchOpenAi, CountsAndLatenciesAgreeWithTheServersMetrics) {
  const std::string before = metrics_text(*shared->server);
  // A sweep over the clients: 2 runs of 6 requests, prompts from the config and from a dataset line.
  const std::string cfg = config("counts", "backend: {type: openai, url: " + server_url() + ", endpoint: completions, tokenizer: " +
                                               kTokenizer + "}\n"
                                               "scenario: {prompts: [\"Hello there\", \"The capital of France is\"], num_samples: 6, "
                                               "max_tokens: 6, warmup_samples: 0, concurrency: 1, slo: {ttft_ms: 60000}}\n"
                                               "monitor: {interval_ms: 20}\nsweep: {scenario.concurrency: [1, 3]}\n");
  const ProcessResult r = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::string after = metrics_text(*shared->server);
  const Json summary = read_json_file(out() + "/counts.json");
  ASSERT_EQ(summary["runs"].size(), 2u) << summary.dump();
  std::int64_t requests = 0, prompt = 0, output = 0;
  std::vector<double> ttft_s, e2e_s;
  for (const Json& run : summary["runs"]) {
    EXPECT_EQ(run["status"], "ok") << run.dump();
    EXPECT_EQ(run["engine"], "plexus");
    EXPECT_EQ(run["errors"]["count"], 0) << run["errors"].dump();
    EXPECT_EQ(run["goodput"]["good_requests"], 6);
    requests += run["throughput"]["samples"].get<std::int64_t>();
    prompt += run["throughput"]["prompt_tokens"].get<std::int64_t>();
    output += run["throughput"]["output_tokens"].get<std::int64_t>();
    for (const Json& q : run["requests"]) {
      EXPECT_EQ(q["tokens_from"], "usage");
      EXPECT_EQ(q["output_tokens"], 6);  // ignore_eos by default: every token asked for
      EXPECT_EQ(q["itl_ms"].size(), 5u);  // one event per token after the first
      ttft_s.push_back(q["ttft_ms"].get<double>() / 1000);
      e2e_s.push_back(q["e2e_ms"].get<double>() / 1000);
    }
  }
  EXPECT_EQ(summary["runs"][1]["sweep_point"]["scenario.concurrency"], 3);
  EXPECT_EQ(requests, 12);
  const std::string ok = "plexus_requests_total{endpoint=\"/v1/completions\",status=\"200\"}";
  EXPECT_EQ(metric(after, ok) - metric(before, ok), 12);
  EXPECT_EQ(metric(after, "plexus_prompt_tokens_total") - metric(before, "plexus_prompt_tokens_total"), prompt);
  EXPECT_EQ(metric(after, "plexus_generation_tokens_total") - metric(before, "plexus_generation_tokens_total"), output);
  EXPECT_EQ(output, 72);
  // The server's histograms count from a request's arrival (its last byte read); the client's
  // times also hold the connection and the request's sending. So: the client's k-th smallest TTFT
  // and E2E lie in the server's k-th smallest's bucket or the next one up, never below (no token
  // is seen before it is made); the mean extra time (from the histograms' exact sums) is at most
  // the width of the duration bucket holding the mean E2E, and the same for TTFT and E2E; TPOT,
  // where it cancels, lies in the server's bucket or a neighbour.
  std::vector<double> tpot_s;
  for (const Json& run : summary["runs"]) {
    for (const Json& q : run["requests"]) tpot_s.push_back(q["tpot_ms"].get<double>() / 1000);
  }
  std::map<std::string, double> offset;
  for (const auto& [name, client] : {std::pair{std::string("plexus_time_to_first_token_seconds"), ttft_s},
                                     std::pair{std::string("plexus_request_duration_seconds"), e2e_s},
                                     std::pair{std::string("plexus_time_per_output_token_seconds"), tpot_s}}) {
    const auto b0 = buckets(before, name), b1 = buckets(after, name);
    ASSERT_FALSE(b1.empty()) << name;
    const std::vector<int> server = observed_buckets(b0, b1);
    ASSERT_EQ(server.size(), client.size()) << name;
    double client_sum = 0;
    for (double c : client) client_sum += c;
    offset[name] = (client_sum - (metric(after, name + "_sum") - metric(before, name + "_sum"))) / static_cast<double>(client.size());
    std::vector<double> sorted = client;
    std::sort(sorted.begin(), sorted.end());
    const bool tpot = name.find("per_output") != std::string::npos;
    for (std::size_t k = 0; k < sorted.size(); ++k) {
      const int c = bucket_of(b1, sorted[k]);
      if (tpot) EXPECT_LE(std::abs(c - server[k]), 1) << name << " #" << k << ": client " << sorted[k] << " s in bucket " << c << ", server's " << server[k];
      else {
        EXPECT_GE(c, server[k]) << name << " #" << k << ": client " << sorted[k] << " s in bucket " << c << ", server's " << server[k];
        EXPECT_LE(c, server[k] + 1) << name << " #" << k << ": client " << sorted[k] << " s in bucket " << c << ", server's " << server[k];
      }
    }
  }
  const auto dur = buckets(after, "plexus_request_duration_seconds");
  double mean_e2e = 0;
  for (double e : e2e_s) mean_e2e += e / static_cast<double>(e2e_s.size());
  const int at = bucket_of(dur, mean_e2e);
  const double width = dur[at].first - (at > 0 ? dur[at - 1].first : 0);
  EXPECT_GE(offset["plexus_time_to_first_token_seconds"], -1e-4);
  EXPECT_LE(offset["plexus_time_to_first_token_seconds"], width) << "mean e2e " << mean_e2e << " s";
  EXPECT_NEAR(offset["plexus_time_to_first_token_seconds"], offset["plexus_request_duration_seconds"], width)
      << "mean e2e " << mean_e2e << " s";
  // The CSV names the engine in every row.
  std::ifstream csv(out() + "/counts.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("name,engine,", 0), 0u) << header;
  // compare across engines: a plexus-engine column named as such.
  const ProcessResult cmp = run_plexus("bench compare " + shell_quote(out() + "/counts.json") + " " + shell_quote(out() + "/counts.json"));
  EXPECT_EQ(cmp.exit_code, 0) << cmp.err;
  EXPECT_NE(cmp.out.find("[plexus]"), std::string::npos) << cmp.out;
}

TEST_F(BenchOpenAi, OpenLoopSendTimesPassAKsTestOfThePoissonProcess) {
  // 60 sends at 20/s (3 s). The plan of seed 5 has D = 0.062 against Exponential(20) (critical
  // 0.212): room for the few milliseconds a loaded host adds to a send.
  constexpr double kRate = 20;
  // The URL as an OpenAI client's base URL (…/v1): the same server.
  const std::string cfg = config("open", "backend: {type: openai, url: " + server_url() + "/v1, endpoint: chat, tokenizer: " + kTokenizer +
                                             "}\nscenario: {random: {input_tokens: 8, output_tokens: 2}, num_samples: 60, "
                                             "warmup_samples: 1, request_rate: 20, seed: 5}\nmonitor: {interval_ms: 50}\n");
  const ProcessResult r = run_plexus("bench " + shell_quote(cfg) + " --quiet --set output.formats=[json,html]");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const Json j = read_json_file(out() + "/open.json");
  std::ifstream page(out() + "/open.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("engine <b>plexus</b> at <code>" + server_url() + "/v1</code>"), std::string::npos) << html;
  EXPECT_NE(html.find("open loop at <b>20"), std::string::npos);
  EXPECT_EQ(html.find("Plan and devices"), std::string::npos) << "the server's plan is not ours to show";
  ASSERT_EQ(j["requests"].size(), 60u);
  EXPECT_EQ(j["errors"]["count"], 0) << j["errors"].dump();
  std::vector<double> sent;
  const std::vector<double> planned = bench::arrival_times(60, kRate, 1, 5);  // scenario.seed's plan
  for (std::size_t i = 0; i < 60; ++i) {
    const Json& q = j["requests"][i];
    sent.push_back(q["send_s"].get<double>());
    EXPECT_DOUBLE_EQ(q["scheduled_s"].get<double>(), planned[i]);
    EXPECT_GE(q["send_s"].get<double>(), planned[i]) << "never before its time";
    EXPECT_EQ(q["output_tokens"], 2);
  }
  const std::vector<double> g = gaps(sent);
  EXPECT_LT(ks_exponential(g, kRate), ks_critical_1pct(g.size()));
  EXPECT_GT(ks_exponential(g, kRate / 4), ks_critical_1pct(g.size())) << "the test tells a wrong rate apart";
  EXPECT_GT(j["latency"]["ttft_ms"]["count"].get<int>(), 0);
}

TEST_F(BenchOpenAi, TooManyRequestsAre429sCountedNotFatal) {
  // (with an API key: sent as a bearer token, never written out)
  ServerProcess small(shell_quote(shared->model) + " --threads 2 --context 1024 --max-sequences 1 --max-queue 1 --api-key sesame",
                      shared->dir);
  ASSERT_TRUE(small.ok());
  const std::string cfg = config("busy", "backend: {type: openai, url: http://127.0.0.1:" + std::to_string(small.port()) +
                                             ", api_key: sesame}\nscenario: {prompts: [\"Hi\"], num_samples: 12, max_tokens: 48, "
                                             "warmup_samples: 0, concurrency: 6}\nmonitor: {interval_ms: 50}\n");
  const ProcessResult r = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const Json j = read_json_file(out() + "/busy.json");
  EXPECT_EQ(j["status"], "ok");
  const std::int64_t rejected = j["errors"]["by_status"].value("429", 0);
  EXPECT_GT(rejected, 0) << j["errors"].dump();
  EXPECT_EQ(j["throughput"]["samples"].get<std::int64_t>() + j["errors"]["count"].get<std::int64_t>(), 12);
  EXPECT_EQ(j["throughput"]["failed_requests"], j["errors"]["count"]);
  EXPECT_EQ(j["config"]["backend"]["api_key"], "(set)");
  EXPECT_EQ(j.dump().find("sesame"), std::string::npos);
  EXPECT_EQ(j["engine"], "plexus");
  const std::string m = curl("GET", small.url("/metrics"), "", {"Authorization: Bearer sesame"}).body;
  EXPECT_EQ(metric(m, "plexus_requests_total{endpoint=\"/v1/completions\",status=\"429\"}"), rejected);
}

TEST_F(BenchOpenAi, AServerStoppedMidRunCountsErrors) {
  auto victim = std::make_unique<ServerProcess>(shell_quote(shared->model) + " --threads 2 --context 1024", shared->dir);
  ASSERT_TRUE(victim->ok());
  const std::string cfg = config("stopped", "backend: {type: openai, url: http://127.0.0.1:" + std::to_string(victim->port()) +
                                                ", timeout_s: 5}\nscenario: {prompts: [\"Hi\"], num_samples: 40, max_tokens: 2, "
                                                "warmup_samples: 0, request_rate: 20}\nmonitor: {interval_ms: 50}\n");
  ProcessResult r;
  std::thread bench([&] { r = run_plexus("bench " + shell_quote(cfg) + " --quiet"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  victim->stop(SIGKILL, 10);
  bench.join();
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const Json j = read_json_file(out() + "/stopped.json");
  EXPECT_EQ(j["requests"].size(), 40u);
  EXPECT_GT(j["throughput"]["samples"].get<int>(), 0);
  EXPECT_GT(j["errors"]["by_status"].value("no_response", 0), 0) << j["errors"].dump();
}

TEST_F(BenchOpenAi, BadInput) {
  // Nothing listens on the port: exit 2 before any load, naming the URL.
  std::string cfg = config("gone", "backend: {type: openai, url: http://127.0.0.1:1}\nscenario: {prompts: [\"Hi\"]}\n");
  ProcessResult r = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot reach http://127.0.0.1:1"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out() + "/gone.json"));
  cfg = config("tls", "backend: {type: openai, url: \"https://127.0.0.1:1\"}\nscenario: {prompts: [\"Hi\"]}\n");
  r = run_plexus("bench " + shell_quote(cfg));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("plain http only"), std::string::npos) << r.err;
  cfg = config("keys", "backend: {type: openai, url: " + server_url() + ", modle: tiny}\nscenario: {prompts: [\"Hi\"]}\n");
  r = run_plexus("bench " + shell_quote(cfg));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("backend.modle: unknown key (did you mean 'model'?)"), std::string::npos) << r.err;
  cfg = config("seqs", "backend: {type: openai, url: " + server_url() + "}\nscenario: {prompts: [\"Hi\"], max_sequences: 4}\n");
  r = run_plexus("bench " + shell_quote(cfg));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("scenario.concurrency"), std::string::npos) << r.err;
  // A server answering in another shape: the run is recorded as failed, the answer quoted.
  WrongServer wrong(R"({"hello": "not openai"})");
  cfg = config("wrong", "backend: {type: openai, url: http://127.0.0.1:" + std::to_string(wrong.port()) +
                            ", model: m}\nscenario: {prompts: [\"Hi\"], warmup_samples: 0}\n");
  r = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const Json j = read_json_file(out() + "/wrong.json");
  EXPECT_EQ(j["status"], "failed");
  EXPECT_NE(j["error"].get<std::string>().find(R"({"hello": "not openai"})"), std::string::npos) << j["error"];
}

// Energy over the load window from the fake NVML (one GPU of constant power): its counter's delta,
// the idle power before the load, and J per request and token of it.
TEST_F(BenchOpenAi, EnergyOverTheLoadFromTheFakeGpu) {
  constexpr double kWatts = 150, kIntervalS = 0.01, kSlack = 2 * kIntervalS * kWatts;
  const std::string script = work_ / "gpu.json";
  std::ofstream(script) << R"({"devices": [{"name": "Fake H100", "power_w": 150, "utilization": 37,
                               "memory_total_mb": 81920, "memory_used_mb": 1024}]})";
  const std::string cfg = config("energy", "backend: {type: openai, url: " + server_url() +
                                               "}\nscenario: {prompts: [\"Hello\"], num_samples: 4, max_tokens: 8, concurrency: 2, "
                                               "warmup_samples: 0}\nmonitor: {interval_ms: 10}\n");
  ::setenv("PLEXUS_NVML_LIBRARY", FAKE_NVML_LIBRARY, 1);
  ::setenv("PLEXUS_FAKE_NVML_SCRIPT", script.c_str(), 1);
  const ProcessResult r = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  ::setenv("PLEXUS_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = read_json_file(out() + "/energy.json");
  const Json& e = j["energy"];
  const Json& gpu = e["devices"]["gpu_0"];
  EXPECT_EQ(gpu["method"], "counter") << e.dump();
  EXPECT_NEAR(gpu["energy_j"].get<double>(), kWatts * e["duration_s"].get<double>(), kSlack) << e.dump();
  EXPECT_NEAR(gpu["idle_power_w"].get<double>(), kWatts, 0.01) << e.dump();
  EXPECT_NEAR(e["idle_baseline_s"].get<double>(), 0.05, 1e-9) << e.dump();
  EXPECT_GE(e["duration_s"].get<double>(), j["throughput"]["wall_s"].get<double>() - 1e-3) << "the window covers the load";
  ASSERT_EQ(e["requests"], 4);
  EXPECT_NEAR(e["j_per_request"].get<double>(), e["total_j"].get<double>() / 4, 1e-9);
  EXPECT_NEAR(e["j_per_token"].get<double>(), e["total_j"].get<double>() / 32, 1e-9);
  EXPECT_TRUE(e["server_energy_j"].is_null()) << "this server has no energy source: " << e.dump();
}

// A plexus server on the fake GPU shares its energy out to requests (usage.energy_j): recorded per
// request and summed beside the monitor's.
TEST_F(BenchOpenAi, PlexusServersEnergyPerResponseBeside) {
  const std::string script = work_ / "gpu.json";
  std::ofstream(script) << R"({"devices": [{"name": "Fake H100", "power_w": 150, "utilization": 37,
                               "memory_total_mb": 81920, "memory_used_mb": 1024}]})";
  ServerProcess powered(shell_quote(shared->model) + " --threads 2 --context 1024", shared->dir, 120,
                        "PLEXUS_NVML_LIBRARY=" + shell_quote(FAKE_NVML_LIBRARY) + " PLEXUS_FAKE_NVML_SCRIPT=" + shell_quote(script));
  ASSERT_TRUE(powered.ok());
  const std::string cfg = config("beside", "backend: {type: openai, url: http://127.0.0.1:" + std::to_string(powered.port()) +
                                               "}\nscenario: {prompts: [\"Hello\"], num_samples: 3, max_tokens: 8, warmup_samples: 0}\n"
                                               "monitor: {interval_ms: 20}\n");
  const ProcessResult r = run_plexus("bench " + shell_quote(cfg) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = read_json_file(out() + "/beside.json");
  double sum = 0;
  for (const Json& q : j["requests"]) {
    ASSERT_TRUE(q["energy_j"].is_number()) << q.dump();
    EXPECT_GT(q["energy_j"].get<double>(), 0);
    sum += q["energy_j"].get<double>();
  }
  EXPECT_NEAR(j["energy"]["server_energy_j"].get<double>(), sum, 1e-9);
  EXPECT_NEAR(j["energy"]["server_j_per_token"].get<double>(), sum / 24, 1e-9);
}

}  // namespace
}  // namespace plexus::testing
