// JSON Schema -> grammar: which texts each construct accepts (the byte recognizer on the
// compiled grammar), and the InputErrors naming the keyword and its JSON pointer.
#include <gtest/gtest.h>

#include "core/error.h"
#include "structured/byte_matcher.h"
#include "structured/grammar_parser.h"
#include "structured/json_schema.h"

namespace plexus::structured {
namespace {

Grammar compile(const std::string& schema) { return parse_grammar(json_schema_grammar(Json::parse(schema))); }

std::string schema_error_of(const std::string& schema) {
  try {
    json_schema_grammar(Json::parse(schema), "s.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JsonSchema, ObjectsWithRequiredAndOptionalProperties) {
  const Grammar g = compile(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"},"c":{"type":"null"}},
                                "required":["b"],"additionalProperties":false})");
  EXPECT_TRUE(grammar_accepts(g, R"({"b":true})"));
  EXPECT_TRUE(grammar_accepts(g, R"({"a":-3,"b":false,"c":null})"));
  EXPECT_TRUE(grammar_accepts(g, R"({"b":true,"c":null})"));
  EXPECT_FALSE(grammar_accepts(g, R"({"a":1})"));        // b is required
  EXPECT_FALSE(grammar_accepts(g, R"({"b":true,})"));
  EXPECT_FALSE(grammar_accepts(g, R"({,"b":true})"));
  EXPECT_FALSE(grammar_accepts(g, R"({"b":1})"));
}

TEST(JsonSchema, ArraysStringsEnumsConstAndUnions) {
  const Grammar arr = compile(R"({"type":"array","items":{"enum":["x",1,null]},"minItems":1,"maxItems":2})");
  EXPECT_FALSE(grammar_accepts(arr, "[]"));
  EXPECT_TRUE(grammar_accepts(arr, R"(["x"])"));
  EXPECT_TRUE(grammar_accepts(arr, R"([1,null])"));
  EXPECT_FALSE(grammar_accepts(arr, R"([1,1,1])"));
  const Grammar str = compile(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_FALSE(grammar_accepts(str, R"("a")"));
  EXPECT_TRUE(grammar_accepts(str, R"("aé")"));  // two characters, three bytes
  EXPECT_TRUE(grammar_accepts(str, R"("a\nb")"));
  EXPECT_FALSE(grammar_accepts(str, R"("abcd")"));
  const Grammar c = compile(R"({"const":{"k":[1,"two"]}})");
  EXPECT_TRUE(grammar_accepts(c, R"({"k":[1,"two"]})"));
  const Grammar any = compile(R"({"anyOf":[{"type":"integer","minimum":5,"maximum":7},{"type":"string","maxLength":1}]})");
  EXPECT_TRUE(grammar_accepts(any, "6"));
  EXPECT_TRUE(grammar_accepts(any, R"("z")"));
  EXPECT_FALSE(grammar_accepts(any, "8"));
  const Grammar typed = compile(R"({"type":["string","null"],"maxLength":1})");
  EXPECT_TRUE(grammar_accepts(typed, "null"));
  EXPECT_TRUE(grammar_accepts(typed, R"("q")"));
}

TEST(JsonSchema, RefsToDefsIncludingRecursion) {
  const Grammar g = compile(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer","minimum":0,"maximum":9},
      "next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"]}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(grammar_accepts(g, R"({"next":null,"v":1})"));
  EXPECT_TRUE(grammar_accepts(g, R"({"next":{"next":null,"v":2},"v":1})"));
  EXPECT_FALSE(grammar_accepts(g, R"({"next":{"v":2},"v":1})"));
}

TEST(JsonSchema, JsonObjectMode) {
  const Grammar g = parse_grammar(json_object_grammar());
  EXPECT_TRUE(grammar_accepts(g, R"({})"));
  EXPECT_TRUE(grammar_accepts(g, R"({"a":[1,2.5,{"b":null}],"c":"d"})"));
  EXPECT_FALSE(grammar_accepts(g, "[1]"));
  EXPECT_FALSE(grammar_accepts(g, R"({"a":})"));
}

TEST(JsonSchema, UnsupportedAndInvalidSchemasNameKeywordAndPlace) {
  EXPECT_EQ(schema_error_of(R"({"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}})").rfind(
                "s.json at '/properties/a/pattern': keyword 'pattern' is not supported (supported: type, properties,", 0),
            0u);
  EXPECT_EQ(schema_error_of(R"({"type":"strin"})"),
            "s.json at '/type': unknown type 'strin' (known: null, boolean, string, integer, number, object, array)");
  EXPECT_EQ(schema_error_of(R"({"type":"array","items":{"type":"integer"},"minItems":3,"maxItems":1})"),
            "s.json at '/minItems': minItems 3 exceeds maxItems 1: no array satisfies it");
  EXPECT_EQ(schema_error_of(R"({"$ref":"#/$defs/missing"})"), "s.json at '/$ref': $ref '#/$defs/missing' names no schema in $defs");
  EXPECT_EQ(schema_error_of(R"({"$ref":"http://x/y.json"})"),
            "s.json at '/$ref': $ref 'http://x/y.json' is not supported (only #/$defs/NAME and #/definitions/NAME)");
  EXPECT_EQ(schema_error_of(R"({"type":"integer","minimum":5,"maximum":4})"), "s.json at '/': the minimum is above the maximum: no number satisfies it");
  EXPECT_EQ(schema_error_of(R"({"enum":[]})"), "s.json at '/enum': enum must be a non-empty array");
  EXPECT_EQ(schema_error_of(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})"),
            "s.json at '/oneOf/1': oneOf branches whose values may share a JSON type are not supported (a value could match two); use anyOf, or branches of different types");
  EXPECT_EQ(schema_error_of(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["b"],"additionalProperties":false})"),
            "s.json at '/required': 'b' is required but additionalProperties is false and properties does not list it");
  EXPECT_EQ(schema_error_of(R"({"anyOf":[{"type":"integer"}],"minimum":3})"),
            "s.json at '/minimum': 'minimum' beside 'anyOf' is not supported (put it inside each branch)");
  EXPECT_EQ(schema_error_of(R"({"type":"string","maxLength":-1})"), "s.json at '/maxLength': maxLength must be a non-negative integer");
  EXPECT_EQ(schema_error_of(R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"})").rfind(
                "s.json at '/$ref': $refs that lead back to themselves before any value is written", 0),
            0u);
  EXPECT_EQ(schema_error_of("false"), "s.json at '/': the schema false accepts no value");
}

}  // namespace
}  // namespace plexus::structured
