// Token masks: the vocabulary-trie walk allows exactly the tokens whose bytes the grammar can
// take next (compared with trying every token on its own), end-of-sequence exactly when
// complete, never special tokens; masks are cached per state and advancing follows the mask.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "structured/grammar_cache.h"
#include "structured/grammar_parser.h"
#include "structured/json_schema.h"
#include "structured/token_matcher.h"

namespace plexus::structured {
namespace {

constexpr std::int32_t kEos = 2;

// Single bytes, JSON-ish pieces and a few multi-byte characters; id 0..2 special, id 2 the EOS.
std::shared_ptr<const Vocabulary> small_vocab() {
  std::vector<std::optional<std::string>> bytes(3);
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
  for (const char* s : {"{\"", "\":", "\",\"", "\"}", "true", "false", "null", "12", "00", "ab", "abc", "é", "\xC3", "\xA9",
                        " {", "[1,", "],", "\"a\"", "\"b\"", "yes", "no", "-1", ".5", "a", "ab"}) {
    bytes.push_back(std::string(s));
  }
  bytes.push_back(std::nullopt);  // a special token past the others
  const std::int64_t size = static_cast<std::int64_t>(bytes.size()) + 3;  // model rows beyond the tokenizer
  return std::make_shared<const Vocabulary>(size, bytes, std::vector<std::int32_t>{kEos});
}

bool bit(const TokenMask& m, std::int64_t id) { return (m[static_cast<std::size_t>(id) >> 6] >> (id & 63)) & 1; }

// What every token alone would do from matcher state `m`.
void expect_mask_matches_brute_force(TokenMatcher& tm, const ByteMatcher& m, const Vocabulary& v) {
  const std::shared_ptr<const TokenMask> mask = tm.allowed();
  for (std::int64_t id = 0; id < v.size(); ++id) {
    bool want = false;
    if (v.is_eos(static_cast<std::int32_t>(id))) {
      want = m.complete();
    } else if (v.bytes(static_cast<std::int32_t>(id)) && !v.bytes(static_cast<std::int32_t>(id))->empty()) {
      ByteMatcher probe = m;
      want = probe.advance(*v.bytes(static_cast<std::int32_t>(id)));
    }
    ASSERT_EQ(bit(*mask, id), want) << "token " << id;
  }
}

TEST(TokenMatcher, MaskEqualsTryingEveryTokenAlongRandomPaths) {
  const auto vocab = small_vocab();
  const std::vector<std::string> grammars = {
      json_schema_grammar(Json::parse(R"({"type":"object","properties":{"a":{"type":"integer","minimum":-20,"maximum":150},
          "b":{"enum":["a","b"]},"c":{"type":"array","items":{"type":"boolean"},"maxItems":3}},"required":["a"]})")),
      "root ::= (\"yes\" | \"no\" | \"abc\"+) [é]?\n",
      json_object_grammar()};
  std::mt19937_64 rng(5);
  for (const std::string& text : grammars) {
    auto compiled = std::make_shared<const CompiledGrammar>(parse_grammar(text), vocab);
    for (int path = 0; path < 10; ++path) {
      TokenMatcher tm(compiled);
      ByteMatcher shadow(compiled->grammar());
      for (int step = 0; step < 30 && !tm.ended(); ++step) {
        expect_mask_matches_brute_force(tm, shadow, *vocab);
        const std::shared_ptr<const TokenMask> mask = tm.allowed();
        std::vector<std::int32_t> allowed;
        for (std::int64_t id = 0; id < vocab->size(); ++id) {
          if (bit(*mask, id)) allowed.push_back(static_cast<std::int32_t>(id));
        }
        ASSERT_FALSE(allowed.empty());
        const std::int32_t id = allowed[rng() % allowed.size()];
        ASSERT_TRUE(tm.advance(id));
        if (id != kEos) {
          ASSERT_TRUE(shadow.advance(*vocab->bytes(id)));
        }
      }
    }
  }
}

TEST(TokenMatcher, EndOfSequenceOnlyWhenCompleteAndAloneWhenNothingFollows) {
  const auto vocab = small_vocab();
  auto compiled = std::make_shared<const CompiledGrammar>(parse_grammar("root ::= \"ab\" \"c\"?\n"), vocab);
  TokenMatcher tm(compiled);
  EXPECT_FALSE(bit(*tm.allowed(), kEos));
  EXPECT_FALSE(tm.advance(kEos));
  ASSERT_TRUE(tm.advance(*vocab->bytes(3 + 'a') == "a" ? 3 + 'a' : -1));
  ASSERT_TRUE(tm.advance(3 + 'b'));
  EXPECT_TRUE(bit(*tm.allowed(), kEos));   // "ab" is complete ...
  EXPECT_TRUE(bit(*tm.allowed(), 3 + 'c'));  // ... and may go on
  ASSERT_TRUE(tm.advance(3 + 'c'));
  const std::shared_ptr<const TokenMask> only = tm.allowed();
  for (std::int64_t id = 0; id < vocab->size(); ++id) EXPECT_EQ(bit(*only, id), id == kEos) << id;
  ASSERT_TRUE(tm.advance(kEos));
  EXPECT_TRUE(tm.ended());
}

TEST(TokenMatcher, MaskSetsDisallowedLogitsToMinusInfinityAndCachesByState) {
  const auto vocab = small_vocab();
  GrammarCache cache(2);
  auto compiled = cache.get("root ::= [0-9]{1,40}\n", vocab);
  EXPECT_EQ(cache.get("root ::= [0-9]{1,40}\n", vocab), compiled);
  EXPECT_EQ(cache.hits(), 1u);
  TokenMatcher tm(compiled);
  std::vector<float> logits(static_cast<std::size_t>(vocab->size()), 1.0f);
  ASSERT_TRUE(tm.mask(logits.data()));
  for (std::int64_t id = 0; id < vocab->size(); ++id) {
    const std::optional<std::string>& b = vocab->bytes(static_cast<std::int32_t>(id));
    const bool digits = b && !b->empty() && b->find_first_not_of("0123456789") == std::string::npos;
    EXPECT_EQ(std::isinf(logits[static_cast<std::size_t>(id)]), !digits) << id;
  }
  const std::size_t before = compiled->cached_masks();
  tm.accept(3 + '1');
  tm.allowed();
  tm.accept(3 + '2');
  tm.allowed();  // "1" and "12" leave different states ({1,40} counts), each cached once
  EXPECT_EQ(compiled->cached_masks(), before + 2);
  TokenMatcher again(compiled);
  again.accept(3 + '1');
  again.allowed();  // the same state as the first matcher's: a hit
  EXPECT_EQ(compiled->cached_masks(), before + 2);
  // A grammar past the capacity pushes out the least recently used.
  cache.get("root ::= \"a\"\n", vocab);
  cache.get("root ::= \"b\"\n", vocab);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_NE(cache.get("root ::= [0-9]{1,40}\n", vocab), compiled);
}

TEST(TokenMatcher, AChosenTokenTheGrammarRefusesIsAnError) {
  const auto vocab = small_vocab();
  auto compiled = std::make_shared<const CompiledGrammar>(parse_grammar("root ::= \"a\"\n"), vocab);
  TokenMatcher tm(compiled);
  EXPECT_THROW(tm.accept(3 + 'b'), RuntimeError);
  EXPECT_FALSE(tm.advance(0));  // special: no bytes
}

}  // namespace
}  // namespace plexus::structured
