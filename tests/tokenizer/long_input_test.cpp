// Long inputs (label slow): 1 MB runs of one character and a 1 MB single line per golden
// tokenizer must encode in linear time and round-trip exactly.
#include <gtest/gtest.h>

#include "tokenizer/decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace plexus {
namespace {

void check_long(const std::string& name) {
  const auto tok = Tokenizer::load(test::golden_dir(name));
  const auto round_trip = [&](const std::string& x) {
    if (name == "qwen3") return unicode::normalize(x, unicode::NormalForm::kNfc);
    if (name == "llama3") return clean_up_tokenization_spaces(x);
    std::string y;  // SentencePiece style: a literal "▁" reads back as a space
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x.compare(i, 3, "\xe2\x96\x81") == 0) {
        y += ' ';
        i += 2;
      } else {
        y += x[i];
      }
    }
    return y;
  };
  constexpr std::size_t kMb = 1 << 20;
  for (const char* c : {" ", "a", "7", "!", "\n", "\xc3\xa9", "\xe4\xb8\xad", "\xe2\x96\x81", "'", " a", "!\n",
                        "\t\n", "\r\n ", "\xc2\xa0"}) {
    std::string run;
    while (run.size() < kMb) run += c;
    const auto ids = tok->encode(run, false);
    EXPECT_TRUE(tok->decode(ids) == round_trip(run)) << name << " run of " << Json(c).dump();
  }
  // Whitespace runs that end in a letter make `\s+(?!\S)` and `\s*[\r\n]+` backtrack once.
  const std::string spaces_then_x = std::string(kMb, ' ') + "x";
  EXPECT_TRUE(tok->decode(tok->encode(spaces_then_x, false)) == round_trip(spaces_then_x));
  // A 1 MB single line of prose built from the golden texts.
  std::string line;
  const auto cases = test::read_jsonl(test::golden_dir(name) + "/cases.jsonl");
  for (std::size_t i = 0; line.size() < kMb; ++i) line += cases[i % cases.size()]["text"].get<std::string>() + " ";
  const auto ids = tok->encode(line, true);
  EXPECT_GT(ids.size(), line.size() / 8);
}

TEST(TokenizerLongInput, Qwen3) { check_long("qwen3"); }
TEST(TokenizerLongInput, Llama3) { check_long("llama3"); }
TEST(TokenizerLongInput, Mistral) { check_long("mistral"); }

}  // namespace
}  // namespace plexus
