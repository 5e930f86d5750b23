// Streamed OpenAI requests, timed per event, sent in a closed or open loop (bench/openai_load.h).
#include "bench/openai_load.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

namespace plexus::bench {

namespace {

std::string quote_text(const std::string& text, std::size_t most = 300) {
  std::string s = text.substr(0, most);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return "'" + s + (text.size() > most ? "...'" : "'");
}

// The request body: streamed, usage asked for, greedy unless a temperature is given.
std::string request_body(const LoadTarget& t, const LoadRequest& r) {
  Json body = {{"model", t.model}, {"max_tokens", r.max_tokens}, {"stream", true},
               {"stream_options", {{"include_usage", true}}}, {"temperature", t.temperature}};
  if (t.ignore_eos) body["ignore_eos"] = true;
  if (t.config.endpoint == "chat") {
    body["messages"] = Json::array({{{"role", "user"}, {"content", r.prompt}}});
  } else {
    body["prompt"] = r.prompt;
  }
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Reads the server-sent events of one streamed response as they arrive.
class StreamReader {
 public:
  StreamReader(RequestRecord& rec, bool chat, double send_s) : rec_(rec), chat_(chat), send_s_(send_s) {}

  void feed(std::string_view piece) {
    buf_.append(piece);
    std::size_t eol;
    while ((eol = buf_.find('\n')) != std::string::npos) {
      std::string line = buf_.substr(0, eol);
      buf_.erase(0, eol + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      line_(line);
    }
  }
  bool done() const { return done_; }
  double done_s() const { return done_s_; }  // when data: [DONE] came (the stream's end)
  int events() const { return events_; }
  int content_events() const { return content_events_; }

 private:
  void line_(const std::string& line) {
    if (line.rfind("data:", 0) != 0 || !rec_.error.empty()) return;  // comments, event names, blank separators
    std::string data = line.substr(5);
    if (!data.empty() && data[0] == ' ') data.erase(0, 1);
    if (data == "[DONE]") {
      done_ = true;
      done_s_ = steady_now_s();
      return;
    }
    ++events_;
    const double now = steady_now_s();
    Json j = Json::parse(data, nullptr, false);
    if (j.is_object() && j.contains("error")) {
      rec_.error = "error event in the stream: " + quote_text(data);
      return;
    }
    if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array()) {
      rec_.bad_shape = true;
      rec_.error = "not an OpenAI stream event (no \"choices\" list): " + quote_text(data);
      return;
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      const Json& u = j["usage"];
      if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer()) rec_.prompt_tokens = u["prompt_tokens"].get<std::int64_t>();
      if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
        rec_.output_tokens = u["completion_tokens"].get<std::int64_t>();
        rec_.tokens_from = "usage";
      }
      if (u.contains("energy_j") && u["energy_j"].is_number()) rec_.energy_j = u["energy_j"].get<double>();
    }
    std::string text;
    for (const Json& c : j["choices"]) {
      if (!c.is_object()) continue;
      const Json* piece = nullptr;
      if (chat_ && c.contains("delta") && c["delta"].is_object()) {
        const Json& d = c["delta"];
        if (d.contains("content") && d["content"].is_string()) piece = &d["content"];
        else if (d.contains("reasoning_content") && d["reasoning_content"].is_string()) piece = &d["reasoning_content"];
      } else if (!chat_ && c.contains("text") && c["text"].is_string()) {
        piece = &c["text"];
      }
      if (piece) text += piece->get<std::string>();
    }
    if (text.empty()) return;
    ++content_events_;
    const double ms = (now - send_s_) * 1000;
    if (!rec_.ttft_ms) rec_.ttft_ms = ms;
    else rec_.itl_ms.push_back(ms - last_ms_);
    last_ms_ = ms;
    rec_.text += text;
  }

  RequestRecord& rec_;
  bool chat_;
  double send_s_;
  std::string buf_;
  bool done_ = false;
  double done_s_ = 0;
  int events_ = 0, content_events_ = 0;
  double last_ms_ = 0;
};

}  // namespace

double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<double> arrival_times(std::size_t n, double rate, double burstiness, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  std::vector<double> t;
  double at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) at += gap(rng);
    t.push_back(at);
  }
  return t;
}

RequestRecord send_request(const LoadTarget& t, const LoadRequest& r, double load_t0_s) {
  RequestRecord rec;
  const bool chat = t.config.endpoint == "chat";
  HttpCall call;
  call.method = "POST";
  call.path = chat ? "/v1/chat/completions" : "/v1/completions";
  call.body = request_body(t, r);
  call.timeout_s = t.config.timeout_s;
  if (!t.config.api_key.empty()) call.headers.push_back("Authorization: Bearer " + t.config.api_key);
  const double send = steady_now_s();
  rec.send_s = send - load_t0_s;
  rec.scheduled_s = rec.send_s;
  StreamReader reader(rec, chat, send);
  call.on_data = [&](std::string_view piece) { reader.feed(piece); };  // an error body's events are dropped below
  const HttpReply reply = http_request(t.url, call);
  // The end: data: [DONE], not the connection's close after it.
  rec.e2e_ms = ((reader.done() ? reader.done_s() : steady_now_s()) - send) * 1000;
  rec.status = reply.status;
  if (reply.status == 0) {
    rec.error = reply.error.empty() ? "no response" : reply.error;
    return rec;
  }
  if (reply.status != 200) {
    rec.error = "HTTP " + std::to_string(reply.status) + ": " + quote_text(reply.body, 200);
    rec.bad_shape = false;
    rec.ttft_ms.reset();
    rec.itl_ms.clear();
    rec.text.clear();
    return rec;
  }
  if (!rec.error.empty()) return rec;  // a bad event or an error event
  if (reader.events() == 0) {
    rec.bad_shape = true;
    rec.error = "answered 200 without server-sent \"data:\" events: " + quote_text(reply.body);
    return rec;
  }
  if (!reader.done()) {
    rec.error = "the stream ended without data: [DONE]";
    return rec;
  }
  if (rec.prompt_tokens < 0) rec.prompt_tokens = r.prompt_tokens;
  if (rec.output_tokens < 0) {
    if (t.tokenizer) {
      rec.output_tokens = static_cast<std::int64_t>(t.tokenizer->encode(rec.text, false).size());
      rec.tokens_from = "tokenizer";
    } else {
      rec.output_tokens = reader.content_events();
      rec.tokens_from = "events";
    }
  }
  return rec;
}

std::vector<RequestRecord> run_load(const LoadTarget& t, const std::vector<LoadRequest>& requests, std::uint64_t seed,
                                    const std::function<bool()>& stop) {
  std::vector<RequestRecord> records(requests.size());
  std::vector<char> sent(requests.size(), 0);
  auto stopping = [&] { return stop && stop(); };
  const double t0 = steady_now_s();
  if (!t.config.request_rate) {  // closed loop: each client sends its next request when the last ends
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> clients;
    const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(t.config.concurrency), requests.size());
    for (std::size_t c = 0; c < n; ++c) {
      clients.emplace_back([&] {
        for (std::size_t i; !stopping() && (i = next++) < requests.size();) {
          records[i] = send_request(t, requests[i], t0);
          sent[i] = 1;
        }
      });
    }
    for (std::thread& c : clients) c.join();
  } else {  // open loop: each request at its planned time, on its own thread
    const std::vector<double> at = arrival_times(requests.size(), *t.config.request_rate, t.config.burstiness, seed);
    std::mutex m;
    std::condition_variable cv;
    std::size_t in_flight = 0;
    const std::size_t limit = t.config.concurrency > 0 ? static_cast<std::size_t>(t.config.concurrency) : SIZE_MAX;
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < requests.size() && !stopping(); ++i) {
      const double wait = t0 + at[i] - steady_now_s();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return in_flight < limit; });
        ++in_flight;
      }
      threads.emplace_back([&, i] {
        records[i] = send_request(t, requests[i], t0);
        records[i].scheduled_s = at[i];
        sent[i] = 1;
        {
          std::lock_guard lock(m);
          --in_flight;
        }
        cv.notify_all();
      });
    }
    for (std::thread& th : threads) th.join();
  }
  std::vector<RequestRecord> out;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (sent[i]) out.push_back(std::move(records[i]));
  }
  return out;
}

}  // namespace plexus::bench
