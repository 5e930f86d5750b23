// Integer ranges split by digit count, then by the first digit that differs between the ends
// (the usual construction of a numeric-range regular expression).
#include "structured/number_range.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace plexus::structured {

namespace {

constexpr std::int64_t kCap = 999'999'999'999'999;  // 10^15 - 1

std::uint64_t pow10(int n) {
  std::uint64_t p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

int digits(std::uint64_t v) {
  int n = 1;
  while (v >= 10) v /= 10, ++n;
  return n;
}

std::string digit_class(char a, char b) {
  if (a == b) return std::string("\"") + a + "\"";
  if (a == '0' && b == '9') return "[0-9]";
  return std::string("[") + a + "-" + b + "]";
}

// Alternatives (each a sequence) for the equal-length digit strings from a to b, a <= b.
void same_length(const std::string& a, const std::string& b, const std::string& prefix, std::vector<std::string>& out) {
  if (a.empty()) {
    out.push_back(prefix.empty() ? "\"\"" : prefix);
    return;
  }
  const std::string ra = a.substr(1), rb = b.substr(1);
  const std::string sep = prefix.empty() ? "" : " ";
  if (a[0] == b[0]) {
    same_length(ra, rb, prefix + sep + digit_class(a[0], a[0]), out);
    return;
  }
  const bool low_full = ra.find_first_not_of('0') == std::string::npos;
  const bool high_full = rb.find_first_not_of('9') == std::string::npos;
  const std::string any_rest = ra.empty() ? "" : " [0-9]{" + std::to_string(ra.size()) + "}";
  char mid_lo = a[0], mid_hi = b[0];
  if (!low_full) {
    same_length(ra, std::string(ra.size(), '9'), prefix + sep + digit_class(a[0], a[0]), out);
    ++mid_lo;
  }
  if (!high_full) --mid_hi;
  if (mid_lo <= mid_hi) out.push_back(prefix + sep + digit_class(mid_lo, mid_hi) + any_rest);
  if (!high_full) same_length(std::string(rb.size(), '0'), rb, prefix + sep + digit_class(b[0], b[0]), out);
}

// Non-negative integers in [lo, hi].
void unsigned_range(std::uint64_t lo, std::uint64_t hi, const std::string& prefix, std::vector<std::string>& out) {
  for (int n = digits(lo); n <= digits(hi); ++n) {
    const std::uint64_t a = std::max(lo, n == 1 ? 0 : pow10(n - 1));
    const std::uint64_t b = std::min(hi, pow10(n) - 1);
    if (a > b) continue;
    same_length(std::to_string(a), std::to_string(b), prefix, out);
  }
}

std::string join(const std::vector<std::string>& alts) {
  std::string s = "(";
  for (std::size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : "") + alts[i];
  return s + ")";
}

void signed_range(std::int64_t lo, std::int64_t hi, std::vector<std::string>& out) {
  if (lo < 0) {  // -1 .. lo as "-" and a magnitude
    const std::uint64_t mlo = hi < 0 ? static_cast<std::uint64_t>(-hi) : 1;
    unsigned_range(mlo, static_cast<std::uint64_t>(-lo), "\"-\"", out);
  }
  if (hi >= 0) unsigned_range(static_cast<std::uint64_t>(std::max<std::int64_t>(lo, 0)), static_cast<std::uint64_t>(hi), "", out);
}

}  // namespace

std::string integer_range_grammar(std::int64_t lo, std::int64_t hi) {
  std::vector<std::string> alts;
  signed_range(lo, hi, alts);
  return join(alts);
}

std::string number_range_grammar(const NumberBounds& b) {
  const double lo = std::max(b.lo, -static_cast<double>(kCap)), hi = std::min(b.hi, static_cast<double>(kCap));
  const bool lo_ex = b.lo_exclusive && lo == b.lo, hi_ex = b.hi_exclusive && hi == b.hi;
  // Integers inside.
  const double L = lo_ex ? std::floor(lo) + 1 : std::ceil(lo);
  const double H = hi_ex ? std::ceil(hi) - 1 : std::floor(hi);
  std::vector<std::string> alts;
  if (L <= H) signed_range(static_cast<std::int64_t>(L), static_cast<std::int64_t>(H), alts);
  const std::string frac = " \".\" [0-9]{1,15}";
  // k >= 0 written k.ddd lies in [k, k+1): inside when k >= lo and k + 1 <= hi.
  const double k_hi = std::min(H, std::floor(hi - 1));
  if (std::max(L, 0.0) <= k_hi) {
    std::vector<std::string> k;
    unsigned_range(static_cast<std::uint64_t>(std::max(L, 0.0)), static_cast<std::uint64_t>(k_hi), "", k);
    alts.push_back(join(k) + frac);
  }
  // -0.ddd lies in (-1, 0] ("-0.0" is 0).
  if (lo <= -1 && (hi_ex ? hi > 0 : hi >= 0)) alts.push_back("\"-0\"" + frac);
  // k <= -1 written -m.ddd (m = -k) lies in (k - 1, k]: inside when k - 1 >= lo and k <= hi.
  const double neg_lo = std::max(L, std::ceil(lo) + 1), neg_hi = std::min(H, -1.0);
  if (neg_lo <= neg_hi) {
    std::vector<std::string> m;
    unsigned_range(static_cast<std::uint64_t>(-neg_hi), static_cast<std::uint64_t>(-neg_lo), "", m);
    alts.push_back("\"-\" " + join(m) + frac);
  }
  if (alts.empty()) {  // no integer inside: the midpoint, checked after printing
    const double mid = lo / 2 + hi / 2;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", mid);
    const double back = std::strtod(buf, nullptr);
    const bool inside = (lo_ex ? back > lo : back >= lo) && (hi_ex ? back < hi : back <= hi);
    if (!inside || std::string(buf).find_first_of("eEn") != std::string::npos) return "";
    alts.push_back(std::string("\"") + buf + "\"");
  }
  return join(alts);
}

}  // namespace plexus::structured
