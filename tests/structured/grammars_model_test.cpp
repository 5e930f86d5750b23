// 20 grammars on a random-weight model (whose unconstrained output is garbage): every finished
// output is a sentence of its grammar by the grammar's own recognizer and by an independent
// oracle written by hand (a regular expression, or code for the Unicode ones); outputs cut by
// --max-tokens end with "length". Then the CLI flags and their bad-input errors.
#include <gtest/gtest.h>

#include <functional>
#include <fstream>
#include <regex>

#include "core/json.h"
#include "structured/byte_matcher.h"
#include "structured/grammar_parser.h"
#include "structured_model_fixture.h"

namespace plexus::structured {
namespace {

std::u32string code_points(const std::string& s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

struct GrammarCase {
  std::string grammar;
  std::function<bool(const std::string&)> oracle;
};

std::function<bool(const std::string&)> re(const std::string& pattern) {
  return [pattern](const std::string& s) { return std::regex_match(s, std::regex(pattern)); };
}

std::vector<GrammarCase> cases() {
  return {
      {"root ::= \"yes\" | \"no\"\n", re("yes|no")},
      {"root ::= [0-9]{1,4}\n", re("[0-9]{1,4}")},
      {"root ::= \"(\" [a-c]{1,3} \")\"\n", re("\\([a-c]{1,3}\\)")},
      {"root ::= [a-z]{1,5} \"@\" [a-z]{1,5} \".\" (\"com\" | \"org\")\n", re("[a-z]{1,5}@[a-z]{1,5}\\.(com|org)")},
      {"root ::= [0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01])\n",
       re("[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])")},
      {"root ::= \"[\" item (\",\" item){0,3} \"]\"\nitem ::= [0-9]{1,2}\n", re("\\[[0-9]{1,2}(,[0-9]{1,2}){0,3}\\]")},
      {"root ::= p1\np1 ::= \"(\" p2? \")\"\np2 ::= \"(\" p3? \")\"\np3 ::= \"()\"\n", re("\\((\\((\\(\\))?\\))?\\)")},
      {"root ::= \"#\" [0-9a-fA-F]{6}\n", re("#[0-9a-fA-F]{6}")},
      {"root ::= [α-ω]{1,3}\n",
       [](const std::string& s) {
         const std::u32string cps = code_points(s);
         if (cps.empty() || cps.size() > 3) return false;
         for (char32_t c : cps) {
           if (c < U'α' || c > U'ω') return false;
         }
         return true;
       }},
      {"root ::= \"\\\"\" [^\"\\\\]{0,5} \"\\\"\"\n",
       [](const std::string& s) {
         if (s.size() < 2 || s.front() != '"' || s.back() != '"') return false;
         const std::string mid = s.substr(1, s.size() - 2);
         return mid.find_first_of("\"\\") == std::string::npos && code_points(mid).size() <= 5;
       }},
      {"root ::= kv (\";\" kv){0,2}\nkv ::= [a-z]{1,3} \"=\" [0-9]{1,3}\n", re("[a-z]{1,3}=[0-9]{1,3}(;[a-z]{1,3}=[0-9]{1,3}){0,2}")},
      {"root ::= b (\" and \" b){0,2}\nb ::= \"true\" | \"false\"\n", re("(true|false)( and (true|false)){0,2}")},
      {"root ::= oct \".\" oct \".\" oct \".\" oct\noct ::= [0-9]{1,3}\n", re("[0-9]{1,3}(\\.[0-9]{1,3}){3}")},
      {"root ::= \"-\"? (\"0\" | [1-9] [0-9]{0,3}) (\".\" [0-9]{1,2})?\n", re("-?(0|[1-9][0-9]{0,3})(\\.[0-9]{1,2})?")},
      {"root ::= \"ab\" | \"abc\" | \"abcd\" | \"b\"\n", re("ab|abc|abcd|b")},
      {"root ::= \"\\t\" [a-z]? \"\\n\"\n", re("\t[a-z]?\n")},
      {"root ::= \"red\"   # a color\n       | \"green\"\n       | \"blue\"\n", re("red|green|blue")},
      {"root ::= \"<\" .{1,3} \">\"\n",
       [](const std::string& s) {
         if (s.size() < 2 || s.front() != '<' || s.back() != '>') return false;
         const std::size_t n = code_points(s.substr(1, s.size() - 2)).size();
         return n >= 1 && n <= 3;
       }},
      {"root ::= \"[\" (s (\",\" s){0,2})? \"]\"\ns ::= \"\\\"\" [a-z]{0,3} \"\\\"\"\n", re("\\[(\"[a-z]{0,3}\"(,\"[a-z]{0,3}\"){0,2})?\\]")},
      {"root ::= (\"ab\"){2} \"-\" [xyz]{1,3}\n", re("abab-[xyz]{1,3}")},
  };
}

class StructuredGrammars : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = new StructuredModel(); }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static StructuredModel* model_;
};
StructuredModel* StructuredGrammars::model_ = nullptr;

TEST_F(StructuredGrammars, EveryOutputIsInTheLanguage) {
  const std::vector<GrammarCase> all = cases();
  ASSERT_EQ(all.size(), 20u);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto compiled = model_->cache().get(all[i].grammar, model_->vocab());
    int finished = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      const GrammarOutput out = model_->generate(compiled, seed + 10 * i, 48);
      if (out.finish_reason != "stop") {
        ASSERT_EQ(out.finish_reason, "length");
        continue;
      }
      ++finished;
      EXPECT_TRUE(grammar_accepts(compiled->grammar(), out.text)) << "grammar " << i << ": " << out.text;
      EXPECT_TRUE(all[i].oracle(out.text)) << "grammar " << i << " (oracle): " << Json(out.text).dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    EXPECT_GE(finished, 3) << "grammar " << i;
  }
  // The oracles are not vacuous: each rejects a near miss.
  EXPECT_FALSE(all[0].oracle("yess"));
  EXPECT_FALSE(all[9].oracle("\"a\"b\""));
  EXPECT_FALSE(all[8].oracle("αβγδ"));
}

TEST_F(StructuredGrammars, AnOutputCutByMaxTokensEndsWithLength) {
  const auto compiled = model_->cache().get("root ::= \"{\" [a-z]{40} \"}\"\n", model_->vocab());
  const GrammarOutput out = model_->generate(compiled, 3, 4);
  EXPECT_EQ(out.finish_reason, "length");
  EXPECT_FALSE(grammar_accepts(compiled->grammar(), out.text));
  ByteMatcher m(compiled->grammar());
  EXPECT_TRUE(m.advance(out.text)) << out.text;  // a prefix of a sentence
}

// The CLI on the same model: flags, the JSON it prints, and bad input.
TEST_F(StructuredGrammars, GenerateFlags) {
  testing::TempDir dir("structured_cli");
  const std::string model = testing::shell_quote(model_->model_dir());
  {
    std::ofstream(dir / "g.gbnf") << "root ::= \"[\" [0-9]{1,3} (\",\" [0-9]{1,3}){0,2} \"]\"\n";
    const testing::ProcessResult r = testing::run_plexus("generate " + model + " --prompt hi --max-tokens 30 --temperature 1 --seed 4 --json --grammar " + testing::shell_quote(dir / "g.gbnf"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json j = Json::parse(r.out);
    EXPECT_EQ(j["finish_reason"], "stop");
    std::string text = j["text"];
    text = text.substr(0, text.find("</s>"));
    EXPECT_TRUE(std::regex_match(text, std::regex("\\[[0-9]{1,3}(,[0-9]{1,3}){0,2}\\]"))) << text;
  }
  {
    std::ofstream(dir / "s.json") << R"({"type":"object","properties":{"n":{"type":"integer","minimum":-5,"maximum":5}},"required":["n"]})";
    const testing::ProcessResult r = testing::run_plexus("generate " + model + " --prompt hi --max-tokens 30 --json --json-schema " + testing::shell_quote(dir / "s.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json j = Json::parse(r.out);
    EXPECT_EQ(j["finish_reason"], "stop");
    std::string text = j["text"];
    const Json value = Json::parse(text.substr(0, text.find("</s>")));
    EXPECT_GE(value["n"].get<int>(), -5);
    EXPECT_LE(value["n"].get<int>(), 5);
  }
  {  // Sequences decoded together: each with its own matcher, each output valid.
    const testing::ProcessResult r = testing::run_plexus("generate " + model + " --prompt hi --max-tokens 40 --temperature 1 --seed 9 --max-sequences 4 --json --json-schema " + testing::shell_quote(dir / "s.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json j = Json::parse(r.out);
    ASSERT_EQ(j["sequences"].size(), 4u);
    for (const Json& seq : j["sequences"]) {
      EXPECT_EQ(seq["finish_reason"], "stop");
      std::string text = seq["text"];
      const Json value = Json::parse(text.substr(0, text.find("</s>")));
      EXPECT_EQ(value.size(), 1u) << text;
      EXPECT_GE(value["n"].get<int>(), -5);
      EXPECT_LE(value["n"].get<int>(), 5);
    }
  }
  {
    const testing::ProcessResult r = testing::run_plexus("generate " + model + " --prompt hi --max-tokens 3 --json --json-object");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Json::parse(r.out)["finish_reason"], "length");  // no object closes in 3 tokens and 1 byte each at most
  }
  // Bad input: exit 2 with the place.
  std::ofstream(dir / "bad.gbnf") << "root ::= \"a\"\nitem ::= [a-\n";
  testing::ProcessResult r = testing::run_plexus("generate " + model + " --prompt hi --grammar " + testing::shell_quote(dir / "bad.gbnf"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.gbnf line 2, column 10: unterminated character class"), std::string::npos) << r.err;
  std::ofstream(dir / "bad.json") << R"({"type":"object","properties":{"d":{"type":"string","format":"date"}}})";
  r = testing::run_plexus("generate " + model + " --prompt hi --json-schema " + testing::shell_quote(dir / "bad.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("at '/properties/d/format': keyword 'format' is not supported"), std::string::npos) << r.err;
  r = testing::run_plexus("generate " + model + " --prompt hi --json-object --grammar " + testing::shell_quote(dir / "g.gbnf"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give at most one of --grammar, --json-schema and --json-object"), std::string::npos) << r.err;
  r = testing::run_plexus("generate " + model + " --prompt hi --json-object --ignore-eos");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("structured output needs an end-of-sequence token"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace plexus::structured
