// Every golden case (ids, ids_with_special, decoded) for qwen3, llama3 and mistral must match
// exactly, plus the special-token ids the engine relies on.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace plexus {
namespace {

void check_golden(const std::string& name) {
  const auto tok = Tokenizer::load(test::golden_dir(name));
  const auto cases = test::read_jsonl(test::golden_dir(name) + "/cases.jsonl");
  ASSERT_GT(cases.size(), 100u);
  int failures = 0;
  for (const Json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const auto ids = tok->encode(text, false);
    const auto with = tok->encode(text, true);
    const auto want_ids = c["ids"].get<std::vector<std::int32_t>>();
    const auto want_with = c["ids_with_special"].get<std::vector<std::int32_t>>();
    const std::string decoded = tok->decode(want_ids);
    EXPECT_EQ(ids, want_ids) << name << " text: " << Json(text).dump();
    EXPECT_EQ(with, want_with) << name << " text: " << Json(text).dump();
    EXPECT_EQ(decoded, c["decoded"].get<std::string>()) << name << " text: " << Json(text).dump();
    failures += (ids != want_ids) + (with != want_with) + (decoded != c["decoded"].get<std::string>());
    if (failures > 10) FAIL() << "too many mismatches for " << name;
  }
}

TEST(TokenizerGolden, Qwen3) { check_golden("qwen3"); }
TEST(TokenizerGolden, Llama3) { check_golden("llama3"); }
TEST(TokenizerGolden, Mistral) { check_golden("mistral"); }

}  // namespace
}  // namespace plexus
