// Python's int(text, base) and float(text) on strings, for the int and float filters: jinja2's
// results (integers up to kMaxIntBits; past them a TemplateError); round(float, ndigits) by its
// decimal digits.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"
#include "serve/jinja/integers.h"
#include "serve/jinja/string_ops.h"

namespace plexus::jinja {
namespace {

std::string_view trim_space(std::string_view s) {
  while (!s.empty() && is_py_space(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && is_py_space(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// Python's digitpart (digits, single underscores between them) at the start of s: appended to
// `out` without underscores; false when s does not start with one.
bool read_digits(std::string_view& s, std::string& out) {
  std::size_t i = 0;
  bool digit_last = false;
  for (; i < s.size(); ++i) {
    if (s[i] >= '0' && s[i] <= '9') {
      out.push_back(s[i]);
      digit_last = true;
    } else if (s[i] == '_' && digit_last && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9') {
      digit_last = false;
    } else {
      break;
    }
  }
  s.remove_prefix(i);
  return i > 0;
}

}  // namespace

std::optional<Value> parse_python_int(Evaluator& ev, std::string_view text, std::int64_t base) {
  ev.work().bytes(text.size(), "reading a number");
  if (base != 0 && (base < 2 || base > 36)) return std::nullopt;  // Python: ValueError
  std::string_view s = trim_space(text);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  bool prefixed = false;
  if (s.size() >= 2 && s[0] == '0') {
    const char p = static_cast<char>(s[1] | 0x20);
    const std::int64_t prefix_base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefix_base != 0 && (base == 0 || base == prefix_base)) {
      base = prefix_base;
      prefixed = true;
      s.remove_prefix(2);
      if (!s.empty() && s[0] == '_') s.remove_prefix(1);  // Python allows one after the prefix
    }
  }
  const bool base_zero_decimal = base == 0;
  if (base == 0) base = 10;
  if (s.empty()) return std::nullopt;
  // Digits with single underscores between them, kept without the underscores and leading zeros.
  std::string digits;
  bool digit_last = false, nonzero = false;
  for (const char c : s) {
    if (c == '_') {
      if (!digit_last) return std::nullopt;
      digit_last = false;
      continue;
    }
    const int d = digit_value(c);
    if (d >= base) return std::nullopt;
    digit_last = true;
    nonzero = nonzero || d != 0;
    if (nonzero) digits.push_back(c);
  }
  if (!digit_last) return std::nullopt;
  if (base_zero_decimal && !prefixed && s[0] == '0' && nonzero) return std::nullopt;  // int('010', 0)
  // Each digit adds at least a bit: past kMaxIntBits digits the text is refused unread. The
  // conversion multiplies the limbs so far (at most 6 bits a digit) per digit.
  const bool too_long = digits.size() > kMaxIntBits;
  if (!too_long) ev.work().bytes(digits.size(), digits.size() * 6 / 32 + 2, "reading a number");
  const BigInt magnitude = too_long ? BigInt() : BigInt::from_digits(digits, static_cast<int>(base));
  if (too_long || magnitude.bit_length() > kMaxIntBits)
    ev.fail("int(" + Value(std::string(text.substr(0, 40))).brief() + ") is past " + std::to_string(kMaxIntBits) +
            "-bit integers (plexus's limit)");
  return Value(negative ? -magnitude : magnitude);
}

std::optional<double> parse_python_float(std::string_view text) {
  std::string_view s = trim_space(text);
  std::string clean;  // the number without underscores, for strtod
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    clean.push_back(s[0]);
    s.remove_prefix(1);
  }
  std::string lower_word;
  for (const char c : s.substr(0, 9)) lower_word.push_back(static_cast<char>(c | 0x20));
  if (s.size() <= 8 && (lower_word == "inf" || lower_word == "infinity" || lower_word == "nan")) {
    const double v = lower_word == "nan" ? NAN : INFINITY;
    return clean == "-" ? -v : v;
  }
  const bool whole = read_digits(s, clean);
  bool fraction = false;
  if (!s.empty() && s[0] == '.') {
    clean.push_back('.');
    s.remove_prefix(1);
    fraction = read_digits(s, clean);
  }
  if (!whole && !fraction) return std::nullopt;
  if (!s.empty() && (s[0] == 'e' || s[0] == 'E')) {
    clean.push_back('e');
    s.remove_prefix(1);
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
      clean.push_back(s[0]);
      s.remove_prefix(1);
    }
    if (!read_digits(s, clean)) return std::nullopt;
  }
  if (!s.empty()) return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);
}

std::optional<double> python_round(double x, std::int64_t ndigits) {
  // Python's bounds: past 323 digits no double changes; past -308 every one rounds to zero.
  if (!std::isfinite(x) || x == 0 || ndigits > 323) return x;
  if (ndigits < -308) return 0.0 * x;
  // The exact decimal value of |x| (at most 767 significant digits): d.ddd...e±X.
  char buf[800];
  std::snprintf(buf, sizeof buf, "%.780e", std::abs(x));
  const char* e = std::strchr(buf, 'e');
  const long exponent = std::strtol(e + 1, nullptr, 10);
  std::string digits(1, buf[0]);
  digits.append(buf + 2, static_cast<std::size_t>(e - (buf + 2)));
  // digits[k] is worth 10^(exponent - k): keep those worth at least 10^-ndigits, halves to even.
  const std::int64_t keep = exponent + ndigits + 1;
  if (keep >= static_cast<std::int64_t>(digits.size())) return x;
  if (keep < 0) return 0.0 * x;  // below half of 10^-ndigits
  const auto k = static_cast<std::size_t>(keep);
  bool up = digits[k] > '5';
  if (digits[k] == '5')
    up = digits.find_first_not_of('0', k + 1) != std::string::npos || (k > 0 && (digits[k - 1] - '0') % 2 == 1);
  std::string kept = k > 0 ? digits.substr(0, k) : "0";
  if (up) {
    std::size_t i = kept.size();
    while (i > 0 && kept[i - 1] == '9') kept[--i] = '0';
    if (i == 0) kept.insert(kept.begin(), '1');
    else ++kept[i - 1];
  }
  const double r = std::strtod((kept + "e" + std::to_string(exponent - keep + 1)).c_str(), nullptr);
  if (std::isinf(r)) return std::nullopt;
  return std::copysign(r, x);
}

}  // namespace plexus::jinja
