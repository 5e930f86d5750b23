// UTF-8 validation and lossy repair following the Unicode "maximal subpart" practice.
#include "tokenizer/utf8.h"

namespace plexus::utf8 {
namespace {

// Length of the valid sequence at s[i], or 0 with `bad` = bytes of the maximal invalid subpart.
std::size_t valid_length(std::string_view s, std::size_t i, std::size_t& bad) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  bad = 1;
  if (b0 < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (std::size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) {
      bad = k;
      return 0;
    }
    const auto b = static_cast<unsigned char>(s[i + k]);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) {
      bad = k;
      return 0;
    }
  }
  return n;
}

}  // namespace

char32_t previous(std::string_view s, std::size_t end) {
  std::size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  std::size_t i = start;
  return next(s, i);
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::size_t find_invalid(std::string_view s) {
  std::size_t i = 0, bad = 0;
  while (i < s.size()) {
    // Fast skip over ASCII, 8 bytes at a time.
    while (i + 8 <= s.size()) {
      std::uint64_t w = 0;
      for (int k = 0; k < 8; ++k) w |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[i + k])) << (8 * k);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= s.size()) break;
    const std::size_t n = valid_length(s, i, bad);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string repair(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  std::size_t i = 0, bad = 0;
  while (i < s.size()) {
    const std::size_t n = valid_length(s, i, bad);
    if (n == 0) {
      append(out, kReplacement);
      i += bad;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace plexus::utf8
