// Python's unbounded integers (see big_int.h): schoolbook arithmetic on 32-bit limbs, long
// division a bit at a time (one-limb divisors a limb at a time), text by repeated division.
#include "serve/jinja/big_int.h"

#include <algorithm>
#include <cmath>

namespace plexus::jinja {
namespace {

using Limbs = std::vector<std::uint32_t>;

void trim(Limbs& x) {
  while (!x.empty() && x.back() == 0) x.pop_back();
}

Limbs limbs_of(std::uint64_t m) {
  Limbs out{static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(m >> 32)};
  trim(out);
  return out;
}

std::size_t bits_of(const Limbs& x) {
  return x.empty() ? 0 : (x.size() - 1) * 32 + (32 - static_cast<std::size_t>(__builtin_clz(x.back())));
}

int compare_mag(const Limbs& a, const Limbs& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (std::size_t i = a.size(); i-- > 0;)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

Limbs add_mag(const Limbs& a, const Limbs& b) {
  const Limbs& x = a.size() >= b.size() ? a : b;
  const Limbs& y = a.size() >= b.size() ? b : a;
  Limbs out(x.size() + 1);
  std::uint64_t carry = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::uint64_t s = std::uint64_t{x[i]} + (i < y.size() ? y[i] : 0) + carry;
    out[i] = static_cast<std::uint32_t>(s);
    carry = s >> 32;
  }
  out[x.size()] = static_cast<std::uint32_t>(carry);
  trim(out);
  return out;
}

// a -= b, where a >= b.
void sub_in_place(Limbs& a, const Limbs& b) {
  std::uint32_t borrow = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::uint64_t take = std::uint64_t{i < b.size() ? b[i] : 0} + borrow;
    if (take == 0 && i >= b.size()) break;
    borrow = a[i] < take;
    a[i] = static_cast<std::uint32_t>(std::uint64_t{a[i]} - take);
  }
  trim(a);
}

Limbs mul_mag(const Limbs& a, const Limbs& b) {
  if (a.empty() || b.empty()) return {};
  Limbs out(a.size() + b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::uint64_t carry = 0;  // a[i] * b[j] + out + carry < 2^64
    for (std::size_t j = 0; j < b.size(); ++j) {
      const std::uint64_t t = std::uint64_t{a[i]} * b[j] + out[i + j] + carry;
      out[i + j] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
    out[i + b.size()] = static_cast<std::uint32_t>(carry);
  }
  trim(out);
  return out;
}

// a /= d in place (d nonzero); the remainder.
std::uint32_t div_small(Limbs& a, std::uint32_t d) {
  std::uint64_t r = 0;
  for (std::size_t i = a.size(); i-- > 0;) {
    const std::uint64_t cur = (r << 32) | a[i];
    a[i] = static_cast<std::uint32_t>(cur / d);
    r = cur % d;
  }
  trim(a);
  return static_cast<std::uint32_t>(r);
}

// q = a / b and r = a % b of magnitudes (b nonzero).
void divmod_mag(const Limbs& a, const Limbs& b, Limbs* q, Limbs* r) {
  if (compare_mag(a, b) < 0) {
    *q = {};
    *r = a;
    return;
  }
  if (b.size() == 1) {
    *q = a;
    *r = limbs_of(div_small(*q, b[0]));
    return;
  }
  // Long division a bit at a time: the remainder doubles, takes the next bit, and b is
  // subtracted whenever it fits.
  Limbs quo(a.size()), rem;
  rem.reserve(b.size() + 1);
  for (std::size_t bit = bits_of(a); bit-- > 0;) {
    std::uint32_t carry = (a[bit / 32] >> (bit % 32)) & 1;
    for (std::uint32_t& limb : rem) {
      const std::uint32_t top = limb >> 31;
      limb = (limb << 1) | carry;
      carry = top;
    }
    if (carry) rem.push_back(carry);
    if (compare_mag(rem, b) >= 0) {
      sub_in_place(rem, b);
      quo[bit / 32] |= std::uint32_t{1} << (bit % 32);
    }
  }
  trim(quo);
  *q = std::move(quo);
  *r = std::move(rem);
}

}  // namespace

BigInt::BigInt(bool negative, Limbs limbs) : negative_(negative), limbs_(std::move(limbs)) {
  trim(limbs_);
  if (limbs_.empty()) negative_ = false;
}

BigInt::BigInt(std::int64_t v)
    : BigInt(v < 0, limbs_of(v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v))) {}

BigInt BigInt::from_double(double f) {
  f = std::trunc(f);
  if (f == 0) return BigInt();
  int exp = 0;
  const double m = std::frexp(std::abs(f), &exp);  // |f| = m * 2^exp, m in [0.5, 1), exp >= 1
  const auto mantissa = static_cast<std::uint64_t>(std::ldexp(m, 64));  // exact: 53 bits
  if (exp < 64) return BigInt(f < 0, limbs_of(mantissa >> (64 - exp)));  // the bits shifted out are zeros
  return BigInt(f < 0, limbs_of(mantissa)).shifted_left(static_cast<std::size_t>(exp - 64));
}

BigInt BigInt::from_digits(std::string_view digits, int base) {
  Limbs out;
  for (const char c : digits) {
    std::uint64_t carry = static_cast<std::uint64_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    for (std::uint32_t& limb : out) {
      const std::uint64_t t = std::uint64_t{limb} * static_cast<std::uint64_t>(base) + carry;
      limb = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
    if (carry) out.push_back(static_cast<std::uint32_t>(carry));
  }
  return BigInt(false, std::move(out));
}

std::size_t BigInt::bit_length() const { return bits_of(limbs_); }

std::optional<std::int64_t> BigInt::to_int64() const {
  if (limbs_.size() > 2) return std::nullopt;
  std::uint64_t m = 0;
  for (std::size_t i = limbs_.size(); i-- > 0;) m = (m << 32) | limbs_[i];
  const std::uint64_t most = negative_ ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  if (m > most) return std::nullopt;
  return negative_ ? static_cast<std::int64_t>(0 - m) : static_cast<std::int64_t>(m);
}

double BigInt::to_double() const {
  const std::size_t bits = bit_length();
  // The top 64 bits, and a 1 in the lowest of them when any bit below is set: one rounding
  // (in the conversion to double) then sees what nearest-even needs; the scaling is exact.
  std::size_t low = bits > 64 ? bits - 64 : 0;
  const std::size_t word = low / 32, shift = low % 32;
  unsigned __int128 chunk = 0;
  for (std::size_t k = 0; k < 3 && word + k < limbs_.size(); ++k) chunk |= static_cast<unsigned __int128>(limbs_[word + k]) << (32 * k);
  auto top = static_cast<std::uint64_t>(chunk >> shift);
  bool sticky = shift > 0 && word < limbs_.size() && (limbs_[word] & ((std::uint32_t{1} << shift) - 1)) != 0;
  for (std::size_t i = 0; i < word && !sticky; ++i) sticky = limbs_[i] != 0;
  if (sticky) top |= 1;
  const double d = std::ldexp(static_cast<double>(top), static_cast<int>(std::min<std::size_t>(low, 2000)));
  return negative_ ? -d : d;
}

std::string BigInt::to_string(int base) const {
  if (limbs_.empty()) return "0";
  // Chunks of `per` digits: the remainders of dividing by base^per (the largest below 2^32).
  std::uint32_t chunk = static_cast<std::uint32_t>(base);
  int per = 1;
  while (std::uint64_t{chunk} * static_cast<std::uint64_t>(base) < (std::uint64_t{1} << 32)) {
    chunk *= static_cast<std::uint32_t>(base);
    ++per;
  }
  std::string out;  // reversed
  Limbs rest = limbs_;
  while (!rest.empty()) {
    std::uint32_t r = div_small(rest, chunk);
    for (int k = 0; k < per && (r != 0 || !rest.empty()); ++k, r /= static_cast<std::uint32_t>(base))
      out.push_back("0123456789abcdefghijklmnopqrstuvwxyz"[r % static_cast<std::uint32_t>(base)]);
  }
  if (negative_) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return out;
}

BigInt BigInt::operator-() const { return BigInt(!negative_, limbs_); }
BigInt BigInt::abs() const { return BigInt(false, limbs_); }

BigInt BigInt::shifted_left(std::size_t bits) const {
  if (limbs_.empty()) return *this;
  Limbs out(bits / 32, 0);
  out.reserve(bits / 32 + limbs_.size() + 1);
  const std::size_t s = bits % 32;
  std::uint32_t carry = 0;
  for (const std::uint32_t limb : limbs_) {
    out.push_back(s == 0 ? limb : (limb << s) | carry);
    carry = s == 0 ? 0 : limb >> (32 - s);
  }
  out.push_back(carry);
  return BigInt(negative_, std::move(out));
}

BigInt operator+(const BigInt& a, const BigInt& b) {
  if (a.negative_ == b.negative_) return BigInt(a.negative_, add_mag(a.limbs_, b.limbs_));
  const int c = compare_mag(a.limbs_, b.limbs_);
  if (c == 0) return BigInt();
  BigInt::Limbs diff = c > 0 ? a.limbs_ : b.limbs_;
  sub_in_place(diff, c > 0 ? b.limbs_ : a.limbs_);
  return BigInt(c > 0 ? a.negative_ : b.negative_, std::move(diff));
}

BigInt operator-(const BigInt& a, const BigInt& b) { return a + -b; }

BigInt operator*(const BigInt& a, const BigInt& b) { return BigInt(a.negative_ != b.negative_, mul_mag(a.limbs_, b.limbs_)); }

int compare(const BigInt& a, const BigInt& b) {
  if (a.negative_ != b.negative_) return a.negative_ ? -1 : 1;
  const int c = compare_mag(a.limbs_, b.limbs_);
  return a.negative_ ? -c : c;
}

void floor_divmod(const BigInt& a, const BigInt& b, BigInt* quotient, BigInt* remainder) {
  BigInt::Limbs q, r;
  divmod_mag(a.limbs_, b.limbs_, &q, &r);
  if (a.negative_ == b.negative_ || r.empty()) {  // truncation is the floor
    *quotient = BigInt(a.negative_ != b.negative_, std::move(q));
    *remainder = BigInt(a.negative_, std::move(r));
    return;
  }
  // Signs differ and the division is inexact: one further down, the remainder from b's side.
  BigInt::Limbs b_minus_r = b.limbs_;
  sub_in_place(b_minus_r, r);
  *quotient = BigInt(true, add_mag(q, limbs_of(1)));
  *remainder = BigInt(b.negative_, std::move(b_minus_r));
}

}  // namespace plexus::jinja
