// Python's string operations (see string_ops.h); case changes touch ASCII letters only.
#include "serve/jinja/string_ops.h"

#include "tokenizer/utf8.h"

namespace plexus::jinja {

bool is_py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

std::string strip(const std::string& s, const std::string* chars, bool left, bool right) {
  auto drop = [&](unsigned char c) { return chars ? chars->find(static_cast<char>(c)) != std::string::npos : is_py_space(c); };
  std::size_t a = 0, b = s.size();
  if (left)
    while (a < b && drop(static_cast<unsigned char>(s[a]))) ++a;
  if (right)
    while (b > a && drop(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::vector<std::string> split(const std::string& s, const std::string* sep, std::int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    std::size_t pos = 0;
    while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
      const std::size_t f = s.find(*sep, pos);
      if (f == std::string::npos) break;
      out.push_back(s.substr(pos, f - pos));
      pos = f + sep->size();
    }
    out.push_back(s.substr(pos));
    return out;
  }
  std::size_t i = 0;
  while (true) {
    while (i < s.size() && is_py_space(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) >= maxsplit) {
      out.push_back(s.substr(i));  // the rest, trailing whitespace kept (as Python)
      break;
    }
    std::size_t j = i;
    while (j < s.size() && !is_py_space(static_cast<unsigned char>(s[j]))) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, std::int64_t count) {
  std::string out;
  std::int64_t done = 0;
  if (from.empty()) {
    // Python inserts `to` before every character and at the end.
    for (std::size_t i = 0; i <= s.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i < s.size()) out.push_back(s[i]);
    }
    return out;
  }
  std::size_t pos = 0;
  while (count < 0 || done < count) {
    const std::size_t f = s.find(from, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += to;
    pos = f + from.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
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
    const std::size_t at = i;
    std::size_t len = 0;
    const std::uint32_t c = next_cp(s, i, &len);
    const int want = upper_at(index, prev);  // 1 upper, 0 lower, -1 keep
    if (want == 1 && c == 0xDF) {
      out += "SS";
    } else if (want < 0 || (len == 1 && c >= 0x80)) {
      out.append(s, at, len);
    } else {
      utf8::append(out, want ? to_upper_cp(c) : to_lower_cp(c));
    }
    prev = c;
  }
  return out;
}

}  // namespace

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
