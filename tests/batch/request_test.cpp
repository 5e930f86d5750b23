// Input lines of `plexus batch`: accepted shapes, defaults, and every reason a line is refused.
#include <gtest/gtest.h>

#include <fstream>

#include "batch/request.h"
#include "core/error.h"
#include "test_util.h"

namespace plexus::batch {
namespace {

ParseContext context() {
  ParseContext c;
  c.vocab_size = 100;
  c.max_context = 64;
  c.defaults.max_tokens = 5;
  c.defaults.sampling.seed = 9;
  return c;
}

std::string reason(const std::string& line, const ParseContext& c = context()) {
  try {
    parse_request_line(line, c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(BatchRequest, IdsWithDefaultsAndOverrides) {
  const BatchRequest a = parse_request_line(R"({"id": "a", "ids": [1, 2, 3]})", context());
  EXPECT_EQ(a.id, Json("a"));
  EXPECT_EQ(a.key, "\"a\"");
  EXPECT_EQ(a.seq.prompt, (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(a.seq.max_tokens, 5);
  EXPECT_TRUE(a.seq.sampling.greedy);
  EXPECT_EQ(a.seq.sampling.seed, 9u);

  const BatchRequest b = parse_request_line(R"({"id": 7, "ids": [4], "max_tokens": 2, "temperature": 0.8, "seed": 3})", context());
  EXPECT_EQ(b.key, "7");
  EXPECT_EQ(b.seq.max_tokens, 2);
  EXPECT_FALSE(b.seq.sampling.greedy);
  EXPECT_DOUBLE_EQ(b.seq.sampling.temperature, 0.8);
  EXPECT_EQ(b.seq.sampling.seed, 3u);

  ParseContext sampled = context();
  sampled.defaults.sampling.greedy = false;
  EXPECT_TRUE(parse_request_line(R"({"id": 1, "ids": [4], "temperature": 0})", sampled).seq.sampling.greedy);
}

TEST(BatchRequest, BadLinesSayWhy) {
  EXPECT_NE(reason("{not json").find("not JSON"), std::string::npos);
  EXPECT_NE(reason("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(reason(R"({"ids": [1]})").find("no \"id\""), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1.5, "ids": [1]})").find("\"id\" must be a string or an integer"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1})").find("exactly one of \"prompt\""), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "messages": []})").find("exactly one of \"prompt\""), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "prompt": "hi"})").find("needs a tokenizer"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1, 100]})").find("token id 100 is outside the vocabulary [0, 100)"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [-1]})").find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [18446744073709551615]})").find("token id 18446744073709551615 is outside"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": ["x"]})").find("not a token id"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": []})").find("empty"), std::string::npos);
  // The body fields are the server's, checked by its parser (messages naming the field).
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "max_tokens": 0})").find("'max_tokens' must be an integer"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "max_tokens": "3"})").find("'max_tokens'"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "max_tokens": 64})").find("maximum context length is 64 tokens"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "temperature": -1})").find("'temperature'"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "seed": "x"})").find("'seed'"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "top_p": 0})").find("'top_p' must be greater than 0"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "stop": "x"})").find("\"stop\" needs a tokenizer"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "messages": [{"role": "user", "content": "hi"}]})").find("need a tokenizer"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "stream": true})").find("'stream': true is not supported in batch"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "n": 17})").find("'n' must be an integer between 1 and 16, got 17"), std::string::npos);
  ParseContext few = context();
  few.max_choices = 4;  // --max-sequences 4
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "n": 5})", few).find("'n' must be between 1 and 4"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object", "minProperties": 1}}}})")
                .find("response_format.json_schema.schema at '/minProperties': keyword 'minProperties' is not supported"),
            std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "grammar": "root ::= (\"a\""})").find("grammar line 1, column 14: expected ')'"),
            std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "grammar": "root ::= \"a\"", "ignore_eos": true})").find("'ignore_eos' with 'grammar'"),
            std::string::npos);
  ParseContext no_eos = context();  // --ignore-eos: nothing would end a grammar's answer
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "response_format": {"type": "json_object"}})", no_eos)
                .find("'response_format': a structured answer ends with an end-of-sequence id, and this run has none"),
            std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "logprobs": 2, "echo": true})").find("'echo' with 'logprobs'"), std::string::npos);
  EXPECT_EQ(parse_request_line(R"({"id": 1, "ids": [1], "logprobs": 2})", context()).logprobs, 2);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "max_token": 3})").find("unknown field \"max_token\""), std::string::npos);
}

TEST(BatchRequest, BodyFieldsThroughTheServersParser) {
  // Sampling fields the command does not have per request, stop ids from the context, the
  // command's defaults for what a plexus line leaves out, response_format text accepted.
  ParseContext c = context();
  c.eos_ids = {2};
  c.defaults.sampling.top_k = 40;
  const BatchRequest a = parse_request_line(
      R"({"id": "a", "ids": [4, 5], "temperature": 0.7, "top_p": 0.5, "response_format": {"type": "text"}})", c);
  EXPECT_FALSE(a.seq.sampling.greedy);
  EXPECT_DOUBLE_EQ(a.seq.sampling.top_p, 0.5);
  EXPECT_EQ(a.seq.sampling.top_k, 40);  // --top-k
  EXPECT_EQ(a.seq.sampling.seed, 9u);   // --seed: never a random one
  EXPECT_EQ(a.seq.max_tokens, 5);       // --max-tokens
  ASSERT_TRUE(a.seq.stop_ids.has_value());
  EXPECT_EQ(*a.seq.stop_ids, (std::vector<std::int64_t>{2}));
  EXPECT_FALSE(a.chat);
  const BatchRequest b = parse_request_line(R"({"id": "b", "ids": [4], "ignore_eos": true, "top_k": 3, "seed": 11})", c);
  EXPECT_TRUE(b.seq.stop_ids.has_value() && b.seq.stop_ids->empty());
  EXPECT_EQ(b.seq.sampling.top_k, 3);
  EXPECT_EQ(b.seq.sampling.seed, 11u);
}

TEST(BatchRequest, OpenAiLinesAreCheckedLineAndBody) {
  // Everything but a tokenizer-less model is refused before the body (the reasons name the field).
  ParseContext c = context();
  const auto openai = [](const std::string& fields) {
    return R"({"custom_id": "x", )" + fields + "}";
  };
  EXPECT_EQ(line_format(Json::parse(openai(R"("method": "POST")"))), LineFormat::kOpenAi);
  EXPECT_EQ(line_format(Json::parse(R"({"id": 1})")), LineFormat::kPlexus);
  EXPECT_NE(reason(R"({"custom_id": 3, "method": "POST", "url": "/v1/completions", "body": {}})").find("\"custom_id\" must be a string"),
            std::string::npos);
  EXPECT_NE(reason(openai(R"("method": "GET", "url": "/v1/completions", "body": {})")).find("\"method\" must be \"POST\""),
            std::string::npos);
  EXPECT_NE(reason(openai(R"("method": "POST", "url": "/v1/embeddings", "body": {})")).find("\"url\" must be"), std::string::npos);
  EXPECT_NE(reason(openai(R"("method": "POST", "url": "/v1/completions", "body": {}, "extra": 1)")).find("unknown field \"extra\""),
            std::string::npos);
  EXPECT_NE(reason(openai(R"("method": "POST", "url": "/v1/completions", "body": [])")).find("\"body\" must be"), std::string::npos);
  EXPECT_NE(reason(openai(R"("method": "POST", "url": "/v1/completions", "body": {"prompt": [1], "max_token": 3})"))
                .find("unknown field \"body.max_token\""),
            std::string::npos);
  // A chat field in a completion body is unknown there.
  EXPECT_NE(reason(openai(R"("method": "POST", "url": "/v1/completions", "body": {"prompt": [1], "messages": []})"))
                .find("unknown field \"body.messages\""),
            std::string::npos);
  EXPECT_NE(reason(openai(R"("method": "POST", "url": "/v1/completions", "body": {"prompt": [1]})")).find("need the model's tokenizer.json"),
            std::string::npos);
}

TEST(BatchRequest, FileLinesDuplicatesAndBlankLines) {
  testing::TempDir dir("batch_request");
  const std::string in = dir / "in.jsonl";
  std::ofstream(in) << "{\"id\": \"a\", \"ids\": [1]}\n\n{\"id\": 1, \"ids\": [2]}\r\nnope\n{\"id\": \"a\", \"ids\": [3]}\n"
                       "{\"id\": \"1\", \"ids\": [4]}\n{\"id\": \"b\", \"ids\": [400]}";
  const ParsedInput p = read_requests(in, context());
  ASSERT_EQ(p.requests.size(), 3u);
  EXPECT_EQ(p.requests[0].line, 1);
  EXPECT_EQ(p.requests[1].line, 3);
  EXPECT_EQ(p.requests[2].key, "\"1\"");  // "1" and 1 are different ids
  ASSERT_EQ(p.bad.size(), 3u);
  EXPECT_EQ(describe_bad_line(in, p.bad[0]).substr(0, in.size() + 3), in + ":4:");
  EXPECT_EQ(p.bad[1].line, 5);
  EXPECT_NE(p.bad[1].reason.find("duplicate id \"a\" (first on line 1)"), std::string::npos);
  EXPECT_EQ(p.bad[2].line, 7);
  ASSERT_TRUE(p.bad[2].id.has_value());
  EXPECT_EQ(*p.bad[2].id, Json("b"));
  EXPECT_THROW(read_requests(dir / "missing.jsonl", context()), InputError);
}

TEST(BatchRequest, OneFormatPerInput) {
  testing::TempDir dir("batch_request_formats");
  const std::string in = dir / "in.jsonl";
  std::ofstream(in) << "nope\n{\"custom_id\": \"a\", \"method\": \"POST\", \"url\": \"/v1/completions\", \"body\": {\"prompt\": [1]}}\n"
                       "{\"id\": \"b\", \"ids\": [1]}\n";
  try {
    read_requests(in, context());
    FAIL() << "a mixed input was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(in + ":3: a plexus batch line (with \"id\") after an OpenAI Batch API line (with \"custom_id\") on line 2"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(in) << "{\"custom_id\": \"a\", \"method\": \"POST\", \"url\": \"/v1/completions\", \"body\": {\"prompt\": [1]}}\n";
  const ParsedInput p = read_requests(in, context());
  EXPECT_EQ(p.format, LineFormat::kOpenAi);
  ASSERT_EQ(p.bad.size(), 1u);  // no tokenizer in this context
  ASSERT_TRUE(p.bad[0].id.has_value());
  EXPECT_EQ(*p.bad[0].id, Json("a"));  // the custom_id, for the errors file
}

}  // namespace
}  // namespace plexus::batch
