// Checked JSON reads.
#include "core/json.h"

#include <algorithm>

#include "core/error.h"
#include "core/mmap_file.h"

namespace plexus {

void check_json_depth(std::string_view text, const std::string& where, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        throw InputError(where + ": JSON nested deeper than " + std::to_string(max_depth) + " levels (at byte " +
                         std::to_string(i) + "); plexus reads documents nested at most " + std::to_string(max_depth) +
                         " deep: this is not a file plexus can use");
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

Json parse_json(const std::string& text, const std::string& where) {
  check_json_depth(text, where);
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(where + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {  // e.g. a number too large to represent
    throw InputError(where + ": invalid JSON: " + e.what());
  }
}

Json read_json_file(const std::string& path) { return parse_json(read_text_file(path), path); }

long long json_int(const Json& obj, const std::string& key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key)) throw InputError(where + ": missing field '" + key + "'");
  const Json& v = obj.at(key);
  if (!v.is_number_integer()) throw InputError(where + ": field '" + key + "' must be an integer, got " + v.dump());
  return v.get<long long>();
}

long long json_int_or(const Json& obj, const std::string& key, long long fallback, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return fallback;
  return json_int(obj, key, where);
}

double json_number_or(const Json& obj, const std::string& key, double fallback, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return fallback;
  const Json& v = obj.at(key);
  if (!v.is_number()) throw InputError(where + ": field '" + key + "' must be a number, got " + v.dump());
  return v.get<double>();
}

std::string json_string_or(const Json& obj, const std::string& key, const std::string& fallback,
                           const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return fallback;
  const Json& v = obj.at(key);
  if (!v.is_string()) throw InputError(where + ": field '" + key + "' must be a string, got " + v.dump());
  return v.get<std::string>();
}

bool json_bool_or(const Json& obj, const std::string& key, bool fallback, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return fallback;
  const Json& v = obj.at(key);
  if (!v.is_boolean()) throw InputError(where + ": field '" + key + "' must be true or false, got " + v.dump());
  return v.get<bool>();
}

std::optional<double> json_number_at(const Json& j, const std::string& dotted) {
  const Json* cur = &j;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    const std::size_t dot = std::min(dotted.find('.', start), dotted.size());
    const std::string key = dotted.substr(start, dot - start);
    if (!cur->is_object() || !cur->contains(key)) return std::nullopt;
    cur = &(*cur)[key];
    start = dot + 1;
  }
  if (!cur->is_number()) return std::nullopt;
  return cur->get<double>();
}

}  // namespace plexus
