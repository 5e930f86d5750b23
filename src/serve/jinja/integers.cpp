// Python's int on template values (see integers.h): 64-bit arithmetic while it does not
// overflow, BigInt after, with the size limit checked and each BigInt operation charged.
#include "serve/jinja/integers.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "serve/chat_template.h"
#include "serve/jinja/evaluator.h"

namespace plexus::jinja {
namespace {

// Bytes of work charged per pair of limbs a BigInt operation combines (a multiply-add).
constexpr std::uint64_t kLimbCost = 4;
// Long division goes a bit at a time: 32 passes per limb pair.
constexpr std::uint64_t kDivideCost = 32 * kLimbCost;
constexpr double kTwo63 = 9223372036854775808.0;

std::int64_t small_of(const Value& v) { return v.is_bool() ? v.as_bool() : v.as_int(); }
// An int or bool a double holds exactly (|v| <= 2^53).
bool exact_double(const Value& v) {
  constexpr std::int64_t kTwo53 = std::int64_t{1} << 53;
  return !v.big() && small_of(v) >= -kTwo53 && small_of(v) <= kTwo53;
}

void charge(Evaluator& ev, const BigInt& a, const BigInt& b, std::uint64_t per_pair) {
  ev.work().bytes(per_pair, std::uint64_t{a.limb_count() + 1} * (b.limb_count() + 1), "integer arithmetic");
}

std::string what_of(const Value& a, const std::string& op, const Value& b) { return a.brief() + " " + op + " " + b.brief(); }

// Python's a // b or a % b of 64-bit integers (b nonzero, not INT64_MIN // -1).
std::int64_t floor_div_mod(std::int64_t x, std::int64_t y, bool want_quotient) {
  std::int64_t q = x / y, m = x % y;
  if (m != 0 && ((m < 0) != (y < 0))) {
    --q;
    m += y;
  }
  return want_quotient ? q : m;
}

Value power(Evaluator& ev, const Value& a, const Value& b) {
  const bool negative_exponent = b.big() ? b.big()->negative() : small_of(b) < 0;
  if (negative_exponent) {  // Python: float(a) ** float(b)
    if (!a.big() && small_of(a) == 0) ev.fail("0.0 cannot be raised to a negative power");
    return Value(std::pow(float_of(ev, a), float_of(ev, b)));
  }
  if (!a.big() && small_of(a) >= -1 && small_of(a) <= 1) {  // 0, 1 and -1 stay small whatever the exponent
    const std::int64_t x = small_of(a);
    const bool zero_exponent = !b.big() && small_of(b) == 0;
    const bool odd_exponent = b.big() ? b.big()->is_odd() : (small_of(b) & 1) != 0;
    if (zero_exponent) return Value(1);
    return Value(x == -1 && !odd_exponent ? std::int64_t{1} : x);
  }
  // |a| >= 2: the result has more bits than the exponent.
  if (b.big() || small_of(b) >= static_cast<std::int64_t>(kMaxIntBits))
    ev.fail("integer overflow in " + what_of(a, "**", b) + " (past " + std::to_string(kMaxIntBits) + " bits, plexus's limit)");
  const auto e = static_cast<std::uint64_t>(small_of(b));
  if (e == 0) return Value(1);
  if (!a.big()) {
    std::int64_t r = 1;
    bool overflow = false;
    for (std::uint64_t i = 0; i < e && !overflow; ++i) overflow = __builtin_mul_overflow(r, small_of(a), &r);
    if (!overflow) return Value(r);
  }
  // Square and multiply from the exponent's top bit: every partial result divides the final
  // one, so the size check may stop at the first that is too large.
  const BigInt base = big_of(a);
  BigInt r(1);
  for (int bit = 63 - __builtin_clzll(e); bit >= 0; --bit) {
    charge(ev, r, r, kLimbCost);
    r = r * r;
    if ((e >> bit) & 1) {
      charge(ev, r, base, kLimbCost);
      r = r * base;
    }
    if (r.bit_length() > kMaxIntBits) break;
  }
  return checked_int(ev, r, what_of(a, "**", b));
}

}  // namespace

BigInt big_of(const Value& v) { return v.big() ? *v.big() : BigInt(small_of(v)); }

std::int64_t clamped_int(const Value& v) {
  if (!v.big()) return small_of(v);
  return v.big()->negative() ? INT64_MIN : INT64_MAX;
}

Value checked_int(Evaluator& ev, const BigInt& b, const std::string& what) {
  if (b.bit_length() > kMaxIntBits)
    ev.fail("integer overflow in " + what + " (past " + std::to_string(kMaxIntBits) + " bits, plexus's limit)");
  return Value(b);
}

Value int_arithmetic(Evaluator& ev, const std::string& op, const Value& a, const Value& b) {
  const bool division = op == "//" || op == "%";
  if (division && !b.big() && small_of(b) == 0) ev.fail(op == "//" ? "integer division by zero" : "integer modulo by zero");
  if (op == "**") return power(ev, a, b);
  if (!a.big() && !b.big()) {  // 64 bits while they hold the result
    const std::int64_t x = small_of(a), y = small_of(b);
    std::int64_t r = 0;
    if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value(r);
    if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value(r);
    if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value(r);
    if (division && !(x == INT64_MIN && y == -1)) return Value(floor_div_mod(x, y, op == "//"));
  }
  const BigInt x = big_of(a), y = big_of(b);
  charge(ev, x, y, division ? kDivideCost : kLimbCost);
  BigInt r;
  if (op == "+") {
    r = x + y;
  } else if (op == "-") {
    r = x - y;
  } else if (op == "*") {
    r = x * y;
  } else {
    BigInt quotient, remainder;
    floor_divmod(x, y, &quotient, &remainder);
    r = op == "//" ? quotient : remainder;
  }
  return checked_int(ev, r, what_of(a, op, b));
}

Value int_negate(Evaluator& ev, const Value& v) {
  if (!v.big() && small_of(v) != INT64_MIN) return Value(-small_of(v));
  return checked_int(ev, -big_of(v), "-" + v.brief());
}

Value int_abs(Evaluator& ev, const Value& v) {
  const bool negative = v.big() ? v.big()->negative() : small_of(v) < 0;
  return negative ? int_negate(ev, v) : Value(big_of(v));
}

double int_true_divide(Evaluator& ev, const Value& a, const Value& b) {
  if (exact_double(a) && exact_double(b))  // exact operands: one rounding
    return static_cast<double>(small_of(a)) / static_cast<double>(small_of(b));
  const BigInt x = big_of(a).abs(), y = big_of(b).abs();
  const bool negative = big_of(a).negative() != big_of(b).negative();
  if (x.is_zero()) return negative ? -0.0 : 0.0;
  // q = x / (y * 2^shift) with 55 or 56 bits (2 or 3 past a double's 53), and a sticky bit for
  // a remainder: the conversion to double then rounds once, as the exact quotient would. Not
  // below 2^-1076, two bits under the smallest subnormal, so subnormals round once too.
  const auto e = static_cast<long>(x.bit_length()) - static_cast<long>(y.bit_length());
  const long shift = std::max(e - 55, -1076L);
  const BigInt num = shift < 0 ? x.shifted_left(static_cast<std::size_t>(-shift)) : x;
  const BigInt den = shift > 0 ? y.shifted_left(static_cast<std::size_t>(shift)) : y;
  charge(ev, num, den, kDivideCost);
  BigInt q, r;
  floor_divmod(num, den, &q, &r);
  auto m = static_cast<std::uint64_t>(*q.to_int64());
  if (!r.is_zero()) m |= 1;
  const double d = std::ldexp(static_cast<double>(m), static_cast<int>(std::min(shift, 4096L)));
  if (std::isinf(d)) ev.fail("integer division result too large for a float");
  return negative ? -d : d;
}

Value round_int(Evaluator& ev, const Value& v, std::int64_t ndigits) {
  if (ndigits >= 0) return Value(big_of(v));
  // To a multiple of 10^k: past 1233 digits that is 0 for every integer a template holds.
  if (ndigits < -1233) return Value(0);
  const BigInt unit = BigInt::from_digits("1" + std::string(static_cast<std::size_t>(-ndigits), '0'), 10);
  const BigInt x = big_of(v);
  charge(ev, x, unit, kDivideCost);
  BigInt q, r;
  floor_divmod(x, unit, &q, &r);
  const int half = compare(r + r, unit);
  if (half > 0 || (half == 0 && q.is_odd())) q = q + BigInt(1);
  return checked_int(ev, q * unit, "round(" + v.brief() + ", " + std::to_string(ndigits) + ")");
}

double float_of(Evaluator& ev, const Value& v) {
  const double d = v.as_number();
  if (v.big() && std::isinf(d)) ev.fail("int too large to convert to float");
  return d;
}

Value int_of_float(Evaluator& ev, double f) {
  if (std::isnan(f)) ev.fail("cannot convert float NaN to integer");
  if (std::isinf(f)) ev.fail("cannot convert float infinity to integer");
  if (std::abs(f) < kTwo63) return Value(static_cast<std::int64_t>(f));
  return Value(BigInt::from_double(f));  // at most 1024 bits
}

namespace {

// An int (or bool) compared with a double, exactly.
int compare_int_float(const Value& i, double f) {
  if (std::isnan(f)) return 2;
  if (std::isinf(f)) return f > 0 ? -1 : 1;
  if (exact_double(i)) {
    const auto x = static_cast<double>(small_of(i));
    return x < f ? -1 : x > f ? 1 : 0;
  }
  const double whole = std::floor(f);
  const int c = compare(big_of(i), BigInt::from_double(whole));
  return c != 0 ? c : whole < f ? -1 : 0;
}

}  // namespace

int compare_numbers(const Value& a, const Value& b) {
  if (a.is_float() && b.is_float()) {
    const double x = a.as_number(), y = b.as_number();
    return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
  }
  if (a.is_float()) {
    const int c = compare_int_float(b, a.as_number());
    return c == 2 ? 2 : -c;
  }
  if (b.is_float()) return compare_int_float(a, b.as_number());
  if (!a.big() && !b.big()) return small_of(a) < small_of(b) ? -1 : small_of(a) > small_of(b) ? 1 : 0;
  return compare(big_of(a), big_of(b));
}

std::size_t hash_number(const Value& v) {
  if (v.is_float()) {
    const double f = v.as_number();
    if (f == std::trunc(f) && f >= -kTwo63 && f < kTwo63) return std::hash<std::int64_t>()(static_cast<std::int64_t>(f));
    return std::hash<double>()(f);
  }
  if (!v.big()) return std::hash<std::int64_t>()(small_of(v));
  // Past 64 bits: equal to a float only when the float holds it exactly.
  const double d = v.big()->to_double();
  if (std::isfinite(d) && compare(BigInt::from_double(d), *v.big()) == 0) return std::hash<double>()(d);
  return std::hash<std::string>()(v.big()->to_string(16));
}

std::string int_text(const Value& v, Work* work, int base) {
  if (!v.big() && base == 10) return std::to_string(small_of(v));
  const BigInt b = big_of(v);
  if (work) work->bytes(kLimbCost, std::uint64_t{b.limb_count() + 1} * (b.limb_count() + 1), "printing an integer");
  return b.to_string(base);
}

}  // namespace plexus::jinja
