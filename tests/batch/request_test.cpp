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
  EXPECT_NE(reason(R"({"id": 1, "prompt": "hi"})").find("needs a tokenizer"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1, 100]})").find("token id 100 is outside the vocabulary [0, 100)"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [-1]})").find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [18446744073709551615]})").find("token id 18446744073709551615 is outside"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": ["x"]})").find("not a token id"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": []})").find("empty"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "max_tokens": 0})").find("\"max_tokens\" must be an integer"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "max_tokens": "3"})").find("\"max_tokens\""), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "max_tokens": 64})").find("exceeds the model's context of 64"), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "temperature": -1})").find("\"temperature\""), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "seed": -2})").find("\"seed\""), std::string::npos);
  EXPECT_NE(reason(R"({"id": 1, "ids": [1], "max_token": 3})").find("unknown field \"max_token\""), std::string::npos);
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

}  // namespace
}  // namespace plexus::batch
