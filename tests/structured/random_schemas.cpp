// structured_random_schemas OUT.jsonl [COUNT]: COUNT (200) random JSON Schemas from a fixed seed
// (objects, arrays, enums, const, bounded integers and numbers, strings, nested, required,
// anyOf/oneOf, $ref), each generated under on the random-weight model (sampled: its unconstrained
// output is garbage) and written with its output for ajv (validators/validate_outputs.mjs). Exits 1
// when an output did not finish, is not JSON or is refused by the grammar's own recognizer.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <algorithm>
#include <random>

#include "core/json.h"
#include "structured/byte_matcher.h"
#include "structured/json_schema.h"
#include "structured_model_fixture.h"

namespace plexus::structured {
namespace {

class SchemaMaker {
 public:
  explicit SchemaMaker(std::uint64_t seed) : rng_(seed) {}

  Json top() {
    defs_ = Json::object();
    Json s = object(0);
    if (!defs_.empty()) s["$defs"] = defs_;
    return s;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  bool coin() { return rng_() % 2 == 0; }
  std::string word() {
    static const char* words[] = {"red", "green", "blue", "a b", "x", "é", "on", "off", "ok", "\"q\"", ""};
    return words[pick(11)];
  }
  double decimal(int lo, int hi) { return lo + pick((hi - lo) * 4 + 1) * 0.25; }

  Json scalar_value() {
    switch (pick(5)) {
      case 0: return word();
      case 1: return pick(200) - 100;
      case 2: return decimal(-10, 10);
      case 3: return coin();
      default: return nullptr;
    }
  }

  Json any(int depth) {
    const int kinds = depth < 3 ? 13 : 9;
    switch (pick(kinds)) {
      case 0: {
        Json e = Json::array();
        for (int i = 0, n = 1 + pick(4); i < n; ++i) e.push_back(word());
        return {{"type", "string"}, {"enum", e}};
      }
      case 1: {
        Json e = Json::array();
        for (int i = 0, n = 1 + pick(4); i < n; ++i) e.push_back(scalar_value());
        return {{"enum", e}};
      }
      case 2: {
        const int min = pick(3);
        return {{"type", "string"}, {"minLength", min}, {"maxLength", min + pick(5)}};
      }
      case 3: {
        Json s = {{"type", "integer"}};
        const int lo = pick(2001) - 1000, hi = lo + pick(300);
        const int form = pick(4);
        if (form != 1) s[pick(3) == 0 ? "exclusiveMinimum" : "minimum"] = lo;
        if (form != 2) s[pick(3) == 0 ? "exclusiveMaximum" : "maximum"] = form == 0 ? hi + 1 : hi;
        return s;
      }
      case 4: {
        Json s = {{"type", "number"}};
        const double lo = decimal(-50, 50);
        const double width = pick(3) == 0 ? 0.25 * (1 + pick(3)) : decimal(1, 100);
        const int form = pick(4);
        if (form != 1) s[pick(3) == 0 ? "exclusiveMinimum" : "minimum"] = lo;
        if (form != 2) s[pick(3) == 0 ? "exclusiveMaximum" : "maximum"] = lo + width;
        return s;
      }
      case 5: return {{"type", "boolean"}};
      case 6: return {{"type", "null"}};
      case 7: return {{"const", scalar_value()}};
      case 8: {
        Json a = {{"anyOf", Json::array({any(depth + 1), any(depth + 1)})}};
        return a;
      }
      case 9: return object(depth + 1);
      case 10: {
        Json s = {{"type", "array"}, {"items", any(depth + 1)}};
        const int min = pick(3);
        if (coin()) s["minItems"] = min;
        s["maxItems"] = min + pick(3);
        return s;
      }
      case 11: {  // oneOf over disjoint types
        return {{"oneOf", Json::array({{{"type", "integer"}, {"minimum", 0}, {"maximum", 9}},
                                       {{"type", "string"}, {"maxLength", 3}},
                                       {{"type", "null"}}})}};
      }
      default: {
        const std::string name = "d" + std::to_string(defs_.size());
        defs_[name] = true;  // the name taken before the definition's own refs pick theirs
        defs_[name] = any(depth + 1);
        return {{"$ref", "#/$defs/" + name}};
      }
    }
  }

  Json object(int depth) {
    Json props = Json::object();
    Json required = Json::array();
    static const char* names[] = {"id", "name", "tags", "score", "ok", "kind", "child", "items", "x y", "ü"};
    const int n = 1 + pick(4);
    for (int i = 0; i < n; ++i) {
      const std::string name = names[pick(10)];
      props[name] = any(depth);
      if (pick(3) != 0 && std::find(required.begin(), required.end(), name) == required.end()) required.push_back(name);
    }
    Json s = {{"type", "object"}, {"properties", props}};
    if (!required.empty()) s["required"] = required;
    if (coin()) s["additionalProperties"] = false;
    return s;
  }

  std::mt19937_64 rng_;
  Json defs_;
};

int run(const std::string& out_path, int count) {
  const auto start = std::chrono::steady_clock::now();
  StructuredModel model;
  SchemaMaker maker(36);
  std::ofstream out(out_path);
  int failures = 0;
  std::size_t bytes = 0;
  for (int i = 0; i < count; ++i) {
    const Json schema = maker.top();
    const std::string grammar = json_schema_grammar(schema, "schema " + std::to_string(i));
    const auto compiled = model.cache().get(grammar, model.vocab());
    const GrammarOutput o = model.generate(compiled, static_cast<std::uint64_t>(i), 400);
    bytes += o.text.size();
    out << Json{{"schema", schema}, {"text", o.text}, {"finish_reason", o.finish_reason}}.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    std::string problem;
    if (o.finish_reason != "stop") problem = "finished by " + o.finish_reason;
    else if (!grammar_accepts(compiled->grammar(), o.text)) problem = "refused by the grammar's recognizer";
    else if (!Json::accept(o.text)) problem = "not JSON";
    if (!problem.empty()) {
      ++failures;
      std::fprintf(stderr, "schema %d: %s\n  %s\n  output: %s\n", i, problem.c_str(), schema.dump().c_str(), o.text.c_str());
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d schemas, %d failures, %zu output bytes, %.2f s\n", count, failures, bytes, s);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace plexus::structured

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: structured_random_schemas OUT.jsonl [COUNT]\n");
    return 2;
  }
  try {
    return plexus::structured::run(argv[1], argc > 2 ? std::atoi(argv[2]) : 200);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "structured_random_schemas: %s\n", e.what());
    return 1;
  }
}
