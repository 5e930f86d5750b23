// Shell words, one-line text and the UTF-8 check of the strings that reach deployment files.
#include "deploy/escape.h"

#include <cstdio>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace plexus::deploy {

namespace {

// The code point at s[i] (advancing i past it); false, with i past one byte, where s[i] does not
// start a valid UTF-8 sequence.
bool decode_at(std::string_view s, std::size_t& i, char32_t& cp) {
  const std::size_t n = utf8::sequence_length(static_cast<unsigned char>(s[i]));
  if (i + n > s.size() || utf8::find_invalid(s.substr(i, n)) != std::string_view::npos) {
    cp = static_cast<unsigned char>(s[i]);
    ++i;
    return false;
  }
  cp = utf8::next(s, i);
  return true;
}

std::string hex(unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", digits, value);
  return buf;
}

bool safe_shell_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("_./:=,@%+-").find(c) != std::string_view::npos;
}

}  // namespace

bool printable_code_point(char32_t cp) {
  if (cp >= 0x20 && cp <= 0x7E) return true;
  if (cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF) return false;
  return (cp >= 0xA0 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

std::string one_line(std::string_view text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    char32_t cp = 0;
    if (!decode_at(text, i, cp)) {
      out += "\\x" + hex(cp, 2);
    } else if (printable_code_point(cp)) {
      out.append(text.substr(start, i - start));
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp <= 0xFF) {
      out += "\\x" + hex(cp, 2);
    } else if (cp <= 0xFFFF) {
      out += "\\u" + hex(cp, 4);
    } else {
      out += "\\U" + hex(cp, 8);
    }
  }
  return out;
}

void check_text(std::string_view text, const std::string& what) {
  const std::size_t nul = text.find('\0');
  if (nul != std::string_view::npos) {
    throw InputError(what + " '" + one_line(text) + "' holds a NUL byte at offset " + std::to_string(nul));
  }
  const std::size_t bad = utf8::find_invalid(text);
  if (bad != std::string_view::npos) {
    throw InputError(what + " '" + one_line(text) + "' is not valid UTF-8 (byte 0x" +
                     hex(static_cast<unsigned char>(text[bad]), 2) + " at offset " + std::to_string(bad) +
                     "): the generated files are UTF-8 text; rename it (or convert it, e.g. with iconv -t utf-8)");
  }
}

std::string shell_quote(std::string_view word) {
  bool safe = !word.empty();
  bool printable = true;
  std::size_t i = 0;
  while (i < word.size()) {
    if (!safe_shell_char(word[i])) safe = false;
    char32_t cp = 0;
    if (!decode_at(word, i, cp) || !printable_code_point(cp)) printable = false;
  }
  if (safe) return std::string(word);
  if (printable) {
    std::string out = "'";
    for (char c : word) {
      if (c == '\'') out += "'\\''";
      else out += c;
    }
    return out + "'";
  }
  // bash's ANSI-C quoting: \\, \' and \xHH are the only escapes written; printable code points
  // stay as they are, every byte of another one becomes \xHH (bytes, so no locale is involved).
  std::string out = "$'";
  i = 0;
  while (i < word.size()) {
    const std::size_t start = i;
    char32_t cp = 0;
    const bool valid = decode_at(word, i, cp);
    if (valid && printable_code_point(cp)) {
      if (cp == '\\') out += "\\\\";
      else if (cp == '\'') out += "\\'";
      else out.append(word.substr(start, i - start));
    } else {
      for (std::size_t k = start; k < i; ++k) out += "\\x" + hex(static_cast<unsigned char>(word[k]), 2);
    }
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

}  // namespace plexus::deploy
