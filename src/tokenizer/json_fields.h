// Field access for tokenizer.json sections with errors that name the JSON path ("FILE: model.merges[3]").
#pragma once
#include <memory>
#include <string>

#include "core/json.h"
#include "tokenizer/regex.h"

namespace plexus {

const Json& field(const Json& obj, const std::string& key, const std::string& where);  // must exist
std::string field_string(const Json& obj, const std::string& key, const std::string& where);
std::string field_string_or(const Json& obj, const std::string& key, const std::string& fallback,
                            const std::string& where);  // null counts as absent
bool field_bool_or(const Json& obj, const std::string& key, bool fallback, const std::string& where);
long long field_int_or(const Json& obj, const std::string& key, long long fallback, const std::string& where);
const Json& field_array(const Json& obj, const std::string& key, const std::string& where);

// A {"String": s} or {"Regex": r} pattern: exactly one of `literal` / `regex` is used.
struct Pattern {
  std::string literal;
  std::unique_ptr<Regex> regex;
};
Pattern field_pattern(const Json& obj, const std::string& key, const std::string& where);

}  // namespace plexus
