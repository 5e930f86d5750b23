// Python's unbounded integers for the template engine: a sign and a magnitude of 32-bit limbs,
// with the arithmetic, comparison, text and float conversions Python defines on int. Sizes are
// the caller's to bound (integers.h caps them and charges their work).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plexus::jinja {

class BigInt {
 public:
  BigInt() = default;
  explicit BigInt(std::int64_t v);
  // The integer part of a finite double (exact: every double's integer part is an integer).
  static BigInt from_double(double f);
  // The value of `digits` in `base` (2..36): each a digit below base, no sign or underscore.
  static BigInt from_digits(std::string_view digits, int base);

  bool negative() const { return negative_; }
  bool is_zero() const { return limbs_.empty(); }
  bool is_odd() const { return !limbs_.empty() && (limbs_[0] & 1); }
  std::size_t bit_length() const;  // of the magnitude; 0 for zero
  std::size_t limb_count() const { return limbs_.size(); }
  std::optional<std::int64_t> to_int64() const;
  // Python's float(int): the nearest double, ties to even; +-infinity past the double range.
  double to_double() const;
  // The digits in `base` (2..36, lower case), "-" first when negative (Python's str, hex, oct).
  std::string to_string(int base = 10) const;

  BigInt operator-() const;
  BigInt abs() const;
  // The magnitude times 2^bits, sign kept.
  BigInt shifted_left(std::size_t bits) const;

  friend BigInt operator+(const BigInt& a, const BigInt& b);
  friend BigInt operator-(const BigInt& a, const BigInt& b);
  friend BigInt operator*(const BigInt& a, const BigInt& b);
  // -1, 0 or 1 as a <, ==, > b.
  friend int compare(const BigInt& a, const BigInt& b);
  // Python's a // b and a % b (b nonzero): the quotient rounded down, the remainder taking b's sign.
  friend void floor_divmod(const BigInt& a, const BigInt& b, BigInt* quotient, BigInt* remainder);

 private:
  using Limbs = std::vector<std::uint32_t>;  // little-endian, no leading zero limb
  BigInt(bool negative, Limbs limbs);

  bool negative_ = false;  // never true for zero
  Limbs limbs_;
};

}  // namespace plexus::jinja
