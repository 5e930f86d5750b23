// UTF-8 range splitting: a range is cut where the encoded length changes, then where the bytes
// after a common prefix stop spanning whole continuation ranges, until each piece is one byte
// range per position.
#include "structured/utf8_ranges.h"

#include <algorithm>

namespace plexus::structured {

namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;

int encoded_length(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void split(char32_t lo, char32_t hi, std::vector<ByteRangeSequence>& out) {
  const int n = encoded_length(lo);
  for (int i = 1; i < n; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;  // the low 6*i bits: the last i bytes' payload
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::vector<std::uint8_t> a, b;
  append_utf8(a, lo);
  append_utf8(b, hi);
  ByteRangeSequence seq;
  for (std::size_t i = 0; i < a.size(); ++i) seq.emplace_back(a[i], b[i]);
  out.push_back(std::move(seq));
}

}  // namespace

void append_utf8(std::vector<std::uint8_t>& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<std::uint8_t>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<std::uint8_t>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<std::uint8_t>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<std::uint8_t>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<std::uint8_t>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<std::uint8_t>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<std::uint8_t>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<std::uint8_t>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<std::uint8_t>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<std::uint8_t>(0x80 | (cp & 0x3F)));
  }
}

std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end(), [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : ranges) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (negate) {
    std::vector<CodePointRange> complement;
    char32_t next = 0;
    for (const CodePointRange& r : merged) {
      if (r.lo > next) complement.push_back({next, r.lo - 1});
      next = r.hi + 1;
    }
    if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
    merged.swap(complement);
  }
  std::vector<CodePointRange> out;  // surrogates cut out
  for (const CodePointRange& r : merged) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

std::vector<ByteRangeSequence> utf8_sequences(CodePointRange range) {
  std::vector<ByteRangeSequence> out;
  constexpr char32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
  char32_t lo = range.lo;
  for (char32_t end : kLengthEnds) {
    if (lo > range.hi) break;
    if (lo > end) continue;
    const char32_t hi = std::min(range.hi, end);
    split(lo, hi, out);
    lo = hi + 1;
  }
  return out;
}

}  // namespace plexus::structured
