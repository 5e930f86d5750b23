// Python's string operations the filters and methods share: UTF-8 characters as code points,
// strip with a character set, split (with and without a separator), splitlines, replace, case
// changes. None allocates more than its result; the callers charge the work and check sizes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace plexus::jinja {

// UTF-8 text as Python's code points: a character is a valid sequence; a stray or truncated
// byte stands for itself.
std::size_t char_len(std::string_view s, std::size_t i);  // bytes of the character at s[i]
std::size_t count_chars(std::string_view s);
std::size_t prev_char_start(std::string_view s, std::size_t end);  // where the character before `end` starts
// The code point of the character of `len` bytes (char_len) at s[i]. Four-byte sequences reach
// 0x1FFFFF; a stray byte b is kStrayByte + b, apart from every character.
inline constexpr std::uint32_t kStrayByte = 0x200000;
std::uint32_t code_point(std::string_view s, std::size_t i, std::size_t len);
// Whether every byte is ASCII (8 bytes at a time: the character loops' fast path).
bool is_ascii(std::string_view s);
// The first byte at or after `from` that is NUL or in `set` (s.size() when none): the C
// library's strcspn, so escaping loops skip plain text at memchr's speed.
std::size_t next_special(const std::string& s, std::size_t from, const char* set);

// Writes s between quotes q into *out, or with `out` null only measures it; returns its bytes.
// A byte in `special` (or NUL) starts an escape: escape(i, piece) appends the escape of the
// character at s[i] to `piece` and returns the character's length; other bytes are copied in
// runs (repr and JSON strings: measured first, then written once their size is checked).
template <typename Escape>
std::uint64_t quote_text(std::string* out, const std::string& s, char q, const char* special, Escape escape) {
  std::uint64_t size = 2;
  std::string piece;
  std::size_t run = 0;  // where the bytes copied as they are start
  if (out) out->push_back(q);
  for (std::size_t i = next_special(s, 0, special); i < s.size(); i = next_special(s, run, special)) {
    size += i - run;
    if (out) out->append(s, run, i - run);
    piece.clear();
    run = i + escape(i, piece);
    size += piece.size();
    if (out) out->append(piece);
  }
  size += s.size() - run;
  if (out) {
    out->append(s, run, std::string::npos);
    out->push_back(q);
  }
  return size;
}

// str.strip/lstrip/rstrip(chars); `chars` null: Python's whitespace.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit); `sep` null: runs of whitespace, no empty parts. maxsplit < 0: all.
// Stops past `limit` parts (the caller refuses more than `limit`).
std::vector<std::string> split(std::string_view s, const std::string* sep, std::int64_t maxsplit, std::size_t limit);
// str.splitlines(keepends), Python's line boundaries; stops past `limit` parts.
std::vector<std::string> splitlines(std::string_view s, bool keepends, std::size_t limit);
// Non-overlapping occurrences of `sub` in s, at most `max` (an empty sub: one per character + 1).
std::size_t count_occurrences(std::string_view s, std::string_view sub, std::size_t max);
// str.replace making the first `n` replacements (n from count_occurrences, so the size is known).
std::string replace(std::string_view s, std::string_view from, std::string_view to, std::size_t n);
// Bytes of work charged per byte of a case change (each character is decoded and encoded).
inline constexpr std::uint64_t kCaseMapCost = 8;
std::string upper(const std::string& s);
std::string lower(const std::string& s);
// Case changes of Latin, Greek and Cyrillic letters (ß upper-cases to SS; other scripts kept).
std::string title(const std::string& s);         // jinja2's title filter: words split at whitespace - ( { [ <
std::string python_title(const std::string& s);  // str.title: words split at any uncased character
std::string capitalize(const std::string& s);  // first letter upper, the rest lower
// str.islower / str.isupper: a cased character and none of the other case (by the same tables).
bool is_lower(std::string_view s);
bool is_upper(std::string_view s);
bool is_py_space(unsigned char c);

}  // namespace plexus::jinja
