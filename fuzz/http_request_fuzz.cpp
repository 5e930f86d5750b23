// libFuzzer target for plexus serve's HTTP layer: the input is what a client sends on one
// connection (after one byte of settings). It is parsed whole and again in pieces, which must
// give the same requests and the same fault; every request parsed is then routed through the
// API (ApiRouter over an OpenAiApi with a byte-level tokenizer, a chat template and a scripted
// generation) and must be answered exactly once: a status from 100 to 599, an OpenAI-shaped
// error body for every refusal (but /health's 503 {"status"}), a stream that ends with [DONE].
// Nothing may escape.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>

#include "core/error.h"
#include "fuzz_util.h"
#include "serve/api_router.h"
#include "serve/http/request_parser.h"

namespace {

using namespace plexus;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "http_request_fuzz: %s\n", what);
  std::abort();
}

// A request's answer, recorded.
class RecordingExchange : public HttpExchange {
 public:
  explicit RecordingExchange(const HttpRequest& r) : request_(r) {}
  const HttpRequest& request() const override { return request_; }
  void respond(HttpResponse r) override {
    ++answers;
    response = std::move(r);
  }
  bool begin_stream(int status, const std::string&, const std::vector<std::pair<std::string, std::string>>&) override {
    ++answers;
    streamed = true;
    response.status = status;
    return true;
  }
  bool write(std::string_view data) override {
    check(streamed, "write() before begin_stream()");
    stream.append(data);
    return true;
  }
  bool client_alive() override { return true; }

  int answers = 0;
  bool streamed = false;
  HttpResponse response;
  std::string stream;

 private:
  const HttpRequest& request_;
};

// Up to four tokens echoing the prompt, then the finish.
class ScriptedStream : public RequestStream {
 public:
  explicit ScriptedStream(const ServeRequest& r) {
    const std::int64_t n = std::min<std::int64_t>(r.max_tokens, 4);
    for (std::int64_t i = 0; i < n; ++i) {
      TokenEvent t;
      t.id = r.prompt[static_cast<std::size_t>(i) % r.prompt.size()];
      if (r.top_logprobs >= 0) {
        t.logprob = -0.25f;
        for (int k = 0; k < r.top_logprobs; ++k) t.top.emplace_back(k, -1.0f - static_cast<float>(k));
      }
      events_.emplace_back(t);
    }
    FinishEvent f;
    f.reason = FinishReason::kLength;
    f.prompt_tokens = static_cast<std::int64_t>(r.prompt.size());
    f.completion_tokens = n;
    events_.emplace_back(f);
  }
  std::optional<Event> next(std::chrono::milliseconds) override {
    if (events_.empty()) return std::nullopt;
    Event e = events_.front();
    events_.pop_front();
    return e;
  }
  void cancel() override {}

 private:
  std::deque<Event> events_;
};

struct Served {
  Served() {
    tokenizer = Tokenizer::load(std::string(PLEXUS_FUZZ_DIR) + "/corpus/tokenizer_json/seed_gpt2_byte_level");
    chat_template.emplace("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}", ChatTemplateTokens{});
    model.name = "tiny";
    model.max_model_len = 64;
    model.vocab_size = tokenizer->vocab_size();
    model.tokenizer = tokenizer.get();
    model.chat_template = &*chat_template;
    model.submit = [](ServeRequest r) -> std::shared_ptr<RequestStream> { return std::make_shared<ScriptedStream>(r); };
  }
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<ChatTemplate> chat_template;
  ServedModel model;
};

void check_same(const ParsedStream& a, const ParsedStream& b) {
  check(a.error.status == b.error.status, "parsed in pieces: another fault than parsed whole");
  check(a.requests.size() == b.requests.size(), "parsed in pieces: other requests than parsed whole");
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    const HttpRequest &x = a.requests[i], &y = b.requests[i];
    check(x.method == y.method && x.target == y.target && x.path == y.path && x.headers == y.headers && x.body == y.body &&
              x.keep_alive == y.keep_alive && x.framed == y.framed,
          "parsed in pieces: a request differs from the one parsed whole");
  }
}

// The same bytes fed `piece` at a time, as a connection reading them in parts would.
ParsedStream parse_in_pieces(const std::string& bytes, std::size_t piece, const HttpLimits& limits) {
  ParsedStream out;
  RequestParser parser(limits);
  std::string in;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    in.append(bytes, at, piece);
    for (;;) {
      const RequestParser::State s = parser.parse(in);
      if (s == RequestParser::State::kComplete) {
        out.requests.push_back(parser.take());
        continue;
      }
      if (s == RequestParser::State::kError) {
        out.error = parser.error();
        return out;
      }
      break;
    }
  }
  out.incomplete = parser.started();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Served served;
  if (size == 0) return 0;
  const std::uint8_t settings = data[0];
  const std::string bytes = plexus::fuzz::text_of(data + 1, size - 1);
  HttpLimits limits;
  limits.max_body = (settings & 1) ? 64 : 4096;
  limits.max_header_bytes = 2048;
  limits.max_request_line = 512;
  limits.max_headers = 16;

  const ParsedStream whole = parse_requests(bytes, limits);
  check(whole.error.status == 0 || (whole.error.status >= 400 && whole.error.status <= 505 && !whole.error.message.empty()),
        "a fault without a 4xx/5xx status and a message");
  check_same(whole, parse_in_pieces(bytes, 1 + (settings >> 5), limits));

  Metrics metrics;
  ApiRouter router((settings & 2) ? "key" : "", metrics);
  OpenAiApi api(served.model, &metrics);
  if (!(settings & 4)) router.set_ready(&api, [] { return MetricsSnapshot{}; });
  for (const HttpRequest& request : whole.requests) {
    check(!request.method.empty() && !request.path.empty(), "a request without a method or path");
    check(request.body.size() <= limits.max_body, "a body over the limit");
    RecordingExchange ex(request);
    router.handle(ex);
    check(ex.answers == 1, "a request answered other than once");
    const int status = ex.response.status;
    check(status >= 100 && status <= 599, "a status outside 100..599");
    if (ex.streamed) {
      check(ex.stream.size() >= 14 && ex.stream.compare(ex.stream.size() - 14, 14, "data: [DONE]\n\n") == 0,
            "a stream that does not end with data: [DONE]");
    } else if (status >= 400 && !(request.path == "/health" && status == 503)) {  // /health: {"status": ...}
      const Json j = Json::parse(ex.response.body, nullptr, /*allow_exceptions=*/false);
      check(j.is_object() && j.contains("error") && j["error"]["message"].is_string() && j["error"]["type"].is_string(),
            "an error without an OpenAI-shaped body");
    }
  }
  if (whole.error.status) {
    const HttpResponse r = router.error_page(whole.error.status, whole.error.message, "");
    check(r.status == whole.error.status && Json::parse(r.body, nullptr, false).contains("error"), "an error page without its error");
  }
  return 0;
}
