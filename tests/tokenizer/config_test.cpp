// Hand-made tokenizer.json files checked against Hugging Face's output, and load errors that
// name the file and field (unknown component types, bad JSON, missing files).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/error.h"
#include "core/mmap_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace plexus {
namespace {

namespace fs = std::filesystem;

std::string data_dir(const std::string& name) {
  return std::string(PLEXUS_SOURCE_DIR) + "/tests/tokenizer/data/" + name;
}

void check_fixture(const std::string& name) {
  const auto tok = Tokenizer::load(data_dir(name));
  const auto cases = test::read_jsonl(data_dir(name) + "/cases.jsonl");
  const auto expected = test::read_jsonl(data_dir(name) + "/expected.jsonl");
  ASSERT_EQ(cases.size(), expected.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string text = cases[i]["text"].get<std::string>();
    const auto ids = tok->encode(text, false);
    EXPECT_EQ(ids, expected[i]["ids"].get<std::vector<std::int32_t>>()) << Json(text).dump();
    EXPECT_EQ(tok->encode(text, true), expected[i]["ids_with_special"].get<std::vector<std::int32_t>>())
        << Json(text).dump();
    EXPECT_EQ(tok->decode(ids), expected[i]["decoded"].get<std::string>()) << Json(text).dump();
  }
}

TEST(TokenizerFixtures, MetaspaceAndAddedTokenFlags) { check_fixture("metaspace_added"); }
TEST(TokenizerFixtures, NormalizersSplitsAndBertProcessing) { check_fixture("pipeline_mix"); }
TEST(TokenizerFixtures, Gpt2ByteLevelWithRegexAndPrefixSpace) { check_fixture("gpt2_byte_level"); }

// A temporary directory holding `tokenizer.json` = the metaspace fixture with one field replaced.
class TempTokenizer {
 public:
  TempTokenizer(const std::string& section, const Json& value) {
    dir_ = fs::temp_directory_path() / ("plexus_tok_" + std::to_string(::getpid()) + "_" + section);
    fs::create_directories(dir_);
    Json j = Json::parse(std::ifstream(data_dir("metaspace_added") + "/tokenizer.json"));
    j[section] = value;
    std::ofstream(dir_ / "tokenizer.json") << j.dump();
  }
  ~TempTokenizer() { fs::remove_all(dir_); }
  std::string dir() const { return dir_.string(); }

 private:
  fs::path dir_;
};

std::string load_error(const std::string& path) {
  try {
    Tokenizer::load(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TokenizerLoad, UnknownPreTokenizerIsAnInputErrorNamingFileAndField) {
  TempTokenizer t("pre_tokenizer", Json{{"type", "Sequence"}, {"pretokenizers", {{{"type", "UnicodeScriptsX"}}}}});
  const std::string msg = load_error(t.dir());
  EXPECT_NE(msg.find("tokenizer.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pre_tokenizer.pretokenizers[0].type 'UnicodeScriptsX' is not supported"), std::string::npos) << msg;
}

TEST(TokenizerLoad, UnknownNormalizerDecoderAndModelAreInputErrors) {
  {
    TempTokenizer t("normalizer", Json{{"type", "Precompiled"}});
    EXPECT_NE(load_error(t.dir()).find("normalizer.type 'Precompiled'"), std::string::npos);
  }
  {
    TempTokenizer t("decoder", Json{{"type", "CTC"}});
    EXPECT_NE(load_error(t.dir()).find("decoder.type 'CTC'"), std::string::npos);
  }
  {
    TempTokenizer t("model", Json{{"type", "Unigram"}, {"vocab", Json::array()}});
    EXPECT_NE(load_error(t.dir()).find("model.type 'Unigram'"), std::string::npos);
  }
  {
    TempTokenizer t("pre_tokenizer", Json{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}});
    EXPECT_NE(load_error(t.dir()).find("does not compile"), std::string::npos);
  }
}

// "Sequence" normalizers nested `depth` deep around one Lowercase, as JSON text.
std::string nested_sequence(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += "{\"type\":\"Sequence\",\"normalizers\":[";
  text += "{\"type\":\"Lowercase\"}";
  for (int i = 0; i < depth; ++i) text += "]}";
  return text;
}

TEST(TokenizerLoad, NestedSequencesStopAtTheDepthLimit) {
  // 20000 deep crashed (stack overflow); 10000 deep took 1.47 GB for a 392 KB file.
  TempTokenizer t("normalizer", "@@N@@");
  const std::string file = t.dir() + "/tokenizer.json";
  const std::string text = read_text_file_or_empty(file);
  const std::size_t at = text.find("\"@@N@@\"");
  ASSERT_NE(at, std::string::npos);
  std::ofstream(file) << std::string(text).replace(at, 7, nested_sequence(20000));
  const std::string msg = load_error(t.dir());
  EXPECT_EQ(msg.rfind(file + ": JSON nested deeper than 256 levels", 0), 0u) << msg.substr(0, 300);
  // Well inside the limit it loads.
  std::ofstream(file) << std::string(text).replace(at, 7, nested_sequence(100));
  EXPECT_NO_THROW(Tokenizer::load(t.dir())) << load_error(t.dir());
}

TEST(TokenizerLoad, MissingAndMalformedFiles) {
  EXPECT_NE(load_error("/nonexistent/plexus/dir").find("does not exist"), std::string::npos);
  const fs::path dir = fs::temp_directory_path() / ("plexus_tok_bad_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  EXPECT_FALSE(Tokenizer::exists_in(dir.string()));
  EXPECT_NE(load_error(dir.string()).find("has no tokenizer.json"), std::string::npos);
  std::ofstream(dir / "tokenizer.json") << "{\"model\": [1, 2,";
  EXPECT_TRUE(Tokenizer::exists_in(dir.string()));
  EXPECT_NE(load_error(dir.string()).find("invalid JSON"), std::string::npos);
  std::ofstream(dir / "tokenizer.json") << "{\"version\": \"1.0\"}";
  EXPECT_NE(load_error(dir.string()).find("field 'model' is missing"), std::string::npos);
  fs::remove_all(dir);
  EXPECT_TRUE(Tokenizer::exists_in(test::golden_dir("mistral")));
}

}  // namespace
}  // namespace plexus
