// Tokenizers from GGUF metadata: the SentencePiece ("llama") vocabulary of the golden GGUF files
// gives llama.cpp's ids; tokenizer.json -> gguf_tokenizer_metadata -> Tokenizer gives the same
// ids as the tokenizer.json itself on every golden case (byte-level BPE and SentencePiece-style).
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "core/gguf_file.h"
#include "tokenizer/gguf_vocab_export.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace plexus {
namespace {

using Metadata = std::map<std::string, GgufValue>;

const std::string kGgufDir = std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf";

Metadata exported(const std::string& name) {
  Metadata kv;
  for (auto& [k, v] : gguf_tokenizer_metadata(test::golden_dir(name))) kv.emplace(k, std::move(v));
  return kv;
}

// The golden GGUF files hold the first 2048 pieces of the Mistral tokenizer.
Metadata mistral_first_2048() {
  Metadata kv = exported("mistral");
  for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"})
    kv.at(key).arr.resize(2048);
  return kv;
}

std::vector<Json> golden_gguf_cases() { return test::read_jsonl(kGgufDir + "/cases.jsonl"); }

void expect_llama_cpp_ids(const Tokenizer& tok, const Json& file_case) {
  ASSERT_GE(file_case["tokenize"].size(), 6u);
  for (const Json& c : file_case["tokenize"]) {
    const std::string text = c["text"].get<std::string>();
    const auto want = c["ids"].get<std::vector<std::int32_t>>();
    EXPECT_EQ(tok.encode(text, false), want) << Json(text).dump();
    std::vector<std::int32_t> with_bos{1};
    with_bos.insert(with_bos.end(), want.begin(), want.end());
    EXPECT_EQ(tok.encode(text, true), with_bos) << Json(text).dump();  // add_bos_token true
  }
}

TEST(GgufVocab, SentencePieceGivesLlamaCppIds) {
  const auto tok = Tokenizer::from_gguf_metadata(mistral_first_2048(), "mistral[:2048]");
  EXPECT_EQ(tok->vocab_size(), 2048);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->is_special(1));
  for (const Json& f : golden_gguf_cases()) expect_llama_cpp_ids(*tok, f);
  // Decoding as llama.cpp: "▁" in a piece is a space and the first piece loses its leading
  // space; byte pieces are their bytes (a lone "▁" not in these 2048 pieces went through bytes,
  // so it decodes to "▁"); after a BOS the space stays.
  const std::string hello = "Hello, world!";
  EXPECT_EQ(tok->decode(tok->encode(hello, false)), hello);
  const std::string mixed = "naïve café 日本語 🤖";
  EXPECT_EQ(tok->decode(tok->encode(mixed, false)), "naïve café▁日本語▁🤖");
  EXPECT_EQ(tok->decode(tok->encode(mixed, true)), "<s> naïve café▁日本語▁🤖");
  EXPECT_EQ(tok->decode(tok->encode(mixed, true), true), " naïve café▁日本語▁🤖");
  EXPECT_TRUE(tok->encode("", false).empty());
  EXPECT_EQ(tok->encode("", true), std::vector<std::int32_t>{1});
}

// tokenizer.json -> GGUF metadata -> Tokenizer must agree with the tokenizer.json on every case.
void check_round_trip(const std::string& name) {
  const auto json_tok = Tokenizer::load(test::golden_dir(name));
  const auto gguf_tok = Tokenizer::from_gguf_metadata(exported(name), name + " (exported)");
  EXPECT_EQ(gguf_tok->vocab_size(), json_tok->vocab_size());
  EXPECT_EQ(gguf_tok->eos_id(), json_tok->eos_id());
  EXPECT_EQ(gguf_tok->chat_template(), json_tok->chat_template());
  const auto cases = test::read_jsonl(test::golden_dir(name) + "/cases.jsonl");
  ASSERT_GT(cases.size(), 100u);
  int failures = 0;
  for (const Json& c : cases) {
    std::string text = c["text"].get<std::string>();
    // llama.cpp has no NFC normalizer: Qwen3's NFC step is applied here to compare like with like.
    if (name == "qwen3") text = unicode::normalize(text, unicode::NormalForm::kNfc);
    const auto ids = gguf_tok->encode(text, false);
    const auto with = gguf_tok->encode(text, true);
    const auto want = c["ids"].get<std::vector<std::int32_t>>();
    const auto want_with = c["ids_with_special"].get<std::vector<std::int32_t>>();
    EXPECT_EQ(ids, want) << name << " text: " << Json(text).dump();
    EXPECT_EQ(with, want_with) << name << " text: " << Json(text).dump();
    if (name != "llama3") {  // llama3's decoded has transformers' clean-up, llama.cpp's differs
      EXPECT_EQ(gguf_tok->decode(want), c["decoded"].get<std::string>()) << name << " text: " << Json(text).dump();
      failures += gguf_tok->decode(want) != c["decoded"].get<std::string>();
    }
    failures += (ids != want) + (with != want_with);
    if (failures > 10) FAIL() << "too many mismatches for " << name;
  }
}

TEST(GgufVocab, ExportedQwen3RoundTrips) { check_round_trip("qwen3"); }
TEST(GgufVocab, ExportedLlama3RoundTrips) { check_round_trip("llama3"); }
TEST(GgufVocab, ExportedMistralRoundTrips) { check_round_trip("mistral"); }

TEST(GgufVocab, ExportChoosesModelPreAndTypes) {
  const Metadata q = exported("qwen3");
  EXPECT_EQ(q.at("tokenizer.ggml.model").s, "gpt2");
  EXPECT_EQ(q.at("tokenizer.ggml.pre").s, "qwen2");
  EXPECT_EQ(q.count("tokenizer.ggml.scores"), 0u);
  const auto& tokens = q.at("tokenizer.ggml.tokens").arr;
  const auto& types = q.at("tokenizer.ggml.token_type").arr;
  ASSERT_EQ(tokens.size(), types.size());
  EXPECT_EQ(tokens[151644].s, "<|im_start|>");
  EXPECT_EQ(types[151644].i, 3);  // control
  EXPECT_EQ(tokens[151657].s, "<tool_call>");
  EXPECT_EQ(types[151657].i, 4);  // user-defined (added, not special)
  EXPECT_EQ(types[0].i, 1);
  EXPECT_EQ(q.at("tokenizer.ggml.merges").arr[0].s.find(' ') != std::string::npos, true);
  EXPECT_FALSE(q.at("tokenizer.ggml.add_bos_token").b);
  EXPECT_EQ(q.at("tokenizer.ggml.eos_token_id").i, 151645);
  EXPECT_EQ(q.at("tokenizer.ggml.padding_token_id").i, 151643);
  EXPECT_TRUE(q.count("tokenizer.chat_template"));

  const Metadata l = exported("llama3");
  EXPECT_EQ(l.at("tokenizer.ggml.model").s, "gpt2");
  EXPECT_EQ(l.at("tokenizer.ggml.pre").s, "llama-bpe");
  EXPECT_EQ(l.at("tokenizer.ggml.bos_token_id").i, 128000);

  const Metadata m = exported("mistral");
  EXPECT_EQ(m.at("tokenizer.ggml.model").s, "llama");
  EXPECT_TRUE(m.at("tokenizer.ggml.add_space_prefix").b);
  EXPECT_TRUE(m.at("tokenizer.ggml.add_bos_token").b);
  EXPECT_EQ(m.at("tokenizer.ggml.unknown_token_id").i, 0);
  EXPECT_EQ(m.at("tokenizer.ggml.token_type").arr[0].i, 2);   // <unk>
  EXPECT_EQ(m.at("tokenizer.ggml.token_type").arr[1].i, 3);   // <s>
  EXPECT_EQ(m.at("tokenizer.ggml.token_type").arr[3].i, 6);   // <0x00>
  EXPECT_EQ(m.at("tokenizer.ggml.scores").arr[272].f, -13.0);  // "▁the": the last of merges 11..13
}

TEST(GgufVocab, BadMetadataIsAnInputErrorNamingTheKey) {
  Metadata kv = exported("qwen3");
  kv["tokenizer.ggml.pre"].s = "no-such-pre";
  try {
    Tokenizer::from_gguf_metadata(kv, "x.gguf");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'no-such-pre'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("x.gguf"), std::string::npos) << e.what();
  }
  kv = exported("qwen3");
  kv.erase("tokenizer.ggml.merges");
  EXPECT_THROW(Tokenizer::from_gguf_metadata(kv, "x.gguf"), InputError);
  kv = exported("mistral");
  kv["tokenizer.ggml.model"].s = "bert";
  EXPECT_THROW(Tokenizer::from_gguf_metadata(kv, "x.gguf"), InputError);
  kv = exported("mistral");
  kv.at("tokenizer.ggml.scores").arr.pop_back();
  EXPECT_THROW(Tokenizer::from_gguf_metadata(kv, "x.gguf"), InputError);
  kv.clear();
  EXPECT_THROW(Tokenizer::from_gguf_metadata(kv, "x.gguf"), InputError);
}

}  // namespace
}  // namespace plexus
