// GPT-2's byte-to-character table: byte-level vocabularies spell byte b as the character
// byte_to_char(b) (printable bytes as themselves, the rest shifted to U+0100..).
#pragma once
#include <array>
#include <cstdint>

namespace plexus::byte_level {

struct Tables {
  std::array<char32_t, 256> to_char{};      // byte -> code point
  std::array<std::int16_t, 324> to_byte{};  // code point (< 324) -> byte, -1 when none
};

inline const Tables& tables() {
  static const Tables t = [] {
    Tables r;
    r.to_byte.fill(-1);
    int shifted = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + shifted++);
      r.to_char[b] = cp;
      r.to_byte[cp] = static_cast<std::int16_t>(b);
    }
    return r;
  }();
  return t;
}

}  // namespace plexus::byte_level
