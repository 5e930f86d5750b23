// The grammar text format: what each construct matches (checked with the byte recognizer), and
// the line and column of every kind of syntax error.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "structured/byte_matcher.h"
#include "structured/grammar_parser.h"

namespace plexus::structured {
namespace {

bool accepts(const std::string& grammar, const std::string& text) { return grammar_accepts(parse_grammar(grammar), text); }

std::string error_of(const std::string& grammar) {
  try {
    parse_grammar(grammar, "g.gbnf");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GrammarParser, LiteralsAlternationAndGroups) {
  const std::string g = "root ::= \"a\" ( \"b\" | \"cd\" ) \"e\"\n";
  EXPECT_TRUE(accepts(g, "abe"));
  EXPECT_TRUE(accepts(g, "acde"));
  EXPECT_FALSE(accepts(g, "ace"));
  EXPECT_FALSE(accepts(g, "ab"));
  EXPECT_FALSE(accepts(g, "abee"));
}

TEST(GrammarParser, Repetitions) {
  EXPECT_TRUE(accepts("root ::= \"x\"*", ""));
  EXPECT_TRUE(accepts("root ::= \"x\"*", "xxxx"));
  EXPECT_FALSE(accepts("root ::= \"x\"+", ""));
  EXPECT_TRUE(accepts("root ::= \"x\"+", "xx"));
  EXPECT_TRUE(accepts("root ::= \"x\"? \"y\"", "y"));
  EXPECT_TRUE(accepts("root ::= \"x\"? \"y\"", "xy"));
  EXPECT_FALSE(accepts("root ::= \"x\"? \"y\"", "xxy"));
  const std::string counted = "root ::= \"ab\"{2,3}";
  EXPECT_FALSE(accepts(counted, "ab"));
  EXPECT_TRUE(accepts(counted, "abab"));
  EXPECT_TRUE(accepts(counted, "ababab"));
  EXPECT_FALSE(accepts(counted, "abababab"));
  EXPECT_TRUE(accepts("root ::= [0-9]{3}", "123"));
  EXPECT_FALSE(accepts("root ::= [0-9]{3}", "12"));
  EXPECT_TRUE(accepts("root ::= [0-9]{2,}", "12345"));
  EXPECT_FALSE(accepts("root ::= [0-9]{2,}", "1"));
}

TEST(GrammarParser, ClassesEscapesAndUnicode) {
  EXPECT_TRUE(accepts("root ::= [a-c]+", "abcab"));
  EXPECT_FALSE(accepts("root ::= [a-c]+", "abd"));
  EXPECT_TRUE(accepts("root ::= [^\"\\\\]*", "héllo wörld"));
  EXPECT_FALSE(accepts("root ::= [^\"\\\\]*", "a\"b"));
  EXPECT_FALSE(accepts("root ::= [^\"\\\\]*", "a\\b"));
  EXPECT_TRUE(accepts("root ::= \"\\t\\n\\\"\\x41\\u00e9\\U0001F600\"", "\t\n\"A\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_TRUE(accepts("root ::= [α-ω]{2}", "αω"));
  EXPECT_FALSE(accepts("root ::= [α-ω]{2}", "aω"));
  EXPECT_TRUE(accepts("root ::= .", "\xE4\xB8\xAD"));  // one character of three bytes
  EXPECT_FALSE(accepts("root ::= .", "\xE4\xB8"));     // an incomplete one
  EXPECT_FALSE(accepts("root ::= .", "\xED\xA0\x80"));  // a surrogate is no character
  EXPECT_TRUE(accepts("root ::= [^a]", "\xF4\x8F\xBF\xBF"));  // U+10FFFF
}

TEST(GrammarParser, RulesCommentsAndContinuationLines) {
  const std::string g =
      "# colors\n"
      "root ::= color (\",\" color)*   # a list\n"
      "color ::= \"red\"\n"
      "        | \"green\"\n"
      "        | \"blue\"\n"
      "\n"
      "unused ::= ( \"x\"\n"
      "   \"y\" )\n";
  EXPECT_TRUE(accepts(g, "red,blue,green"));
  EXPECT_FALSE(accepts(g, "red,"));
  EXPECT_FALSE(accepts(g, "xy"));
}

TEST(GrammarParser, RightRecursionAndEmptyAlternatives) {
  const std::string g = "root ::= \"(\" root \")\" | \"\"\n";
  EXPECT_TRUE(accepts(g, ""));
  EXPECT_TRUE(accepts(g, "((()))"));
  EXPECT_FALSE(accepts(g, "(()"));
}

TEST(GrammarParser, ErrorsGiveLineAndColumn) {
  EXPECT_EQ(error_of("root ::= \"abc\n"), "g.gbnf line 1, column 10: unterminated string literal (no closing '\"' on its line)");
  EXPECT_EQ(error_of("root ::= [a-z\n"), "g.gbnf line 1, column 10: unterminated character class (no closing ']' on its line)");
  EXPECT_EQ(error_of("root ::= \"a\"\nitem = \"b\"\n"), "g.gbnf line 2, column 6: expected '::=' after the rule name 'item'");
  EXPECT_EQ(error_of("root ::= ( \"a\" \n"), "g.gbnf line 2, column 1: expected ')' to close the group opened at line 1, column 10, found end of the grammar");
  EXPECT_EQ(error_of("root ::= item\n"), "g.gbnf line 1, column 10: rule 'item' is not defined");
  EXPECT_EQ(error_of("x ::= \"a\"\n"), "g.gbnf line 1, column 1: the grammar has no rule named 'root' (where matching starts)");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\"\n"), "g.gbnf line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(error_of("root ::= \"a\"{3,1}\n"), "g.gbnf line 1, column 13: repetition {m,n} needs m <= n");
  EXPECT_EQ(error_of("root ::= \"a\" \\q\n"), "g.gbnf line 1, column 14: unexpected '\\' (expected a string \"...\", a class [...], a rule name, '(' or '.')");
  EXPECT_EQ(error_of("root ::= \"\\q\"\n"), "g.gbnf line 1, column 11: unknown escape '\\q' (known: \\n \\t \\r \\\\ \\\" \\' \\[ \\] \\- \\^ \\xHH \\uHHHH \\UHHHHHHHH)");
  EXPECT_EQ(error_of("root ::= \"a\"\nitem ::= [a-\n"), "g.gbnf line 2, column 10: unterminated character class (no closing ']' on its line)");
  EXPECT_EQ(error_of("root ::= [z-a]\n"), "g.gbnf line 1, column 11: character range is backwards (its end comes before its start)");
  EXPECT_EQ(error_of("root ::= \"é\" )\n"), "g.gbnf line 1, column 14: unexpected ')'");
  EXPECT_EQ(error_of(""), "g.gbnf line 1, column 1: the grammar defines no rules (it needs at least `root ::= ...`)");
  EXPECT_EQ(error_of("root ::= \"a\"{99999}\n"), "g.gbnf line 1, column 14: repetition count above the limit of 10000");
}

TEST(GrammarParser, LeftRecursionIsRefused) {
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"\n").find("rule 'root' is left-recursive"), std::string::npos);
  // Through a rule that may match nothing.
  EXPECT_NE(error_of("root ::= opt root \"a\" | \"b\"\nopt ::= \"x\"?\n").find("left-recursive"), std::string::npos);
}

// Mangled grammar text is either a grammar or an InputError, never anything else; what parses
// runs on random bytes without trouble.
TEST(GrammarParser, MangledTextParsesOrIsAnInputError) {
  const std::string base =
      "root ::= \"[\" item (\",\" item){0,3} \"]\" | [^\"\\\\]* obj?\n"
      "item ::= [0-9]+ (\".\" [0-9]{1,2})? | \"\\u00e9\" .\n"
      "obj  ::= \"{\" ( [a-z] \":\" item )* \"}\"   # comment\n";
  ASSERT_NO_THROW(parse_grammar(base));
  std::mt19937_64 rng(36);
  const std::string alphabet = "\"[]()|*+?{},.-^\\:=# \n\tax09\xC3\xA9";
  int parsed = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = base;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 3); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (text.empty()) text = "x";
    }
    try {
      const Grammar g = parse_grammar(text);
      ++parsed;
      std::string input;
      for (int k = 0, n = static_cast<int>(rng() % 12); k < n; ++k) input += alphabet[rng() % alphabet.size()];
      grammar_accepts(g, input);
    } catch (const InputError& e) {
      ++refused;
      EXPECT_EQ(std::string(e.what()).rfind("grammar", 0), 0u) << e.what();
    }
  }
  EXPECT_GT(parsed, 100);
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace plexus::structured
