// Checked tokenizer.json field access; every error names the file and JSON path.
#include "tokenizer/json_fields.h"

#include "core/error.h"

namespace plexus {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& want) {
  throw InputError(where + "." + key + " must be " + want + ": fix or regenerate the tokenizer files");
}

}  // namespace

const Json& field(const Json& obj, const std::string& key, const std::string& where) {
  if (!obj.is_object()) throw InputError(where + " must be a JSON object: fix or regenerate the tokenizer files");
  auto it = obj.find(key);
  if (it == obj.end()) throw InputError(where + "." + key + " is missing: fix or regenerate the tokenizer files");
  return *it;
}

std::string field_string(const Json& obj, const std::string& key, const std::string& where) {
  const Json& v = field(obj, key, where);
  if (!v.is_string()) bad(where, key, "a string");
  return v.get<std::string>();
}

std::string field_string_or(const Json& obj, const std::string& key, const std::string& fallback,
                            const std::string& where) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_string()) bad(where, key, "a string");
  return it->get<std::string>();
}

bool field_bool_or(const Json& obj, const std::string& key, bool fallback, const std::string& where) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) bad(where, key, "true or false");
  return it->get<bool>();
}

long long field_int_or(const Json& obj, const std::string& key, long long fallback, const std::string& where) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) bad(where, key, "an integer");
  return it->get<long long>();
}

const Json& field_array(const Json& obj, const std::string& key, const std::string& where) {
  const Json& v = field(obj, key, where);
  if (!v.is_array()) bad(where, key, "an array");
  return v;
}

Pattern field_pattern(const Json& obj, const std::string& key, const std::string& where) {
  const Json& p = field(obj, key, where);
  const std::string path = where + "." + key;
  Pattern out;
  if (p.is_object() && p.contains("String") && p["String"].is_string()) {
    out.literal = p["String"].get<std::string>();
  } else if (p.is_object() && p.contains("Regex") && p["Regex"].is_string()) {
    out.regex = std::make_unique<Regex>(p["Regex"].get<std::string>(), path);
  } else {
    throw InputError(path + " must be {\"String\": ...} or {\"Regex\": ...}: fix the tokenizer.json");
  }
  return out;
}

}  // namespace plexus
