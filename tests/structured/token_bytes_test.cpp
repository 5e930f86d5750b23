// Tokenizer::token_bytes on the shipped tokenizers: byte-level BPE (Llama 3: Ġ is a space, Ċ a
// newline), SentencePiece-style with byte fallback (Mistral: ▁ is a space, <0x0A> the byte), special
// tokens none; and the vocabulary a grammar sees from them.
#include <gtest/gtest.h>

#include "core/error.h"
#include "structured/vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace plexus {
namespace {

TEST(TokenBytes, ByteLevelBpe) {
  const auto tok = Tokenizer::load(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3");
  const std::vector<std::int32_t> ids = tok->encode(" hello\n{\"a\": 1}", false);
  std::string joined;
  for (std::int32_t id : ids) joined += *tok->token_bytes(id);
  EXPECT_EQ(joined, " hello\n{\"a\": 1}");
  EXPECT_EQ(*tok->token_bytes(*tok->piece_to_id("\xC4\xA0")), " ");  // Ġ
  EXPECT_EQ(*tok->token_bytes(*tok->piece_to_id("\xC3\xA3")), "\xE3");  // a lone byte of a UTF-8 character
  ASSERT_TRUE(tok->eos_id());
  EXPECT_FALSE(tok->token_bytes(*tok->eos_id()));
  EXPECT_FALSE(tok->token_bytes(-1));
}

TEST(TokenBytes, SentencePieceWithByteFallback) {
  const auto tok = Tokenizer::load(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral");
  EXPECT_EQ(*tok->token_bytes(*tok->piece_to_id("<0x0A>")), "\n");
  EXPECT_EQ(*tok->token_bytes(*tok->piece_to_id("<0xC3>")), "\xC3");
  EXPECT_EQ(*tok->token_bytes(*tok->piece_to_id("\xE2\x96\x81the")), " the");
  ASSERT_TRUE(tok->eos_id());
  EXPECT_FALSE(tok->token_bytes(*tok->eos_id()));
  const structured::Vocabulary v = structured::vocabulary_from_tokenizer(*tok, tok->vocab_size() + 5, {*tok->eos_id()});
  EXPECT_FALSE(v.bytes(tok->vocab_size() + 2));  // model rows past the tokenizer: never chosen
  EXPECT_TRUE(v.is_eos(*tok->eos_id()));
  // The trie holds each token with bytes once.
  std::int64_t with_bytes = 0;
  for (std::int32_t id = 0; id < v.size(); ++id) with_bytes += v.bytes(id) && !v.bytes(id)->empty();
  EXPECT_EQ(static_cast<std::int64_t>(v.trie().token_ids().size()), with_bytes);
  EXPECT_THROW(structured::vocabulary_from_tokenizer(*tok, tok->vocab_size(), {}), InputError);
}

}  // namespace
}  // namespace plexus
