// Every golden case (ids, ids_with_special, decoded) for qwen3, llama3, mistral, gpt2 and gemma2 must match
// exactly; then behaviour beyond the golden sample on the same tokenizer (loaded once, to keep
// the sanitizer build fast): round trips on random UTF-8, special tokens, empty and invalid
// input, long runs of one character, concurrent use.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "tokenizer/decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace plexus {
namespace {

void check_golden(const std::string& name, const Tokenizer& tok_ref) {
  const Tokenizer* tok = &tok_ref;
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

// What decode(encode(x)) must give back for each golden tokenizer.
std::string expected_round_trip(const std::string& name, const std::string& x) {
  if (name == "qwen3") return unicode::normalize(x, unicode::NormalForm::kNfc);  // NFC normalizer
  if (name == "llama3" || name == "gpt2") return clean_up_tokenization_spaces(x);  // tokenizer_config
  return x;
}

void check_behaviour(const std::string& name, const Tokenizer& tok_ref) {
  const Tokenizer* tok = &tok_ref;

  // Empty input: no ids, and decoding nothing gives "".
  EXPECT_TRUE(tok->encode("", false).empty());
  EXPECT_EQ(tok->decode(std::vector<std::int32_t>{}), "");

  // Invalid UTF-8 is repaired to U+FFFD before encoding (documented in docs/tokenizer.md).
  EXPECT_EQ(tok->encode("a\xff" "b\xe2\x82", false), tok->encode("a\xef\xbf\xbd" "b\xef\xbf\xbd", false));
  EXPECT_EQ(tok->encode("\xc0\xaf", false), tok->encode("\xef\xbf\xbd\xef\xbf\xbd", false));

  // Round trip on random UTF-8 (byte-level BPE and byte-fallback BPE both cover every byte).
  std::mt19937 rng(1234);
  for (int i = 0; i < 200; ++i) {
    const std::string x = test::random_utf8(rng, 40);
    const auto ids = tok->encode(x, false);
    ASSERT_EQ(tok->decode(ids), expected_round_trip(name, x)) << name << " text: " << Json(x).dump();
    for (std::int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->vocab_size());
  }

  // Runs of one character: linear time (no regex backtracking blow-up) and exact round trip.
  for (const char* c : {" ", "a", "1", "!", "\n", "\xe4\xb8\xad", "\xf0\x9f\x99\x82"}) {  // 1 MB runs: long_input_test
    std::string run;
    while (run.size() < 16 * 1024) run += c;
    const auto ids = tok->encode(run, false);
    EXPECT_FALSE(ids.empty());
    EXPECT_TRUE(tok->decode(ids) == expected_round_trip(name, run)) << name << " run of " << Json(c).dump();
  }

  // Special tokens are matched before BPE wherever they appear, and skipped on request.
  const auto eos = tok->eos_id();
  ASSERT_TRUE(eos.has_value());
  EXPECT_TRUE(tok->is_special(*eos));
  const std::string eos_text = tok->id_to_piece(*eos);
  const auto ids = tok->encode("Hello" + eos_text + "world" + eos_text, false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *eos), 2);
  EXPECT_EQ(ids.back(), *eos);
  const std::string skipped = tok->decode(ids, true);
  EXPECT_EQ(skipped.find(eos_text), std::string::npos);
  EXPECT_NE(tok->decode(ids, false).find(eos_text), std::string::npos);
  EXPECT_EQ(tok->piece_to_id(eos_text), eos);
}

TEST(TokenizerGoldenAndBehaviour, Qwen3) {
  const auto tok = Tokenizer::load(test::golden_dir("qwen3") + "/tokenizer.json");  // the file form of PATH
  check_golden("qwen3", *tok);
  check_behaviour("qwen3", *tok);
  EXPECT_FALSE(tok->bos_id().has_value());  // bos_token is null in tokenizer_config.json
  EXPECT_EQ(tok->eos_id(), 151645);         // <|im_end|>
  EXPECT_EQ(tok->vocab_size(), 151669);
  const auto ids = tok->encode("<|im_start|>user\nhi<|im_end|>", true);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(tok->decode(ids, true), "user\nhi");
  EXPECT_EQ(tok->id_to_piece(9707), "Hello");
  EXPECT_EQ(tok->id_to_piece(220), "\xc4\xa0");  // "Ġ", the byte-level spelling of " "
  // NFC: decomposed input encodes like the composed form.
  EXPECT_EQ(tok->encode("cafe\xcc\x81", false), tok->encode("caf\xc3\xa9", false));
}

TEST(TokenizerGoldenAndBehaviour, Llama3) {
  const auto tok = Tokenizer::load(test::golden_dir("llama3"));
  check_golden("llama3", *tok);
  check_behaviour("llama3", *tok);
  EXPECT_EQ(tok->bos_id(), 128000);
  EXPECT_EQ(tok->eos_id(), 128001);
  EXPECT_EQ(tok->vocab_size(), 128256);
  EXPECT_EQ(tok->encode("<|begin_of_text|>Hello", false).front(), 128000);
  EXPECT_EQ(tok->encode("Hello", true), tok->encode("Hello", false));  // ByteLevel post-processor adds nothing
}

TEST(TokenizerGoldenAndBehaviour, Mistral) {
  const auto tok = Tokenizer::load(test::golden_dir("mistral"));
  check_golden("mistral", *tok);
  check_behaviour("mistral", *tok);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->encode("Hello", false), (std::vector<std::int32_t>{22557}));
  EXPECT_EQ(tok->encode("Hello", true), (std::vector<std::int32_t>{1, 22557}));
  EXPECT_EQ(tok->encode("", true), (std::vector<std::int32_t>{1}));
  EXPECT_EQ(tok->decode(std::vector<std::int32_t>{1, 22557}, true), "Hello");
  // Byte fallback: a character outside the vocabulary becomes its UTF-8 bytes <0xXX>.
  const auto ids = tok->encode("\xf0\x9f\xa6\x80", false);  // U+1F980
  EXPECT_EQ(tok->decode(ids), "\xf0\x9f\xa6\x80");
  EXPECT_EQ(tok->id_to_piece(13), "<0x0A>");
  // Ids the vocabulary does not have are skipped when decoding.
  EXPECT_EQ(tok->decode(std::vector<std::int32_t>{22557, 99999, -5}), "Hello");
}

// GPT-2: byte-level BPE with no normalizer; <|endoftext|> is bos, eos and unk; its
// tokenizer_config asks for clean_up_tokenization_spaces.
TEST(TokenizerGoldenAndBehaviour, Gpt2) {
  const auto tok = Tokenizer::load(test::golden_dir("gpt2"));
  check_golden("gpt2", *tok);
  check_behaviour("gpt2", *tok);
  EXPECT_EQ(tok->bos_id(), 50256);
  EXPECT_EQ(tok->eos_id(), 50256);
  EXPECT_EQ(tok->vocab_size(), 50257);
  EXPECT_EQ(tok->encode("Hello", false), (std::vector<std::int32_t>{15496}));
  EXPECT_EQ(tok->encode(" Hello", false), (std::vector<std::int32_t>{18435}));  // "ĠHello"
  EXPECT_EQ(tok->encode("Hello", true), tok->encode("Hello", false));  // ByteLevel post-processor adds nothing
}

// Gemma 2: SentencePiece-style BPE (spaces replaced by U+2581, split after each, byte fallback),
// <bos> prepended by the post-processor, <eos> the eos of tokenizer_config. Gemma 3's tokenizer is
// the same kind with 262144 pieces (too large to keep here: tests/data/golden/tokenizers/README.md).
TEST(TokenizerGoldenAndBehaviour, Gemma2) {
  const auto tok = Tokenizer::load(test::golden_dir("gemma2"));
  check_golden("gemma2", *tok);
  check_behaviour("gemma2", *tok);
  EXPECT_EQ(tok->bos_id(), 2);
  EXPECT_EQ(tok->eos_id(), 1);
  EXPECT_EQ(tok->vocab_size(), 256000);
  EXPECT_EQ(tok->encode("Hello", false), (std::vector<std::int32_t>{4521}));
  EXPECT_EQ(tok->encode(" Hello", false), (std::vector<std::int32_t>{25957}));  // "▁Hello"
  EXPECT_EQ(tok->encode("Hello", true), (std::vector<std::int32_t>{2, 4521}));
  EXPECT_EQ(tok->encode("<start_of_turn>user\nhi<end_of_turn>", false).front(), tok->piece_to_id("<start_of_turn>"));
}

TEST(TokenizerBehaviour, ConcurrentEncodesShareTheCacheSafely) {
  const auto tok = Tokenizer::load(test::golden_dir("mistral"));
  const auto cases = test::read_jsonl(test::golden_dir("mistral") + "/cases.jsonl");
  std::vector<std::string> texts;
  for (const Json& c : cases) texts.push_back(c["text"].get<std::string>());
  std::vector<std::vector<std::int32_t>> want;
  for (const std::string& t : texts) want.push_back(tok->encode(t, true));
  const auto fresh = Tokenizer::load(test::golden_dir("mistral"));  // empty cache, filled concurrently
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int round = 0; round < 3; ++round)
        for (std::size_t i = 0; i < texts.size(); ++i)
          mismatches[k] += fresh->encode(texts[(i * (k + 1)) % texts.size()], true) != want[(i * (k + 1)) % texts.size()];
    });
  for (auto& t : threads) t.join();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(mismatches[k], 0) << "thread " << k;
}

}  // namespace
}  // namespace plexus
