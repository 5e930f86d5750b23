// Tokenizers from GGUF metadata: the SentencePiece ("llama") vocabulary of the golden GGUF files
// gives llama.cpp's ids; tokenizer.json -> gguf_tokenizer_metadata -> Tokenizer gives the same
// ids as the tokenizer.json itself on every golden case (byte-level BPE and SentencePiece-style),
// and llama.cpp's ids on random texts with special tokens.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "core/error.h"
#include "core/gguf_file.h"
#include "tokenizer/gguf_special_tokens.h"
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

TEST(GgufVocab, LoadsTheGoldenGgufFiles) {
  const auto files = golden_gguf_cases();
  ASSERT_EQ(files.size(), 3u);
  for (const Json& f : files) {
    const std::string path = kGgufDir + "/" + f["file"].get<std::string>();
    EXPECT_TRUE(Tokenizer::exists_in(path));
    const auto tok = Tokenizer::load(path);
    EXPECT_EQ(tok->vocab_size(), 2048);
    EXPECT_FALSE(tok->chat_template());
    expect_llama_cpp_ids(*tok, f);
  }
  EXPECT_FALSE(Tokenizer::exists_in(kGgufDir + "/cases.jsonl"));
  // A GGUF file without tokenizer.ggml.* (weights only) has no tokenizer; load says so.
  const std::string bare = ::testing::TempDir() + "/no_vocab.gguf";
  {
    std::ofstream out(bare, std::ios::binary);
    const auto u32 = [&](std::uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
    const auto u64 = [&](std::uint64_t v) { out.write(reinterpret_cast<const char*>(&v), 8); };
    const auto str = [&](const std::string& v) { u64(v.size()); out << v; };
    out << "GGUF";
    u32(3);
    u64(0);  // tensors
    u64(1);  // key/values
    str("general.architecture");
    u32(8);  // string
    str("llama");
  }
  EXPECT_FALSE(Tokenizer::exists_in(bare));
  try {
    Tokenizer::load(bare);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.model is missing"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(Tokenizer::exists_in(kGgufDir));
  EXPECT_TRUE(Tokenizer::exists_in(test::golden_dir("mistral")));
}

// The golden files' vocabulary is the Mistral tokenizer's first 2048 pieces, converted as the
// export converts it: same pieces, scores, types and special ids.
TEST(GgufVocab, ExportedMistralIsTheGoldenGgufVocabulary) {
  const GgufFile file(kGgufDir + "/gs-llama-q8_0.gguf");
  const Metadata mine = mistral_first_2048();
  for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
    const GgufValue* theirs = file.find(key);
    ASSERT_NE(theirs, nullptr) << key;
    ASSERT_EQ(theirs->arr.size(), mine.at(key).arr.size()) << key;
    for (std::size_t i = 0; i < theirs->arr.size(); ++i) {
      const GgufValue &a = theirs->arr[i], &b = mine.at(key).arr[i];
      EXPECT_TRUE(a.s == b.s && a.i == b.i && a.f == b.f) << key << "[" << i << "]";
    }
  }
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.pre"})
    EXPECT_EQ(file.get_string(key), mine.at(key).s) << key;
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"})
    EXPECT_EQ(file.get_int(key), mine.at(key).i) << key;
  for (const char* key : {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token"})
    EXPECT_EQ(file.get_bool(key), mine.at(key).b) << key;
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
  // llama.cpp's own ids (llama_tokenize, special tokens parsed) for random texts on a GGUF file
  // holding this export (benchmarks/llama_cpp/vocab_check/README.md), raw text (no NFC) included.
  int n = 0;
  for (const Json& c : test::read_jsonl(kGgufDir + "/llama_cpp_vocab_cases.jsonl")) {
    if (c["vocab"] != name || c.contains("pre")) continue;
    ++n;
    const std::string text = c["text"].get<std::string>();
    EXPECT_EQ(gguf_tok->encode(text, false), c["ids"].get<std::vector<std::int32_t>>()) << name << " " << Json(text).dump();
  }
  EXPECT_EQ(n, 300);
}

TEST(GgufVocab, ExportedQwen3RoundTrips) { check_round_trip("qwen3"); }
TEST(GgufVocab, ExportedLlama3RoundTrips) { check_round_trip("llama3"); }
TEST(GgufVocab, ExportedMistralRoundTrips) { check_round_trip("mistral"); }

// Other tokenizer.ggml.pre names on the Llama 3 vocabulary: llama.cpp's default chain of four
// regexes, tekken (lookaheads, whole-token pieces kept) and starcoder (digits split first).
TEST(GgufVocab, OtherPreNamesGiveLlamaCppIds) {
  std::map<std::string, std::vector<Json>> by_pre;
  for (const Json& c : test::read_jsonl(kGgufDir + "/llama_cpp_vocab_cases.jsonl"))
    if (c.contains("pre")) by_pre[c["pre"].get<std::string>()].push_back(c);
  ASSERT_EQ(by_pre.size(), 3u);
  Metadata kv = exported("llama3");
  for (const auto& [pre, cases] : by_pre) {
    kv.at("tokenizer.ggml.pre").s = pre;
    const auto tok = Tokenizer::from_gguf_metadata(kv, "llama3 with pre " + pre);
    EXPECT_EQ(cases.size(), 100u);
    for (const Json& c : cases) {
      const std::string text = c["text"].get<std::string>();
      EXPECT_EQ(tok->encode(text, false), c["ids"].get<std::vector<std::int32_t>>()) << pre << " " << Json(text).dump();
    }
  }
}

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

// llama.cpp's loader types tokens by their text (tokenizer/gguf_special_tokens.h): end-of-
// generation and fill-in-the-middle spellings become CONTROL unless the file names that role's
// id; gpt-oss's become USER_DEFINED; <|end|> and </s> step back beside their families' tokens.
TEST(GgufVocab, LlamaCppTypesControlLookingTokensByTheirText) {
  using T = GgufTokenType;
  const std::vector<std::string> tokens = {"</s>", "<|im_end|>", "<|fim_prefix|>", "<PRE>", "<|channel|>", "hello",
                                           "<tool_call>", "<|end|>", "<unk>"};
  std::vector<T> types = {T::kNormal, T::kNormal, T::kNormal, T::kNormal, T::kControl, T::kNormal,
                          T::kUserDefined, T::kNormal, T::kUnknown};
  std::vector<T> got = types;
  apply_llama_cpp_token_types(tokens, got, {});
  EXPECT_EQ(got, (std::vector<T>{T::kControl, T::kControl, T::kControl, T::kControl, T::kUserDefined, T::kNormal,
                                 T::kUserDefined, T::kControl, T::kUnknown}));
  got = types;
  GgufFimIds named;
  named.pre = 5;  // the file names the prefix token: no spelling of that role is looked for
  apply_llama_cpp_token_types(tokens, got, named);
  EXPECT_EQ(got[2], T::kNormal);
  EXPECT_EQ(got[3], T::kNormal);
  // o200k_harmony: with <|return|> and <|call|>, <|end|> is user-defined; gemma4's
  // <|tool_response> makes </s> normal text again.
  const std::vector<std::string> harmony = {"<|end|>", "<|return|>", "<|call|>", "</s>", "<|tool_response>"};
  got.assign(harmony.size(), T::kControl);
  apply_llama_cpp_token_types(harmony, got, {});
  EXPECT_EQ(got, (std::vector<T>{T::kUserDefined, T::kControl, T::kControl, T::kNormal, T::kControl}));
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
