// The API layer without HTTP or a scheduler: request parsing and checking, response and chunk
// shapes, UTF-8-safe text with stop strings, log-probabilities, Prometheus output, and the
// OpenAiApi run against scripted request streams.
#include <gtest/gtest.h>

#include <functional>

#include "fake_stream.h"
#include "serve/api_error.h"
#include "serve/completion_text.h"
#include "serve/metrics.h"
#include "serve/openai_api.h"
#include "serve/openai_request.h"
#include "serve/openai_response.h"
#include "structured/grammar_cache.h"
#include "structured/vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace plexus {
namespace {

const Tokenizer& llama3() {
  static std::unique_ptr<Tokenizer> tok = Tokenizer::load(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3");
  return *tok;
}

// The ApiError a call throws (fails the test when it throws none).
ApiError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError thrown";
  return ApiError(0, "", "");
}

TEST(ParseCompletion, DefaultsFollowOpenAi) {
  const ApiRequest r = parse_completion_request(Json::parse(R"({"prompt": "hi", "model": "m"})"));
  EXPECT_EQ(r.prompt_text, "hi");
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_FALSE(r.sampling.greedy);
  EXPECT_DOUBLE_EQ(r.sampling.temperature, 1.0);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.logprobs, -1);
  EXPECT_TRUE(r.stop.empty());
}

TEST(ParseCompletion, ReadsEveryField) {
  const ApiRequest r = parse_completion_request(Json::parse(
      R"({"prompt": [[5, 6, 7]], "max_tokens": 9, "temperature": 0, "top_p": 0.5, "top_k": 7, "seed": 42,
          "stop": ["a", "bc"], "stream": true, "stream_options": {"include_usage": true}, "logprobs": 3, "n": 1,
          "echo": false, "ignore_eos": true})"));
  EXPECT_EQ(r.prompt_ids, (std::vector<std::int32_t>{5, 6, 7}));
  EXPECT_FALSE(r.prompt_text);
  EXPECT_EQ(r.max_tokens, 9);
  EXPECT_TRUE(r.sampling.greedy);
  EXPECT_DOUBLE_EQ(r.sampling.top_p, 0.5);
  EXPECT_EQ(r.sampling.top_k, 7);
  EXPECT_EQ(r.sampling.seed, 42u);
  EXPECT_TRUE(r.seed_given);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.stream && r.include_usage && r.ignore_eos);
  EXPECT_EQ(r.logprobs, 3);
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.echo);
  EXPECT_EQ(parse_completion_request(Json::parse(R"({"prompt": ["x"], "stop": "end", "top_k": -1})")).stop,
            std::vector<std::string>{"end"});
}

TEST(ParseCompletion, ReadsEverySamplingFieldOfVllm) {
  const ApiRequest r = parse_completion_request(Json::parse(
      R"({"prompt": "x", "n": 4, "best_of": 4, "presence_penalty": -1.5, "frequency_penalty": 2, "repetition_penalty": 1.2,
          "logit_bias": {"7": -100, "12": 3.5}, "min_p": 0.1, "stop_token_ids": [3, 9], "echo": true, "temperature": 0.7})"));
  EXPECT_EQ(r.n, 4);
  EXPECT_DOUBLE_EQ(r.sampling.presence_penalty, -1.5);
  EXPECT_DOUBLE_EQ(r.sampling.frequency_penalty, 2);
  EXPECT_DOUBLE_EQ(r.sampling.repetition_penalty, 1.2);
  EXPECT_DOUBLE_EQ(r.sampling.min_p, 0.1);
  auto bias = r.sampling.logit_bias;
  std::sort(bias.begin(), bias.end());
  EXPECT_EQ(bias, (std::vector<std::pair<std::int32_t, float>>{{7, -100.0f}, {12, 3.5f}}));
  EXPECT_EQ(r.stop_token_ids, (std::vector<std::int64_t>{3, 9}));
  EXPECT_TRUE(r.echo);
  const ApiRequest c = parse_chat_request(Json::parse(
      R"({"messages": [{"role": "user", "content": "hi"}], "n": 2, "presence_penalty": 0.5, "logit_bias": {"1": 1}})"));
  EXPECT_EQ(c.n, 2);
  EXPECT_DOUBLE_EQ(c.sampling.presence_penalty, 0.5);
  EXPECT_EQ(c.sampling.logit_bias.size(), 1u);
}

TEST(ParseCompletion, BadValuesName400FieldAndRange) {
  struct Case {
    const char* body;
    const char* param;
    const char* mention;
  };
  const Case cases[] = {
      {R"({"prompt": "x", "max_tokens": 0})", "max_tokens", "between 1 and"},
      {R"({"prompt": "x", "max_tokens": "ten"})", "max_tokens", "integer"},
      {R"({"prompt": "x", "max_tokens": 2.5})", "max_tokens", "integer"},
      {R"({"prompt": "x", "temperature": -0.1})", "temperature", "between 0 and 100"},
      {R"({"prompt": "x", "temperature": "hot"})", "temperature", "number"},
      {R"({"prompt": "x", "top_p": 0})", "top_p", "greater than 0"},
      {R"({"prompt": "x", "top_p": 1.5})", "top_p", "at most 1"},
      {R"({"prompt": "x", "top_k": -2})", "top_k", "between 0 and"},
      {R"({"prompt": "x", "logprobs": 6})", "logprobs", "between 0 and 5"},
      {R"({"prompt": "x", "logprobs": true})", "logprobs", "between 0 and 5"},
      {R"({"prompt": "x", "n": 17})", "n", "between 1 and 16"},
      {R"({"prompt": "x", "n": 0})", "n", "between 1 and 16"},
      {R"({"prompt": "x", "n": 2, "best_of": 3})", "best_of", "equal 'n'"},
      {R"({"prompt": "x", "echo": "yes"})", "echo", "true or false"},
      {R"({"prompt": "x", "suffix": "y"})", "suffix", "fill-in-the-middle"},
      {R"({"prompt": "x", "presence_penalty": 2.5})", "presence_penalty", "between -2 and 2"},
      {R"({"prompt": "x", "frequency_penalty": -3})", "frequency_penalty", "between -2 and 2"},
      {R"({"prompt": "x", "frequency_penalty": "lots"})", "frequency_penalty", "number"},
      {R"({"prompt": "x", "repetition_penalty": 0})", "repetition_penalty", "greater than 0"},
      {R"({"prompt": "x", "repetition_penalty": -1})", "repetition_penalty", "greater than 0"},
      {R"({"prompt": "x", "min_p": 1.5})", "min_p", "between 0 and 1"},
      {R"({"prompt": "x", "logit_bias": [1]})", "logit_bias", "object"},
      {R"({"prompt": "x", "logit_bias": {"abc": 1}})", "logit_bias", "token ids"},
      {R"({"prompt": "x", "logit_bias": {"-1": 1}})", "logit_bias", "token ids"},
      {R"({"prompt": "x", "logit_bias": {"5": 101}})", "logit_bias", "between -100 and 100"},
      {R"({"prompt": "x", "logit_bias": {"5": "up"}})", "logit_bias", "between -100 and 100"},
      {R"({"prompt": "x", "stop_token_ids": [1, -1]})", "stop_token_ids", "stop_token_ids[1]"},
      {R"({"prompt": "x", "stop_token_ids": 3})", "stop_token_ids", "list of token ids"},
      {R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})", "stop", "up to 4"},
      {R"({"prompt": "x", "stop": [1]})", "stop", "list of strings"},
      {R"({"prompt": "x", "stop": ""})", "stop", "not be empty"},
      {R"({"prompt": "x", "stream": "yes"})", "stream", "true or false"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options", "stream"},
      {R"({"prompt": "x", "seed": "s"})", "seed", "integer"},
      {R"({"prompt": ""})", "prompt", "empty"},
      {R"({"prompt": []})", "prompt", "non-empty"},
      {R"({"prompt": ["a", "b"]})", "prompt", "one prompt per request"},
      {R"({"prompt": [1, -2]})", "prompt", "prompt[1]"},
      {R"({"max_tokens": 3})", "prompt", "required"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of([&] { parse_completion_request(Json::parse(c.body)); });
    EXPECT_EQ(e.status(), 400) << c.body;
    EXPECT_EQ(e.type(), "invalid_request_error") << c.body;
    EXPECT_EQ(e.param(), c.param) << c.body;
    EXPECT_NE(std::string(e.what()).find(c.mention), std::string::npos) << c.body << ": " << e.what();
  }
}

TEST(ParseChat, MessagesToolsKwargsAndMaxCompletionTokens) {
  const ApiRequest r = parse_chat_request(Json::parse(
      R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "max_completion_tokens": 7,
          "tools": [{"type": "function", "function": {"name": "f"}}], "chat_template_kwargs": {"enable_thinking": false},
          "logprobs": true, "top_logprobs": 2})"));
  EXPECT_TRUE(r.chat);
  EXPECT_EQ(r.chat_input.messages.size(), 1u);
  EXPECT_EQ(r.chat_input.tools.size(), 1u);
  EXPECT_EQ(r.chat_input.kwargs["enable_thinking"], false);
  EXPECT_TRUE(r.chat_input.add_generation_prompt);
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.logprobs, 2);
  EXPECT_FALSE(parse_chat_request(Json::parse(R"({"messages": [{"role": "user", "content": "hi"}]})")).max_tokens);
}

TEST(ParseChat, TemplateInputsKeepTheClientsKeyOrder) {
  const std::string body = R"({"messages": [{"role": "user", "content": "x", "b": 1, "a": 2}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}],
      "chat_template_kwargs": {"y": true, "x": false}})";
  ApiRequest r = parse_chat_request(parse_body(body));
  keep_key_order(r.chat_input, body);
  EXPECT_EQ(r.chat_input.messages.dump(), R"([{"role":"user","content":"x","b":1,"a":2}])");
  EXPECT_EQ(r.chat_input.tools[0]["function"]["parameters"].dump(), R"({"z":1,"a":2})");
  EXPECT_EQ(r.chat_input.kwargs.dump(), R"({"y":true,"x":false})");
}

TEST(ParseChat, TextPartsBecomeOneString) {
  const std::string body = R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]})";
  ApiRequest r = parse_chat_request(parse_body(body));
  EXPECT_EQ(r.chat_input.messages[0]["content"], "a\nb");
  keep_key_order(r.chat_input, body);
  EXPECT_EQ(r.chat_input.messages[0]["content"], "a\nb");
  const ApiError e = error_of([] {
    parse_chat_request(parse_body(R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})"));
  });
  EXPECT_EQ(e.param(), "messages");
  EXPECT_NE(std::string(e.what()).find("only text parts"), std::string::npos);
}

TEST(ParseChat, BadMessages) {
  for (const char* body : {R"({})", R"({"messages": []})", R"({"messages": "hi"})", R"({"messages": [{"content": "x"}]})",
                           R"({"messages": [{"role": "user", "content": 5}]})"}) {
    const ApiError e = error_of([&] { parse_chat_request(Json::parse(body)); });
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.param(), "messages") << body;
  }
  EXPECT_EQ(error_of([] { parse_chat_request(Json::parse(R"({"messages": [{"role": "user", "content": "x"}],
                                                              "chat_template_kwargs": 3})")); }).param(),
            "chat_template_kwargs");
}

TEST(ParseBody, MalformedJsonAndNonObjects) {
  ApiError e = error_of([] { parse_body("{\"prompt\": "); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "invalid_json");
  EXPECT_NE(std::string(e.what()).find("malformed JSON"), std::string::npos);
  EXPECT_EQ(error_of([] { parse_body("[1, 2]"); }).status(), 400);
  EXPECT_EQ(error_of([] { parse_body(std::string(100000, '[')); }).status(), 400);
  EXPECT_EQ(parse_body(R"({"a": 1})")["a"], 1);
}

TEST(ErrorJson, OpenAiShape) {
  const Json j = error_json(invalid_request("bad top_p", "top_p"));
  EXPECT_EQ(j["error"]["message"], "bad top_p");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "top_p");
  EXPECT_TRUE(j["error"]["code"].is_null());
  for (int status : {401, 404, 405, 413, 429, 500, 503}) {
    const ApiError e = error_for_status(status);
    EXPECT_EQ(e.status(), status);
    EXPECT_FALSE(std::string(e.what()).empty());
  }
  EXPECT_EQ(error_for_status(401).code(), "invalid_api_key");
}

TEST(StopMatching, LongestSuffixThatStartsAStopString) {
  EXPECT_EQ(stop_prefix_suffix("Hello", {"lo wo"}), 2u);
  EXPECT_EQ(stop_prefix_suffix("Hello", {"xyz"}), 0u);
  EXPECT_EQ(stop_prefix_suffix("abcab", {"abc"}), 2u);
  EXPECT_EQ(stop_prefix_suffix("ab", {"b!", "ab!"}), 2u);
  EXPECT_EQ(stop_prefix_suffix("abc", {"abc"}), 0u);  // a whole stop string is a match, not a prefix
}

// Pushes `text`'s tokens one by one; the pieces handed out, then what finish() gives.
std::vector<std::string> pieces(CompletionText& ct, const std::string& text) {
  std::vector<std::string> out;
  for (std::int32_t id : llama3().encode(text, false)) out.push_back(ct.push(id));
  out.push_back(ct.finish());
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x;
  return s;
}

TEST(CompletionText, WithoutStopStringsGivesTheDecodedText) {
  CompletionText ct(llama3(), {});
  const std::string text = "Hello world, how are you?";
  EXPECT_EQ(joined(pieces(ct, text)), text);
  EXPECT_FALSE(ct.stopped());
  EXPECT_EQ(ct.sent(), text.size());
}

TEST(CompletionText, StopStringAcrossTokensIsHeldBackAndCut) {
  const std::vector<std::int32_t> ids = llama3().encode("Hello world", false);
  ASSERT_EQ(ids.size(), 2u);  // "Hello", " world"
  CompletionText ct(llama3(), {"lo wo"});
  EXPECT_EQ(ct.push(ids[0]), "Hel");  // "lo" could start the stop string: held back
  EXPECT_FALSE(ct.stopped());
  EXPECT_EQ(ct.push(ids[1]), "");  // "lo wo" matched: nothing more
  EXPECT_TRUE(ct.stopped());
  EXPECT_EQ(ct.push(ids[0]), "");
  EXPECT_EQ(ct.finish(), "");
}

TEST(CompletionText, HeldTextIsReleasedWhenItCannotStop) {
  CompletionText ct(llama3(), {"Hello!"});
  const std::vector<std::string> p = pieces(ct, "Hello world");
  EXPECT_EQ(p[0], "");          // "Hello" might become "Hello!"
  EXPECT_EQ(p[1], "Hello world");  // it did not
  EXPECT_FALSE(ct.stopped());
  CompletionText at_end(llama3(), {"Hello!"});
  EXPECT_EQ(joined(pieces(at_end, "Hello")), "Hello");  // the end releases what was held
}

TEST(CompletionText, StopStringInsideOneTokenCutsThere) {
  CompletionText ct(llama3(), {"o w"});
  EXPECT_EQ(joined(pieces(ct, "Hello world again")), "Hell");
  EXPECT_TRUE(ct.stopped());
}

TEST(CompletionText, NeverHandsOutPartOfAUtf8Character) {
  const std::string text = "llamas 🦙🦙 and 日本語 ok";
  const std::vector<std::int32_t> ids = llama3().encode(text, false);
  // The text's characters span tokens somewhere (else this test would check nothing).
  bool split = false;
  for (std::size_t n = 1; n < ids.size(); ++n) {
    const std::string prefix = llama3().decode(std::span(ids.data(), n));
    split = split || prefix.find("\xEF\xBF\xBD") != std::string::npos;
  }
  ASSERT_TRUE(split);
  CompletionText ct(llama3(), {});
  std::string all;
  for (std::int32_t id : ids) {
    const std::string piece = ct.push(id);
    EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos);
    // Every piece is whole characters: it never ends inside a multi-byte sequence.
    if (!piece.empty()) {
      std::size_t i = piece.size() - 1, back = 0;
      while (i > 0 && (static_cast<unsigned char>(piece[i]) & 0xC0) == 0x80) --i, ++back;
      const auto lead = static_cast<unsigned char>(piece[i]);
      const std::size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      EXPECT_EQ(back + 1, len) << piece;
    }
    all += piece;
  }
  all += ct.finish();
  EXPECT_EQ(all, text);
}

TEST(Responses, CompletionAndChatShapes) {
  const ResponseHeader h{"cmpl-1", 100, "m", false};
  const Json usage = usage_json(3, 2, 0.25, 1.5);
  Json j = completion_response(h, {{"hi", "length", nullptr, nullptr}}, usage);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"], "cmpl-1");
  EXPECT_EQ(j["created"], 100);
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["choices"][0]["text"], "hi");
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["total_tokens"], 5);
  EXPECT_EQ(j["usage"]["energy_j"], 1.5);
  EXPECT_EQ(j["usage"]["time_s"], 0.25);
  EXPECT_TRUE(usage_json(1, 1, 0, std::nullopt)["energy_j"].is_null());
  const ResponseHeader c{"chatcmpl-1", 100, "m", true};
  j = completion_response(c, {{"yo", "stop", nullptr, nullptr}}, usage);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"], (Json{{"role", "assistant"}, {"content", "yo"}}));
}

TEST(Responses, ChunksAndServerSentEvents) {
  const ResponseHeader c{"chatcmpl-1", 100, "m", true};
  Json first = completion_chunk(c, "", "", nullptr, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], (Json{{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(completion_chunk(c, "x", "", nullptr)["choices"][0]["delta"], (Json{{"content", "x"}}));
  EXPECT_EQ(completion_chunk(c, "", "stop", nullptr)["choices"][0]["delta"], Json::object());
  const ResponseHeader t{"cmpl-1", 100, "m", false};
  EXPECT_EQ(completion_chunk(t, "x", "", nullptr)["object"], "text_completion");
  const Json u = usage_chunk(c, usage_json(1, 2, 0, std::nullopt));
  EXPECT_TRUE(u["choices"].is_array() && u["choices"].empty());
  EXPECT_EQ(u["usage"]["completion_tokens"], 2);
  EXPECT_EQ(sse_event(Json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(std::string(kSseDone), "data: [DONE]\n\n");
  EXPECT_EQ(new_completion_id(true).rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(new_completion_id(false).rfind("cmpl-", 0), 0u);
  EXPECT_NE(new_completion_id(false), new_completion_id(false));
}

TEST(Logprobs, LegacyCompletionShapeAndChatShape) {
  TokenEvent t;
  t.id = llama3().encode("Hello", false)[0];
  t.logprob = -0.25f;
  t.top = {{t.id, -0.25f}};
  LogprobsBuilder legacy(llama3(), false);
  legacy.add(t, 0);
  legacy.add(t, 5);
  const Json j = legacy.take();
  EXPECT_EQ(j["tokens"], (Json{"Hello", "Hello"}));
  EXPECT_EQ(j["token_logprobs"][1], -0.25);
  EXPECT_EQ(j["top_logprobs"][0]["Hello"], -0.25);
  EXPECT_EQ(j["text_offset"], (Json{0, 5}));
  EXPECT_TRUE(legacy.empty());
  LogprobsBuilder chat(llama3(), true);
  chat.add(t, 0);
  const Json c = chat.take();
  EXPECT_EQ(c["content"][0]["token"], "Hello");
  EXPECT_EQ(c["content"][0]["logprob"], -0.25);
  EXPECT_EQ(c["content"][0]["bytes"], (Json{72, 101, 108, 108, 111}));
  EXPECT_EQ(c["content"][0]["top_logprobs"][0]["token"], "Hello");
}

TEST(Metrics, PrometheusTextExposition) {
  Metrics m;
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 400);
  m.record_generation(10, 5, 0.05, 0.45);
  MetricsSnapshot s;
  SchedulerStats st;
  st.running = 2;
  st.waiting = 1;
  st.kv_used_tokens = 50;
  st.kv_budget_tokens = 200;
  s.scheduler = st;
  DeviceEnergy gpu, host;
  gpu.key = "0", gpu.name = "GPU \"A\"", gpu.power_w = 120.5, gpu.energy_j = 30.0;
  host.key = "cpu", host.name = "host";
  s.devices = {gpu, host};
  s.measured_j = 40;
  s.attributed_j = 10;
  s.resident_bytes = 4096;
  const std::string text = m.render(s);
  auto has = [&](const std::string& line) { return text.find(line) != std::string::npos; };
  EXPECT_TRUE(has("# TYPE plexus_requests_total counter\n"));
  EXPECT_TRUE(has("plexus_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"));
  EXPECT_TRUE(has("plexus_requests_total{endpoint=\"/v1/completions\",status=\"400\"} 1\n"));
  EXPECT_TRUE(has("plexus_prompt_tokens_total 10\n"));
  EXPECT_TRUE(has("plexus_generation_tokens_total 5\n"));
  EXPECT_TRUE(has("# TYPE plexus_time_to_first_token_seconds histogram\n"));
  EXPECT_TRUE(has("plexus_time_to_first_token_seconds_bucket{le=\"0.04\"} 0\n"));
  EXPECT_TRUE(has("plexus_time_to_first_token_seconds_bucket{le=\"0.06\"} 1\n"));
  EXPECT_TRUE(has("plexus_time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\n"));
  EXPECT_TRUE(has("plexus_time_to_first_token_seconds_count 1\n"));
  EXPECT_TRUE(has("plexus_time_per_output_token_seconds_bucket{le=\"0.075\"} 0\n"));  // (0.45 - 0.05) / 4 = 0.1
  EXPECT_TRUE(has("plexus_time_per_output_token_seconds_bucket{le=\"0.15\"} 1\n"));
  EXPECT_TRUE(has("plexus_requests_running 2\n"));
  EXPECT_TRUE(has("plexus_requests_waiting 1\n"));
  EXPECT_TRUE(has("plexus_kv_cache_usage_ratio 0.25\n"));
  EXPECT_TRUE(has("plexus_device_power_watts{device=\"0\",name=\"GPU \\\"A\\\"\"} 120.5\n"));
  EXPECT_TRUE(has("plexus_device_energy_joules{device=\"0\",name=\"GPU \\\"A\\\"\"} 30\n"));
  EXPECT_FALSE(has("device=\"cpu\""));  // no readings: no samples
  EXPECT_TRUE(has("plexus_energy_joules_per_token 2\n"));
  EXPECT_TRUE(has("plexus_process_resident_memory_bytes 4096\n"));
  EXPECT_GT(process_resident_bytes().value_or(0), 0);
  // Every sample line belongs to a declared metric.
  std::istringstream lines(text);
  std::string line, declared;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) declared = line.substr(7, line.find(' ', 7) - 7);
    if (line.empty() || line[0] == '#') continue;
    EXPECT_EQ(line.rfind(declared, 0), 0u) << line;
  }
}

// An OpenAiApi over a scripted stream: the model has the llama3 tokenizer, no chat template.
struct ApiFixture : ::testing::Test {
  ServedModel model;
  Metrics metrics;
  std::shared_ptr<testing::FakeStream> stream;
  ServeRequest submitted;
  void SetUp() override {
    model.name = "tiny";
    model.max_model_len = 64;
    model.vocab_size = llama3().vocab_size();
    model.tokenizer = &llama3();
    model.eos_ids = {128001};
    model.submit = [this](ServeRequest r) -> std::shared_ptr<RequestStream> {
      submitted = r;
      return stream;
    };
  }
  void script(const std::string& text, FinishReason reason) {
    stream = std::make_shared<testing::FakeStream>(llama3().encode(text, false), reason);
  }
};

TEST_F(ApiFixture, CompletionWholeResponse) {
  OpenAiApi api(model, &metrics);
  script("Hello world", FinishReason::kLength);
  const PreparedRequest p = api.prepare(parse_completion_request(Json::parse(R"({"prompt": "Hi", "max_tokens": 2, "temperature": 0})")));
  EXPECT_EQ(p.serve.prompt, llama3().encode("Hi", true));
  EXPECT_EQ(p.serve.max_tokens, 2);
  EXPECT_TRUE(p.serve.sampling.greedy);
  EXPECT_EQ(p.serve.stop_ids, (std::vector<std::int64_t>{128001}));
  EXPECT_EQ(p.serve.top_logprobs, -1);
  const Json j = *api.complete(p, *api.submit(p));
  EXPECT_EQ(j["choices"][0]["text"], "Hello world");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], p.serve.prompt.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(j["usage"]["energy_j"], 2.0);
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_NE(metrics.render({}).find("plexus_generation_tokens_total 2\n"), std::string::npos);
}

TEST_F(ApiFixture, StopStringCancelsAndTrims) {
  OpenAiApi api(model, nullptr);
  script("Hello world, how are you", FinishReason::kLength);
  const PreparedRequest p = api.prepare(parse_completion_request(Json::parse(R"({"prompt": "Hi", "stop": [", how"]})")));
  const Json j = *api.complete(p, *api.submit(p));
  EXPECT_EQ(j["choices"][0]["text"], "Hello world");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(stream->cancelled());  // the slot frees at the next step
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);  // "Hello", " world", ",", " how"
}

TEST_F(ApiFixture, StreamingChunksEndWithUsageAndDone) {
  OpenAiApi api(model, nullptr);
  script("Hello world", FinishReason::kStop);
  const PreparedRequest p = api.prepare(parse_completion_request(Json::parse(
      R"({"prompt": "Hi", "stream": true, "stream_options": {"include_usage": true}, "logprobs": 1})")));
  std::vector<std::string> events;
  EXPECT_TRUE(api.stream(p, *api.submit(p), [&](const std::string& s) {
    events.push_back(s);
    return true;
  }));
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), kSseDone);
  std::string text;
  Json tokens = Json::array();
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    ASSERT_EQ(events[i].rfind("data: ", 0), 0u);
    ASSERT_EQ(events[i].substr(events[i].size() - 2), "\n\n");
    const Json j = Json::parse(events[i].substr(6));
    EXPECT_EQ(j["id"], p.id);
    if (i + 2 == events.size()) {  // the usage chunk
      EXPECT_TRUE(j["choices"].empty());
      EXPECT_EQ(j["usage"]["completion_tokens"], 2);
      continue;
    }
    EXPECT_EQ(j["object"], "text_completion");
    text += j["choices"][0]["text"].get<std::string>();
    if (!j["choices"][0]["logprobs"].is_null()) {
      for (const Json& t : j["choices"][0]["logprobs"]["tokens"]) tokens.push_back(t);
    }
    EXPECT_EQ(j["choices"][0]["finish_reason"].is_null(), i + 3 != events.size()) << events[i];
  }
  EXPECT_EQ(text, "Hello world");
  EXPECT_EQ(tokens, (Json{"Hello", " world"}));
  EXPECT_EQ(submitted.top_logprobs, 1);
}

TEST_F(ApiFixture, StreamingStopsWhenTheClientGoes) {
  OpenAiApi api(model, nullptr);
  script("one two three four five", FinishReason::kLength);
  const PreparedRequest p = api.prepare(parse_completion_request(Json::parse(R"({"prompt": "Hi", "stream": true})")));
  int writes = 0;
  EXPECT_FALSE(api.stream(p, *api.submit(p), [&](const std::string&) { return ++writes < 2; }));
  EXPECT_TRUE(stream->cancelled());
}

// A non-streaming request whose client leaves: `alive` is asked while tokens keep coming (every
// 100 ms, not only when none comes), and its false cancels the request; no response.
TEST_F(ApiFixture, NonStreamingCompletionEndsWhenTheClientGoes) {
  OpenAiApi api(model, nullptr);
  std::vector<std::int32_t> ids(40, 1000);
  stream = std::make_shared<testing::FakeStream>(ids, FinishReason::kLength, std::chrono::milliseconds(10));
  const PreparedRequest p = api.prepare(parse_completion_request(Json::parse(R"({"prompt": "Hi", "max_tokens": 40})")));
  int asked = 0;
  EXPECT_FALSE(api.complete(p, *api.submit(p), [&] { return ++asked < 2; }).has_value());
  EXPECT_TRUE(stream->cancelled());
  EXPECT_EQ(asked, 2);
  // A client that stays gets the whole response.
  stream = std::make_shared<testing::FakeStream>(ids, FinishReason::kLength);
  const std::optional<Json> j = api.complete(p, *api.submit(p), [] { return true; });
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ((*j)["usage"]["completion_tokens"], 40);
}

// "n" above the server's choices (--max-sequences) is a 400 naming n, before any work.
TEST_F(ApiFixture, MoreChoicesThanTheServerRunsTogetherIs400) {
  model.max_choices = 4;
  OpenAiApi api(model, nullptr);
  EXPECT_EQ(api.prepare(parse_completion_request(Json::parse(R"({"prompt": "x", "n": 4})"))).serve.choices, 4);
  const ApiError e = error_of([&] { api.prepare(parse_completion_request(Json::parse(R"({"prompt": "x", "n": 5})"))); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "n");
  EXPECT_NE(std::string(e.what()).find("between 1 and 4"), std::string::npos) << e.what();
}

// Completions' echo with logprobs asks the scheduler for the prompt's log-probabilities.
TEST_F(ApiFixture, EchoWithLogprobsAsksForThePrompts) {
  OpenAiApi api(model, nullptr);
  EXPECT_EQ(api.prepare(parse_completion_request(Json::parse(R"({"prompt": "x", "echo": true, "logprobs": 2})"))).serve.prompt_logprobs, 2);
  EXPECT_EQ(api.prepare(parse_completion_request(Json::parse(R"({"prompt": "x", "logprobs": 2})"))).serve.prompt_logprobs, -1);
  EXPECT_EQ(api.prepare(parse_completion_request(Json::parse(R"({"prompt": "x", "echo": true})"))).serve.prompt_logprobs, -1);
  // max_tokens 0 with echo (as vLLM: the prompt alone, scored with logprobs); without echo, 400.
  EXPECT_EQ(api.prepare(parse_completion_request(Json::parse(R"({"prompt": "x", "echo": true, "logprobs": 1, "max_tokens": 0})")))
                .serve.max_tokens,
            0);
  const ApiError e = error_of([&] { parse_completion_request(Json::parse(R"({"prompt": "x", "max_tokens": 0})")); });
  EXPECT_EQ(e.param(), "max_tokens");
}

TEST_F(ApiFixture, ModelLengthVocabularyAndTemplateErrors) {
  OpenAiApi api(model, nullptr);
  ApiError e = error_of([&] { api.prepare(parse_completion_request(Json::parse(R"({"prompt": "x", "model": "other"})"))); });
  EXPECT_EQ(e.status(), 404);
  EXPECT_EQ(e.code(), "model_not_found");
  e = error_of([&] { api.prepare(parse_completion_request(Json::parse(R"({"prompt": "x", "max_tokens": 64})"))); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "context_length_exceeded");
  e = error_of([&] { api.prepare(parse_completion_request(Json::parse(R"({"prompt": [1, 999999]})"))); });
  EXPECT_EQ(e.param(), "prompt");
  e = error_of([&] { api.prepare(parse_chat_request(Json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"))); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "no_chat_template");
  // Without max_tokens a prompt of ids gets the rest of the context.
  EXPECT_EQ(api.prepare(parse_completion_request(Json::parse(R"({"prompt": [1, 2, 3], "max_tokens": null})"))).serve.max_tokens, 16);
}

// Issue 32, item 4: an 8 MB body of 270k one-letter messages was parsed whole (hundreds of MB)
// before its 400. The values are counted before parsing; messages beyond the context are refused
// before the template renders them.
TEST_F(ApiFixture, DocumentsTooLargeForTheContextAreRefusedBeforeTheWork) {
  OpenAiApi api(model, nullptr);  // context 64: 4 x 64 + 16384 values
  EXPECT_EQ(max_body_values(64), 16640u);
  std::string ids = R"({"prompt": [1)";
  for (int i = 0; i < 16640; ++i) ids += ",1";
  ApiError e = error_of([&] { api.prepare(ids + "]}", false); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "too_many_values");
  e = error_of([&] { api.detokenize(R"({"tokens": [)" + ids.substr(12) + "]}"); });
  EXPECT_EQ(e.code(), "too_many_values");
  // Commas and brackets inside strings are text, not values.
  EXPECT_NO_THROW(parse_body(R"({"prompt": ")" + std::string(20000, ',') + R"("})", 16));
  EXPECT_EQ(error_of([] { parse_body("[" + std::string(20, ',') + "]", 16); }).code(), "too_many_values");
  std::string chat = R"({"messages": [{"role": "user", "content": "a"})";
  for (int i = 0; i < 64; ++i) chat += R"(, {"role": "user", "content": "a"})";
  e = error_of([&] { api.prepare(chat + "]}", true); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "context_length_exceeded");
  EXPECT_NE(std::string(e.what()).find("65 messages"), std::string::npos) << e.what();
  e = error_of([&] { api.tokenize(chat + "]}"); });
  EXPECT_EQ(e.code(), "context_length_exceeded");
}

TEST_F(ApiFixture, SubmitErrorsMapToStatuses) {
  OpenAiApi api(model, nullptr);
  const PreparedRequest p = api.prepare(parse_completion_request(Json::parse(R"({"prompt": "x"})")));
  model.submit = [](ServeRequest) -> std::shared_ptr<RequestStream> { throw QueueFull("queue full"); };
  EXPECT_EQ(error_of([&] { api.submit(p); }).status(), 429);
  model.submit = [](ServeRequest) -> std::shared_ptr<RequestStream> { throw ShuttingDown("bye"); };
  EXPECT_EQ(error_of([&] { api.submit(p); }).status(), 503);
  model.submit = [](ServeRequest) -> std::shared_ptr<RequestStream> { throw InputError("too long"); };
  EXPECT_EQ(error_of([&] { api.submit(p); }).status(), 400);
}

TEST_F(ApiFixture, TokenizeDetokenizeRoundTrip) {
  OpenAiApi api(model, nullptr);
  const Json t = api.tokenize(R"({"prompt": "Hello world"})");
  EXPECT_EQ(t["tokens"], Json(llama3().encode("Hello world", true)));
  EXPECT_EQ(t["count"], t["tokens"].size());
  EXPECT_EQ(t["max_model_len"], 64);
  EXPECT_EQ(api.tokenize(R"({"prompt": "Hello world", "add_special_tokens": false})")["count"], 2);
  const Json d = api.detokenize(Json{{"tokens", api.tokenize(R"({"prompt": "Hello world", "add_special_tokens": false})")["tokens"]}}.dump());
  EXPECT_EQ(d["prompt"], "Hello world");
  EXPECT_EQ(error_of([&] { api.detokenize(R"({"tokens": [-1]})"); }).param(), "tokens");
  EXPECT_EQ(error_of([&] { api.tokenize("{}"); }).status(), 400);
  EXPECT_EQ(api.models()["data"][0]["id"], "tiny");
  EXPECT_EQ(api.models()["data"][0]["owned_by"], "plexus");
}

TEST(ParseCompletion, ResponseFormatAndGrammar) {
  auto parse = [](const std::string& extra) { return parse_completion_request(Json::parse(R"({"prompt": "x")" + extra + "}")); };
  EXPECT_EQ(parse("").format.kind, OutputFormat::Kind::kText);
  EXPECT_EQ(parse(R"(, "response_format": {"type": "text"})").format.kind, OutputFormat::Kind::kText);
  EXPECT_EQ(parse(R"(, "response_format": {"type": "json_object"})").format.kind, OutputFormat::Kind::kJsonObject);
  const ApiRequest s = parse(R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "integer"}}})");
  EXPECT_EQ(s.format.kind, OutputFormat::Kind::kJsonSchema);
  EXPECT_EQ(s.format.schema, Json::parse(R"({"type": "integer"})"));
  const ApiRequest g = parse(R"(, "grammar": "root ::= \"yes\" | \"no\"")");
  EXPECT_EQ(g.format.kind, OutputFormat::Kind::kGrammar);
  EXPECT_EQ(g.format.grammar, "root ::= \"yes\" | \"no\"");
  const std::pair<std::string, std::string> bad[] = {
      {R"(, "response_format": "json")", "response_format"},
      {R"(, "response_format": {"type": "xml"})", "response_format"},
      {R"(, "response_format": {"type": "json_schema"})", "response_format"},
      {R"(, "response_format": {"type": "json_schema", "json_schema": {"schema": 3}})", "response_format"},
      {R"(, "grammar": 5)", "grammar"},
      {R"(, "grammar": "")", "grammar"},
      {R"(, "grammar": "root ::= \"a\"", "response_format": {"type": "json_object"})", "grammar"},
  };
  for (const auto& [extra, param] : bad) {
    const ApiError e = error_of([&] { parse(extra); });
    EXPECT_EQ(e.status(), 400) << extra;
    EXPECT_EQ(e.param(), param) << extra << ": " << e.what();
  }
}

TEST(ParseChat, ToolChoiceDefaultsAndBadValues) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])";
  const std::string msgs = R"("messages": [{"role": "user", "content": "hi"}])";
  auto parse = [&](const std::string& extra) { return parse_chat_request(Json::parse("{" + msgs + extra + "}")); };
  EXPECT_EQ(parse("").tool_choice.kind, ToolChoice::Kind::kNone);
  EXPECT_EQ(parse(", " + tools).tool_choice.kind, ToolChoice::Kind::kAuto);
  EXPECT_EQ(parse(", " + tools + R"(, "tool_choice": "required")").tool_choice.kind, ToolChoice::Kind::kRequired);
  EXPECT_EQ(parse(", " + tools + R"(, "tool_choice": "none")").tool_choice.kind, ToolChoice::Kind::kNone);
  const ApiRequest named = parse(", " + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}})");
  EXPECT_EQ(named.tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(named.tool_choice.function, "f");
  EXPECT_EQ(parse(R"(, "tools": [], "tool_choice": "none")").tool_choice.kind, ToolChoice::Kind::kNone);
  const std::pair<std::string, std::string> bad[] = {
      {", " + tools + R"(, "tool_choice": "sometimes")", "tool_choice"},
      {", " + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "g"}})", "tool_choice"},
      {R"(, "tool_choice": "required")", "tool_choice"},
      {R"(, "tools": [{"type": "function", "function": {"parameters": {}}}])", "tools"},
      {R"(, "tools": [{"type": "retrieval"}])", "tools"},
      {R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": [1]}}])", "tools"},
  };
  for (const auto& [extra, param] : bad) {
    const ApiError e = error_of([&] { parse(extra); });
    EXPECT_EQ(e.status(), 400) << extra;
    EXPECT_EQ(e.param(), param) << extra << ": " << e.what();
  }
}

// The API with Qwen3's tokenizer and chat template (the Hermes tool-call format).
struct ToolApiFixture : ::testing::Test {
  std::unique_ptr<Tokenizer> tok = Tokenizer::load(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/qwen3");
  std::optional<ChatTemplate> tmpl = ChatTemplate::from_model(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/qwen3");
  ServedModel model;
  std::shared_ptr<testing::FakeStream> stream;
  ServeRequest submitted;
  const std::string body = R"({"messages": [{"role": "user", "content": "Weather in Paris?"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]})";
  const std::string answer =
      "I'll check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  void SetUp() override {
    ASSERT_TRUE(tmpl.has_value());
    model.name = "qwen";
    model.max_model_len = 4096;
    model.vocab_size = tok->vocab_size();
    model.tokenizer = tok.get();
    model.chat_template = &*tmpl;
    model.tool_format = tool_call_format(tmpl->source());
    model.submit = [this](ServeRequest r) -> std::shared_ptr<RequestStream> {
      submitted = r;
      return stream;
    };
    stream = std::make_shared<testing::FakeStream>(tok->encode(answer, false), FinishReason::kStop);
  }
  std::string with(const std::string& extra) const { return body.substr(0, body.size() - 1) + extra + "}"; }
};

TEST_F(ToolApiFixture, CallsInTheAnswerBecomeToolCalls) {
  OpenAiApi api(model, nullptr);
  ASSERT_EQ(model.tool_format, ToolCallFormat::kHermes);
  const PreparedRequest p = api.prepare(body + "", true);
  EXPECT_EQ(p.tool_format, ToolCallFormat::kHermes);
  EXPECT_NE(tok->decode(p.serve.prompt).find("get_weather"), std::string::npos);  // the template shows the tools
  const Json j = *api.complete(p, *api.submit(p));
  const Json& m = j["choices"][0]["message"];
  EXPECT_EQ(m["content"], "I'll check.\n");
  ASSERT_EQ(m["tool_calls"].size(), 1u) << j.dump();
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  EXPECT_EQ(m["tool_calls"][0]["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(m["tool_calls"][0]["function"]["arguments"].get<std::string>()), Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
}

TEST_F(ToolApiFixture, StreamedCallsComeAsToolCallDeltas) {
  OpenAiApi api(model, nullptr);
  const PreparedRequest p = api.prepare(with(R"(, "stream": true)"), true);
  std::vector<std::string> events;
  ASSERT_TRUE(api.stream(p, *api.submit(p), [&](const std::string& s) {
    events.push_back(s);
    return true;
  }));
  std::string content;
  Json calls = Json::array();
  std::string finish;
  for (const std::string& e : events) {
    if (e == kSseDone) continue;
    const Json j = Json::parse(e.substr(6));
    const Json& c = j["choices"][0];
    if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
    if (c["delta"].contains("tool_calls")) {
      for (const Json& t : c["delta"]["tool_calls"]) calls.push_back(t);
    }
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"].get<std::string>();
  }
  EXPECT_EQ(content, "I'll check.\n");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(calls[0]["function"]["arguments"].get<std::string>()), Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(finish, "tool_calls");
}

TEST_F(ToolApiFixture, ToolChoiceNoneHidesTheToolsAndParsesNothing) {
  OpenAiApi api(model, nullptr);
  const PreparedRequest p = api.prepare(with(R"(, "tool_choice": "none")"), true);
  EXPECT_EQ(p.tool_format, ToolCallFormat::kNone);
  EXPECT_EQ(tok->decode(p.serve.prompt).find("get_weather"), std::string::npos);
  const Json j = *api.complete(p, *api.submit(p));
  EXPECT_EQ(j["choices"][0]["message"]["content"], answer);
  EXPECT_FALSE(j["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
}

TEST_F(ToolApiFixture, RequiredCallsAreWrittenByAGrammarWhateverTheModelsFormat) {
  model.tool_format = ToolCallFormat::kNone;  // as --tool-call-parser none
  OpenAiApi plain(model, nullptr);
  // auto: the answer stays text.
  EXPECT_EQ(plain.prepare(body + "", true).tool_format, ToolCallFormat::kNone);
  // Without the structured-output machinery: 400.
  EXPECT_EQ(error_of([&] { plain.prepare(with(R"(, "tool_choice": "required")"), true); }).param(), "tool_choice");

  structured::GrammarCache grammars;
  model.vocabulary = std::make_shared<const structured::Vocabulary>(
      structured::vocabulary_from_tokenizer(*tok, model.vocab_size, {static_cast<std::int64_t>(*tok->eos_id())}));
  model.grammars = &grammars;
  OpenAiApi api(model, nullptr);
  const PreparedRequest p = api.prepare(with(R"(, "tool_choice": "required")"), true);
  EXPECT_EQ(p.tool_format, ToolCallFormat::kJsonList);
  ASSERT_TRUE(p.serve.constraint);
  // The grammar lets the list start and nothing else.
  std::unique_ptr<TokenConstraint> c = p.serve.constraint();
  std::vector<float> logits(static_cast<std::size_t>(model.vocab_size), 0.0f);
  ASSERT_TRUE(c->mask(logits.data()));
  for (std::size_t id = 0; id < logits.size(); ++id) {
    if (logits[id] == 0.0f) {
      EXPECT_EQ(tok->decode(std::vector<std::int32_t>{static_cast<std::int32_t>(id)}).substr(0, 1), "[") << id;
    }
  }
  stream = std::make_shared<testing::FakeStream>(
      tok->encode(R"([{"name":"get_weather","parameters":{"city":"Paris"}}])", false), FinishReason::kStop);
  const Json j = *api.complete(p, *api.submit(p));
  const Json& m = j["choices"][0]["message"];
  EXPECT_TRUE(m["content"].is_null()) << j.dump();
  ASSERT_EQ(m["tool_calls"].size(), 1u) << j.dump();
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(m["tool_calls"][0]["function"]["arguments"].get<std::string>()), Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");

  // Bad schemas and grammars: 400 naming the field; structured output with ignore_eos or with tool_choice required.
  const std::pair<std::string, std::string> bad[] = {
      {R"(, "tool_choice": "none", "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "strange"}}})", "response_format"},
      {R"(, "tool_choice": "none", "grammar": "root ::= (\"a\"")", "grammar"},
      {R"(, "tool_choice": "none", "response_format": {"type": "json_object"}, "ignore_eos": true)", "ignore_eos"},
      {R"(, "tool_choice": "required", "response_format": {"type": "json_object"})", "tool_choice"},
  };
  for (const auto& [extra, param] : bad) {
    const ApiError e = error_of([&] { api.prepare(with(extra), true); });
    EXPECT_EQ(e.status(), 400) << extra;
    EXPECT_EQ(e.param(), param) << extra << ": " << e.what();
  }
  EXPECT_NE(std::string(error_of([&] { api.prepare(with(R"(, "tool_choice": "none", "grammar": "root ::= (\"a\"")"), true); }).what())
                .find("line 1"),
            std::string::npos);
}

}  // namespace
}  // namespace plexus
