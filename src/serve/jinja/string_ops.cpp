// Python's string operations (see string_ops.h); case changes touch Latin, Greek and Cyrillic.
#include "serve/jinja/string_ops.h"

#include <algorithm>
#include <cstring>

#include "serve/jinja/text_search.h"
#include "tokenizer/utf8.h"

namespace plexus::jinja {

bool is_py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

std::size_t char_len(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  return n;
}

bool is_ascii(std::string_view s) {
  std::size_t i = 0;
  for (std::uint64_t word = 0; i + 8 <= s.size(); i += 8) {
    std::memcpy(&word, s.data() + i, 8);
    if (word & 0x8080808080808080ull) return false;
  }
  for (; i < s.size(); ++i)
    if (static_cast<unsigned char>(s[i]) >= 0x80) return false;
  return true;
}

std::size_t next_special(const std::string& s, std::size_t from, const char* set) {
  return from >= s.size() ? s.size() : from + std::strcspn(s.c_str() + from, set);
}

std::size_t count_chars(std::string_view s) {
  if (is_ascii(s)) return s.size();
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); i += char_len(s, i)) ++n;
  return n;
}

std::size_t prev_char_start(std::string_view s, std::size_t end) {
  // The character walk from the start lands on any valid sequence's lead byte (continuation
  // bytes are never leads), so the longest valid sequence ending at `end` is the character.
  for (std::size_t k = 4; k >= 2; --k)
    if (end >= k && char_len(s, end - k) == k) return end - k;
  return end - 1;
}

std::uint32_t code_point(std::string_view s, std::size_t i, std::size_t len) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (len == 1) return b < 0x80 ? b : kStrayByte + b;
  std::uint32_t c = b & (0xFF >> (len + 1));
  for (std::size_t k = 1; k < len; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return c;
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
  // Python strips code points: ASCII ones in a table, others found in a sorted list (any
  // code point, a stray byte's too, is a value to search for, never an index).
  bool ascii[128] = {};
  std::vector<std::uint32_t> wide;
  if (chars) {
    for (std::size_t i = 0; i < chars->size();) {
      const std::size_t n = char_len(*chars, i);
      const std::uint32_t c = code_point(*chars, i, n);
      if (c < 0x80) ascii[c] = true;
      else wide.push_back(c);
      i += n;
    }
    std::sort(wide.begin(), wide.end());
  }
  auto drop = [&](std::size_t i, std::size_t n) {
    if (!chars) return n == 1 && is_py_space(static_cast<unsigned char>(s[i]));
    const std::uint32_t c = code_point(s, i, n);
    return c < 0x80 ? ascii[c] : std::binary_search(wide.begin(), wide.end(), c);
  };
  std::size_t a = 0, b = s.size();
  if (left)
    while (a < b && drop(a, char_len(s, a))) a += char_len(s, a);
  if (right)
    while (b > a) {
      const std::size_t p = std::max(a, prev_char_start(s, b));
      if (!drop(p, b - p)) break;
      b = p;
    }
  return std::string(s.substr(a, b - a));
}

std::vector<std::string> split(std::string_view s, const std::string* sep, std::int64_t maxsplit, std::size_t limit) {
  std::vector<std::string> out;
  if (sep) {
    const Searcher searcher(*sep);
    std::size_t pos = 0;
    while ((maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) && out.size() <= limit) {
      const std::size_t f = searcher.find(s, pos);
      if (f == std::string::npos) break;
      out.emplace_back(s.substr(pos, f - pos));
      pos = f + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  std::size_t i = 0;
  while (out.size() <= limit) {
    while (i < s.size() && is_py_space(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) >= maxsplit) {
      out.emplace_back(s.substr(i));  // the rest, trailing whitespace kept (as Python)
      break;
    }
    std::size_t j = i;
    while (j < s.size() && !is_py_space(static_cast<unsigned char>(s[j]))) ++j;
    out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends, std::size_t limit) {
  // Python's line boundaries: \n \r \r\n \v \f \x1c \x1d \x1e, U+0085, U+2028, U+2029.
  auto boundary = [&](std::size_t i) -> std::size_t {  // its length at i, 0 when none
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\r') return i + 1 < s.size() && s[i + 1] == '\n' ? 2 : 1;
    if (c == '\n' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e)) return 1;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) return 2;
    if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9))
      return 3;
    return 0;
  };
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size() && out.size() <= limit;) {
    const std::size_t n = boundary(i);
    if (n == 0) {
      i += char_len(s, i);
      continue;
    }
    out.emplace_back(s.substr(start, (keepends ? i + n : i) - start));
    i += n;
    start = i;
  }
  if (start < s.size() && out.size() <= limit) out.emplace_back(s.substr(start));
  return out;
}

std::size_t count_occurrences(std::string_view s, std::string_view sub, std::size_t max) {
  if (sub.empty()) return std::min(count_chars(s) + 1, max);  // before every character and at the end
  const Searcher searcher(sub);
  std::size_t n = 0;
  for (std::size_t p = searcher.find(s); p != std::string::npos && n < max; p = searcher.find(s, p + sub.size())) ++n;
  return n;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, std::size_t n) {
  std::string out;
  out.reserve(s.size() + n * to.size() - std::min(s.size(), n * from.size()));
  if (from.empty()) {
    std::size_t i = 0;
    for (std::size_t done = 0; done < n; ++done) {
      out.append(to);
      if (i >= s.size()) break;
      const std::size_t len = char_len(s, i);
      out.append(s.substr(i, len));
      i += len;
    }
    out.append(s.substr(std::min(i, s.size())));
    return out;
  }
  const Searcher searcher(from);
  std::size_t pos = 0;
  for (std::size_t done = 0; done < n; ++done) {
    const std::size_t f = searcher.find(s, pos);
    if (f == std::string::npos) break;
    out.append(s.substr(pos, f - pos));
    out.append(to);
    pos = f + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

namespace {

// Simple case mappings of Latin-1, Latin Extended-A, Greek and Cyrillic letters (others kept).
std::uint32_t to_upper_cp(std::uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0xB5) return 0x39C;
  if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
    return (c % 2 == 1) ? c - 1 : c;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 0) ? c - 1 : c;
  if (c == 0x131) return 'I';
  if (c == 0x17F) return 'S';
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}
std::uint32_t to_lower_cp(std::uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
    return (c % 2 == 0) ? c + 1 : c;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 1) ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}
bool is_cased(std::uint32_t c) { return to_upper_cp(c) != c || to_lower_cp(c) != c || c == 0xDF; }

// Decodes one UTF-8 character at s[i] (a stray byte stands for itself); advances i.
std::uint32_t next_cp(const std::string& s, std::size_t& i, std::size_t* len) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) n = 1;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) n = 1;
  std::uint32_t c = n == 1 ? b : (b & (0xFF >> (n + 1)));
  for (std::size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  *len = n;
  i += n;
  return c;
}
// Maps each character: `upper_at(index, previous character)` says whether to upper- or lower-case it.
template <typename UpperAt>
std::string map_case(const std::string& s, UpperAt upper_at) {
  std::string out;
  out.reserve(s.size());
  std::uint32_t prev = ' ';
  std::size_t index = 0;
  for (std::size_t i = 0; i < s.size(); ++index) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {  // ASCII: mapped in place, without decoding
      const int want = upper_at(index, prev);
      out.push_back(static_cast<char>(want == 1 && b >= 'a' && b <= 'z'   ? b - 32
                                      : want == 0 && b >= 'A' && b <= 'Z' ? b + 32
                                                                          : b));
      prev = b;
      ++i;
      continue;
    }
    const std::size_t at = i;
    std::size_t len = 0;
    const std::uint32_t c = next_cp(s, i, &len);
    const int want = upper_at(index, prev);  // 1 upper, 0 lower, -1 keep
    if (want == 1 && c == 0xDF) {
      out += "SS";
    } else if (want < 0 || (len == 1 && c >= 0x80)) {
      out.append(s, at, len);
    } else if (const std::uint32_t m = want ? to_upper_cp(c) : to_lower_cp(c); m >= 0x80 && m < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (m >> 6)));  // two bytes, the common case
      out.push_back(static_cast<char>(0x80 | (m & 0x3F)));
    } else {
      utf8::append(out, m);
    }
    prev = c;
  }
  return out;
}

}  // namespace

namespace {

// Python's str.isupper (`upper`) or str.islower: a cased character, and none of the other case.
bool all_cased_in_case(std::string_view s, bool upper) {
  bool cased = false;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = char_len(s, i);
    const std::uint32_t c = code_point(s, i, n);
    i += n;
    const bool is_upper = to_lower_cp(c) != c;
    const bool is_lower = to_upper_cp(c) != c || c == 0xDF;
    if (upper ? is_lower : is_upper) return false;
    cased = cased || is_upper || is_lower;
  }
  return cased;
}

}  // namespace

bool is_lower(std::string_view s) { return all_cased_in_case(s, false); }
bool is_upper(std::string_view s) { return all_cased_in_case(s, true); }

std::string upper(const std::string& s) { return map_case(s, [](std::size_t, std::uint32_t) { return 1; }); }
std::string lower(const std::string& s) { return map_case(s, [](std::size_t, std::uint32_t) { return 0; }); }
std::string title(const std::string& s) {
  // jinja2's title filter: words start after whitespace, '-', '(', '{', '[' or '<'.
  return map_case(s, [](std::size_t, std::uint32_t prev) {
    return (prev < 0x80 && (is_py_space(static_cast<unsigned char>(prev)) || prev == '-' || prev == '(' || prev == '{' ||
                            prev == '[' || prev == '<'))
               ? 1
               : 0;
  });
}
std::string python_title(const std::string& s) {
  // str.title: a cased character after an uncased one starts a word.
  return map_case(s, [](std::size_t, std::uint32_t prev) { return is_cased(prev) ? 0 : 1; });
}
std::string capitalize(const std::string& s) {
  return map_case(s, [](std::size_t index, std::uint32_t) { return index == 0 ? 1 : 0; });
}

}  // namespace plexus::jinja
