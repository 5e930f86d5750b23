// Block-style YAML from ordered JSON.
#include "deploy/yaml_text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "core/error.h"
#include "deploy/escape.h"
#include "tokenizer/utf8.h"

namespace plexus::deploy {

namespace {

// Words YAML 1.1 (docker-compose's PyYAML) or 1.2 reads as something other than a string.
bool reserved_word(const std::string& s) {
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* w : {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~", ".inf", "-.inf", "+.inf", ".nan", "<<", "="}) {
    if (lower == w) return true;
  }
  return false;
}

// Anything starting like a number (digits, sign or dot before a digit) is quoted: "08", "1e3",
// "0x1f", "8080:80" and "1_000" are then never read as numbers or sexagesimals.
bool starts_like_number(const std::string& s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i < s.size() && s[i] == '.') ++i;
  return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
}

std::string scalar_text(const YamlDoc& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return plain_yaml_safe(s) ? s : yaml_double_quoted(s);
  }
  if (v.is_object()) return "{}";
  if (v.is_array()) return "[]";
  return v.dump();  // numbers, true/false, null
}

bool is_block(const YamlDoc& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

void emit(const YamlDoc& v, int indent, std::string& out);

// A block value after "- ": its first line joins the dash, the rest indent under it.
void emit_item(const YamlDoc& item, int indent, std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  if (!is_block(item)) {
    out += pad + "- " + scalar_text(item) + "\n";
    return;
  }
  std::string nested;
  emit(item, indent + 2, nested);
  out += pad + "- " + nested.substr(static_cast<std::size_t>(indent) + 2);
}

void emit(const YamlDoc& v, int indent, std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  if (v.is_array()) {
    for (const YamlDoc& item : v) emit_item(item, indent, out);
    return;
  }
  for (auto it = v.begin(); it != v.end(); ++it) {
    out += pad + scalar_text(YamlDoc(it.key())) + ":";
    if (is_block(it.value())) {
      out += "\n";
      emit(it.value(), indent + 2, out);
    } else {
      out += " " + scalar_text(it.value()) + "\n";
    }
  }
}

}  // namespace

std::string yaml_double_quoted(const std::string& s) {
  if (utf8::find_invalid(s) != std::string::npos) {
    throw InputError("'" + one_line(s) + "' is not valid UTF-8, which a YAML file cannot hold");
  }
  std::string out = "\"";
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t start = i;
    const char32_t cp = utf8::next(s, i);
    char buf[16];
    if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (printable_code_point(cp)) {
      out.append(s, start, i - start);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else {
      if (cp <= 0xFF) std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(cp));
      else if (cp <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(cp));
      else std::snprintf(buf, sizeof buf, "\\U%08X", static_cast<unsigned>(cp));
      out += buf;
    }
  }
  return out + "\"";
}

bool plain_yaml_safe(const std::string& s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
  if (std::string_view("?:,[]{}#&*!|>'\"%@`").find(s.front()) != std::string_view::npos) return false;
  if (s.front() == '-' && (s.size() == 1 || s[1] == ' ' || s.rfind("---", 0) == 0)) return false;
  if (s.rfind("...", 0) == 0 || s.back() == ':') return false;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return !reserved_word(s) && !starts_like_number(s);
}

std::string to_yaml(const YamlDoc& doc) {
  if (!is_block(doc)) return scalar_text(doc) + "\n";
  std::string out;
  emit(doc, 0, out);
  return out;
}

}  // namespace plexus::deploy
