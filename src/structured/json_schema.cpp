// Each schema node becomes a GBNF expression; objects, arrays, strings, $refs and unions get
// rules of their own (named by a counter), the shared JSON value rules come once at the end.
#include "structured/json_schema.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "core/error.h"
#include "structured/grammar_parser.h"
#include "structured/number_range.h"

namespace plexus::structured {

namespace {

// Compact JSON, any value. json-char: one code point, no \u escapes (so lengths count exactly).
constexpr const char* kJsonRules = R"(json-value ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"
json-object ::= "{" ( json-string ":" json-value ( "," json-string ":" json-value )* )? "}"
json-array ::= "[" ( json-value ( "," json-value )* )? "]"
json-string ::= "\"" json-char* "\""
json-char ::= [^"\\\x00-\x1F] | "\\" ["\\/bfnrt]
json-number ::= "-"? json-int ( "." [0-9]{1,15} )?
json-int ::= "0" | [1-9] [0-9]{0,15}
)";

constexpr std::int64_t kIntCap = 999'999'999'999'999;  // integers without bounds: at most 15 digits
constexpr std::uint64_t kMaxCount = 10000;                // minItems/maxItems/minLength/maxLength limit

// A GBNF literal of `bytes`.
std::string literal(const std::string& bytes) {
  std::string s = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      s += '\\';
      s += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      s += buf;
    } else {
      s += static_cast<char>(c);
    }
  }
  return s + "\"";
}

std::string escape_pointer_token(const std::string& t) {
  std::string s;
  for (char c : t) {
    if (c == '~') s += "~0";
    else if (c == '/') s += "~1";
    else s += c;
  }
  return s;
}

enum TypeBit : unsigned { kNull = 1, kBool = 2, kObject = 4, kArray = 8, kString = 16, kNumber = 32 };

unsigned type_bit_of_value(const Json& v) {
  if (v.is_null()) return kNull;
  if (v.is_boolean()) return kBool;
  if (v.is_object()) return kObject;
  if (v.is_array()) return kArray;
  if (v.is_string()) return kString;
  return kNumber;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, std::string source) : root_(root), source_(std::move(source)) {}

  std::string grammar(const Json& schema) {
    const std::string top = compile(schema, "");
    std::string text = "root ::= " + top + "\n";
    for (const auto& [name, body] : rules_) text += name + " ::= " + body + "\n";
    return text + kJsonRules;
  }

 private:
  [[noreturn]] void fail(const std::string& pointer, const std::string& what) const {
    throw InputError(source_ + " at '" + (pointer.empty() ? "/" : pointer) + "': " + what);
  }

  std::string new_rule(const std::string& body) {
    const std::string name = "s" + std::to_string(counter_++);
    rules_[name] = body;
    return name;
  }

  static bool annotation(const std::string& k) {
    static const std::set<std::string> keys = {"title", "description", "$schema", "$id", "$comment", "default",
                                               "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};
    return keys.count(k) > 0;
  }

  void check_keywords(const Json& s, const std::string& ptr) const {
    static const std::set<std::string> supported = {
        "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "enum", "const",
        "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "$ref"};
    for (const auto& [k, v] : s.items()) {
      if (!supported.count(k) && !annotation(k)) {
        fail(ptr + "/" + escape_pointer_token(k), "keyword '" + k +
                                                      "' is not supported (supported: type, properties, required, additionalProperties, items, "
                                                      "minItems, maxItems, enum, const, minLength, maxLength, minimum, maximum, exclusiveMinimum, "
                                                      "exclusiveMaximum, anyOf, oneOf, $ref to $defs/definitions)");
      }
    }
  }

  std::uint64_t count(const Json& s, const char* key, const std::string& ptr, std::uint64_t dflt) const {
    if (!s.contains(key)) return dflt;
    const Json& v = s[key];
    const std::string p = ptr + "/" + key;
    if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())) fail(p, std::string(key) + " must be a non-negative integer");
    const double d = v.get<double>();
    if (d < 0) fail(p, std::string(key) + " must be a non-negative integer");
    if (d > static_cast<double>(kMaxCount)) fail(p, std::string(key) + " above " + std::to_string(kMaxCount) + " is not supported");
    return static_cast<std::uint64_t>(d);
  }

  // The schema (a JSON value: object or boolean) as a GBNF expression.
  std::string compile(const Json& s, const std::string& ptr) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(ptr, "the schema false accepts no value");
      return "json-value";
    }
    if (!s.is_object()) fail(ptr, "a schema must be an object or a boolean");
    check_keywords(s, ptr);
    // $ref, const, enum, anyOf and oneOf stand alone (const and enum may name their type).
    for (const char* key : {"$ref", "const", "enum", "anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      for (const auto& [k, v] : s.items()) {
        const bool type_ok = k == "type" && (std::string(key) == "const" || std::string(key) == "enum");
        if (k != key && !annotation(k) && !type_ok) {
          fail(ptr + "/" + escape_pointer_token(k), "'" + k + "' beside '" + key + "' is not supported (" +
                                                        (std::string(key) == "$ref" || std::string(key) == "const" || std::string(key) == "enum"
                                                             ? std::string("move it into the referenced schema or drop it")
                                                             : std::string("put it inside each branch")) + ")");
        }
      }
    }
    if (s.contains("$ref")) return ref(s, ptr);
    if (s.contains("const")) {
      if (!has_type(s, s["const"], ptr)) fail(ptr + "/const", "the const value does not have the schema's type");
      return literal(s["const"].dump());
    }
    if (s.contains("enum")) return enumeration(s, ptr);
    if (s.contains("anyOf")) return union_of(s, "anyOf", ptr);
    if (s.contains("oneOf")) return union_of(s, "oneOf", ptr);
    std::vector<std::string> types;
    if (!s.contains("type")) {
      // Untyped: by the keywords present, else any value.
      if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) types.push_back("object");
      else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) types.push_back("array");
      else if (s.contains("minLength") || s.contains("maxLength")) types.push_back("string");
      else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum")) types.push_back("number");
      else return "json-value";
    } else if (s["type"].is_string()) {
      types.push_back(s["type"].get<std::string>());
    } else if (s["type"].is_array() && !s["type"].empty()) {
      for (const Json& t : s["type"]) {
        if (!t.is_string()) fail(ptr + "/type", "type must be a string or an array of strings");
        types.push_back(t.get<std::string>());
      }
    } else {
      fail(ptr + "/type", "type must be a string or a non-empty array of strings");
    }
    std::vector<std::string> alts;
    for (const std::string& t : types) alts.push_back(typed(s, t, ptr));
    if (alts.size() == 1) return alts[0];
    std::string body;
    for (std::size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
    return new_rule(body);
  }

  std::string typed(const Json& s, const std::string& t, const std::string& ptr) {
    if (t == "null") return "\"null\"";
    if (t == "boolean") return "( \"true\" | \"false\" )";
    if (t == "string") return string_schema(s, ptr);
    if (t == "integer") return integer_schema(s, ptr);
    if (t == "number") return number_schema(s, ptr);
    if (t == "object") return object_schema(s, ptr);
    if (t == "array") return array_schema(s, ptr);
    fail(ptr + "/type", "unknown type '" + t + "' (known: null, boolean, string, integer, number, object, array)");
  }

  // Whether `v` has one of the types s["type"] names (true without "type").
  bool has_type(const Json& s, const Json& v, const std::string& ptr) const {
    if (!s.contains("type")) return true;
    std::vector<std::string> types;
    if (s["type"].is_string()) types.push_back(s["type"].get<std::string>());
    else if (s["type"].is_array()) {
      for (const Json& t : s["type"]) {
        if (t.is_string()) types.push_back(t.get<std::string>());
      }
    } else {
      fail(ptr + "/type", "type must be a string or an array of strings");
    }
    for (const std::string& t : types) {
      if ((t == "null" && v.is_null()) || (t == "boolean" && v.is_boolean()) || (t == "object" && v.is_object()) ||
          (t == "array" && v.is_array()) || (t == "string" && v.is_string()) || (t == "number" && v.is_number()) ||
          (t == "integer" && v.is_number() && std::floor(v.get<double>()) == v.get<double>())) {
        return true;
      }
    }
    return false;
  }

  std::string enumeration(const Json& s, const std::string& ptr) {
    const Json& e = s["enum"];
    if (!e.is_array() || e.empty()) fail(ptr + "/enum", "enum must be a non-empty array");
    std::string body;
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (has_type(s, e[i], ptr)) body += (body.empty() ? "" : " | ") + literal(e[i].dump());
    }
    if (body.empty()) fail(ptr + "/enum", "no enum value has the schema's type");
    return new_rule(body);
  }

  // The JSON types a schema's values may have (for oneOf's disjointness check).
  unsigned types_of(const Json& s, const std::string& ptr, int depth = 0) {
    if (depth > 32 || s.is_boolean() || !s.is_object()) return 63;
    if (s.contains("$ref")) return types_of(resolve(s["$ref"], ptr), ptr, depth + 1);
    if (s.contains("const")) return type_bit_of_value(s["const"]);
    if (s.contains("enum") && s["enum"].is_array()) {
      unsigned bits = 0;
      for (const Json& v : s["enum"]) bits |= type_bit_of_value(v);
      return bits;
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (s.contains(key) && s[key].is_array()) {
        unsigned bits = 0;
        for (const Json& b : s[key]) bits |= types_of(b, ptr, depth + 1);
        return bits;
      }
    }
    if (!s.contains("type")) return 63;
    unsigned bits = 0;
    auto add = [&](const std::string& t) {
      bits |= t == "null" ? kNull : t == "boolean" ? kBool : t == "object" ? kObject : t == "array" ? kArray : t == "string" ? kString : kNumber;
    };
    if (s["type"].is_string()) add(s["type"].get<std::string>());
    if (s["type"].is_array()) {
      for (const Json& t : s["type"]) {
        if (t.is_string()) add(t.get<std::string>());
      }
    }
    return bits;
  }

  std::string union_of(const Json& s, const char* key, const std::string& ptr) {
    const Json& branches = s[key];
    const std::string p = ptr + "/" + key;
    if (!branches.is_array() || branches.empty()) fail(p, std::string(key) + " must be a non-empty array of schemas");
    if (std::string(key) == "oneOf") {  // exactly one branch must match: branches of disjoint JSON types only
      unsigned seen = 0;
      for (std::size_t i = 0; i < branches.size(); ++i) {
        const unsigned t = types_of(branches[i], p + "/" + std::to_string(i));
        if (t & seen) fail(p + "/" + std::to_string(i), "oneOf branches whose values may share a JSON type are not supported (a value could match two); use anyOf, or branches of different types");
        seen |= t;
      }
    }
    std::string body;
    for (std::size_t i = 0; i < branches.size(); ++i) body += (i ? " | " : "") + compile(branches[i], p + "/" + std::to_string(i));
    return new_rule(body);
  }

  const Json& resolve(const Json& ref, const std::string& ptr) const {
    const std::string p = ptr + "/$ref";
    if (!ref.is_string()) fail(p, "$ref must be a string");
    const std::string r = ref.get<std::string>();
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string pre = prefix;
      if (r.compare(0, pre.size(), pre) == 0) {
        const std::string container = pre.substr(2, pre.size() - 3);
        std::string name;  // unescape ~1 ~0
        const std::string raw = r.substr(pre.size());
        for (std::size_t i = 0; i < raw.size(); ++i) {
          if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
            name += raw[i + 1] == '0' ? '~' : '/';
            ++i;
          } else {
            name += raw[i];
          }
        }
        if (!root_.is_object() || !root_.contains(container) || !root_[container].is_object() || !root_[container].contains(name)) {
          fail(p, "$ref '" + r + "' names no schema in " + container);
        }
        return root_[container][name];
      }
    }
    fail(p, "$ref '" + r + "' is not supported (only #/$defs/NAME and #/definitions/NAME)");
  }

  std::string ref(const Json& s, const std::string& ptr) {
    for (const auto& [k, v] : s.items()) {
      if (k != "$ref" && !annotation(k)) fail(ptr + "/" + escape_pointer_token(k), "'" + k + "' beside $ref is not supported");
    }
    const std::string r = s["$ref"].is_string() ? s["$ref"].get<std::string>() : "";
    auto it = refs_.find(r);
    if (it != refs_.end()) return it->second;
    const Json& target = resolve(s["$ref"], ptr);
    const std::string name = "s" + std::to_string(counter_++);
    refs_[r] = name;  // before compiling: recursive schemas refer to the rule itself
    rules_[name] = compile(target, r.substr(1));
    return name;
  }

  std::string string_schema(const Json& s, const std::string& ptr) {
    const std::uint64_t min = count(s, "minLength", ptr, 0);
    const std::uint64_t max = count(s, "maxLength", ptr, kMaxCount);
    if (min > max) fail(ptr + "/minLength", "minLength " + std::to_string(min) + " exceeds maxLength " + std::to_string(max) + ": no string satisfies it");
    if (min == 0 && !s.contains("maxLength")) return "json-string";
    const std::string rep = s.contains("maxLength") ? "{" + std::to_string(min) + "," + std::to_string(max) + "}"
                                                    : "{" + std::to_string(min) + ",}";
    return new_rule("\"\\\"\" json-char" + rep + " \"\\\"\"");
  }

  // Bound `key` as a double, if present (InputError unless a number).
  bool bound(const Json& s, const char* key, const std::string& ptr, double& out) const {
    if (!s.contains(key)) return false;
    if (!s[key].is_number()) fail(ptr + "/" + key, std::string(key) + " must be a number");
    out = s[key].get<double>();
    return true;
  }

  NumberBounds bounds(const Json& s, const std::string& ptr) const {
    NumberBounds b{-INFINITY, INFINITY, false, false};
    double v = 0;
    if (bound(s, "minimum", ptr, v)) b.lo = v;
    if (bound(s, "exclusiveMinimum", ptr, v) && v >= b.lo) b.lo = v, b.lo_exclusive = true;
    if (bound(s, "maximum", ptr, v)) b.hi = v;
    if (bound(s, "exclusiveMaximum", ptr, v) && v <= b.hi) b.hi = v, b.hi_exclusive = true;
    if (b.lo > b.hi || (b.lo == b.hi && (b.lo_exclusive || b.hi_exclusive))) fail(ptr, "the minimum is above the maximum: no number satisfies it");
    return b;
  }

  std::string integer_schema(const Json& s, const std::string& ptr) {
    const NumberBounds b = bounds(s, ptr);
    const double cap = static_cast<double>(kIntCap);
    const double lo = b.lo_exclusive ? std::floor(b.lo) + 1 : std::ceil(b.lo);
    const double hi = b.hi_exclusive ? std::ceil(b.hi) - 1 : std::floor(b.hi);
    const double clo = std::max(lo, -cap), chi = std::min(hi, cap);
    if (clo > chi) fail(ptr, "no integer lies within the bounds (integers are generated within +-" + std::to_string(kIntCap) + ")");
    return new_rule(integer_range_grammar(static_cast<std::int64_t>(clo), static_cast<std::int64_t>(chi)));
  }

  std::string number_schema(const Json& s, const std::string& ptr) {
    const NumberBounds b = bounds(s, ptr);
    if (std::isinf(b.lo) && std::isinf(b.hi)) return "json-number";
    const std::string g = number_range_grammar(b);
    if (g.empty()) fail(ptr, "the bounds are too narrow for a number plexus can print inside them");
    return new_rule(g);
  }

  std::string object_schema(const Json& s, const std::string& ptr) {
    Json props = Json::object();
    if (s.contains("properties")) {
      props = s["properties"];
      if (!props.is_object()) fail(ptr + "/properties", "properties must be an object");
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) fail(ptr + "/required", "required must be an array of strings");
      for (const Json& r : s["required"]) {
        if (!r.is_string()) fail(ptr + "/required", "required must be an array of strings");
        required.insert(r.get<std::string>());
      }
    }
    bool extra_allowed = true;
    if (s.contains("additionalProperties")) {
      const Json& a = s["additionalProperties"];
      if (a.is_boolean()) extra_allowed = a.get<bool>();
      else if (!a.is_object()) fail(ptr + "/additionalProperties", "additionalProperties must be a boolean or a schema");
    }
    // The properties in order (required ones not in `properties` get any JSON value).
    std::vector<std::pair<std::string, std::string>> members;  // name, value expression
    std::vector<bool> needed;
    for (const auto& [name, sub] : props.items()) {
      members.emplace_back(name, compile(sub, ptr + "/properties/" + escape_pointer_token(name)));
      needed.push_back(required.count(name) > 0);
    }
    for (const std::string& r : required) {
      if (props.contains(r)) continue;
      if (!extra_allowed) fail(ptr + "/required", "'" + r + "' is required but additionalProperties is false and properties does not list it");
      if (s.contains("additionalProperties") && s["additionalProperties"].is_object()) {
        members.emplace_back(r, compile(s["additionalProperties"], ptr + "/additionalProperties"));
      } else {
        members.emplace_back(r, "json-value");
      }
      needed.push_back(true);
    }
    // first_i: members i.. when none is written yet; rest_i: after one was (each one then starts with ",").
    const std::size_t n = members.size();
    std::vector<std::string> first(n + 1), rest(n + 1);
    first[n] = rest[n] = "";
    for (std::size_t i = n; i-- > 0;) {
      const std::string kv = literal(Json(members[i].first).dump() + ":") + " " + members[i].second;
      const std::string rest_next = rest[i + 1].empty() ? "" : " " + rest[i + 1];
      const std::string rest_body = "\",\" " + kv + rest_next + (needed[i] ? "" : (rest[i + 1].empty() ? " | \"\"" : " | " + rest[i + 1]));
      const std::string first_body = kv + rest_next + (needed[i] ? "" : (first[i + 1].empty() ? " | \"\"" : " | " + first[i + 1]));
      rest[i] = new_rule(rest_body);
      first[i] = new_rule(first_body);
    }
    return new_rule("\"{\" " + (first[0].empty() ? "" : first[0] + " ") + "\"}\"");
  }

  std::string array_schema(const Json& s, const std::string& ptr) {
    std::string item = "json-value";
    if (s.contains("items")) {
      if (s["items"].is_array()) fail(ptr + "/items", "items as an array (tuple validation) is not supported");
      item = compile(s["items"], ptr + "/items");
    }
    const std::uint64_t min = count(s, "minItems", ptr, 0);
    const bool bounded = s.contains("maxItems");
    const std::uint64_t max = count(s, "maxItems", ptr, kMaxCount);
    if (min > max) fail(ptr + "/minItems", "minItems " + std::to_string(min) + " exceeds maxItems " + std::to_string(max) + ": no array satisfies it");
    if (max == 0) return "\"[]\"";
    const std::string more_min = std::to_string(min == 0 ? 0 : min - 1);
    const std::string rep = bounded ? "{" + more_min + "," + std::to_string(max - 1) + "}" : "{" + more_min + ",}";
    const std::string list = item + " ( \",\" " + item + " )" + rep;
    return new_rule("\"[\" " + (min == 0 ? "( " + list + " )?" : list) + " \"]\"");
  }

  const Json& root_;
  std::string source_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> refs_;  // $ref -> rule
  int counter_ = 0;
};

}  // namespace

std::string json_object_grammar() { return std::string("root ::= json-object\n") + kJsonRules; }

std::string json_schema_grammar(const Json& schema, const std::string& source) {
  SchemaCompiler c(schema, source);
  std::string text = c.grammar(schema);
  try {
    parse_grammar(text, source);
  } catch (const InputError& e) {  // only $ref cycles can make a rule begin with itself
    if (std::string(e.what()).find("left-recursive") == std::string::npos) throw;
    throw InputError(source + " at '/$ref': $refs that lead back to themselves before any value is written (e.g. " +
                     "a definition that is only a reference to itself) are not supported (" + e.what() + ")");
  }
  return text;
}

}  // namespace plexus::structured
