// UTF-8 helpers for the tokenizer: decoding one code point, appending, validation and the
// lossy repair (each maximal invalid subpart becomes U+FFFD, as Rust and WHATWG decoders do).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace plexus::utf8 {

inline constexpr char32_t kReplacement = 0xFFFD;

// Length in bytes of the sequence that starts with lead byte `b` (1 for invalid leads).
inline std::size_t sequence_length(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xF0) return 4;
  if (b >= 0xE0) return 3;
  if (b >= 0xC0) return 2;
  return 1;
}

// Decodes the code point at s[i] in *valid* UTF-8 and advances i.
inline char32_t next(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  const std::size_t n = sequence_length(b0);
  char32_t cp = b0 & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

// Decodes the last code point before position `end` in valid UTF-8.
char32_t previous(std::string_view s, std::size_t end);

void append(std::string& out, char32_t cp);

// Byte offset of the first invalid sequence, or npos when `s` is valid UTF-8.
std::size_t find_invalid(std::string_view s);

// `s` with every maximal invalid subpart replaced by U+FFFD.
std::string repair(std::string_view s);

}  // namespace plexus::utf8
