// Checked JSON reads.
#include "core/json.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "core/mmap_file.h"

namespace plexus {

namespace {

// Whether `c` may appear in a JSON text outside strings: whitespace, structure, numbers, and the
// letters of true, false and null.
bool json_outside_string_char(char c) {
  static constexpr std::string_view kAllowed = " \t\r\n[]{},:\"-+.0123456789eEtrufalsn";
  return kAllowed.find(c) != std::string_view::npos;
}

std::string_view skip_bom_and_space(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  while (!text.empty() && (text[0] == ' ' || text[0] == '\t' || text[0] == '\r' || text[0] == '\n')) text.remove_prefix(1);
  return text;
}

}  // namespace

void check_json_depth(std::string_view text, const std::string& where, int max_depth) {
  int depth = 0;
  bool in_string = false;
  const std::size_t bom = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  for (std::size_t i = bom; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    // A byte that cannot stand outside a string ends the scan: the parser stops at it (or
    // earlier) with a syntax error, so nothing past it is nested (a binary file full of '[' is
    // "invalid JSON at byte 0", not "nested deeper than 256 levels").
    if (!json_outside_string_char(c)) return;
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

void require_json_object_text(std::string_view text, const std::string& path, const std::string& what, const std::string& hint) {
  const std::string_view start = skip_bom_and_space(text);
  if (!start.empty() && start[0] == '{') return;
  std::string bytes;
  char hex[4];
  for (std::size_t i = 0; i < std::min<std::size_t>(text.size(), 8); ++i) {
    std::snprintf(hex, sizeof hex, "%s%02x", i ? " " : "", static_cast<unsigned char>(text[i]));
    bytes += hex;
  }
  throw InputError(path + " is neither a GGUF file nor " + what + " (a JSON object): " +
                   (text.empty() ? std::string("it is empty") : "it starts with the bytes " + bytes) + "; " + hint);
}

std::optional<std::int64_t> json_int64(const Json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

long long json_int(const Json& obj, const std::string& key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key)) throw InputError(where + ": missing field '" + key + "'");
  const Json& v = obj.at(key);
  if (!v.is_number_integer()) throw InputError(where + ": field '" + key + "' must be an integer, got " + v.dump());
  const std::optional<std::int64_t> x = json_int64(v);
  if (!x) throw InputError(where + ": field '" + key + "' is " + v.dump() + ", too large for a 64-bit integer");
  return *x;
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
