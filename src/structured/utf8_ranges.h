// Code point ranges as UTF-8 byte-range sequences: a character class over Unicode becomes
// alternatives of byte sets, so that the matcher only ever sees bytes.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace plexus::structured {

struct CodePointRange {
  char32_t lo = 0, hi = 0;  // inclusive
};

// One UTF-8 encoded character as byte ranges: byte i lies in [first, second] of element i.
using ByteRangeSequence = std::vector<std::pair<std::uint8_t, std::uint8_t>>;

// The union of `ranges` (any order, may overlap) without the surrogates U+D800..U+DFFF, sorted
// and merged; with `negate`, its complement within U+0000..U+10FFFF.
std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges, bool negate);

// Byte-range sequences whose union is exactly the UTF-8 encodings of [lo, hi] (no surrogates in it).
std::vector<ByteRangeSequence> utf8_sequences(CodePointRange range);

// UTF-8 encoding of one code point.
void append_utf8(std::vector<std::uint8_t>& out, char32_t cp);

}  // namespace plexus::structured
