// Python's int on template values: 64-bit fast paths, a BigInt past them (up to kMaxIntBits,
// its work charged), and the int/float conversions, exact mixed comparisons and hashes Python
// defines.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/jinja/big_int.h"
#include "serve/jinja/value.h"

namespace plexus::jinja {

class Evaluator;
class Work;

// The integers a template makes have at most this many bits (1,234 decimal digits; Python's
// are unbounded, and it prints at most 4,300 digits); past it a TemplateError names the operation.
inline constexpr std::size_t kMaxIntBits = 4096;

// The integer of an int or bool value.
BigInt big_of(const Value& v);
// An int or bool value clamped to 64 bits (as Python clamps slice bounds).
std::int64_t clamped_int(const Value& v);
// `b` as an int value; TemplateError "integer overflow in <what> (past 4096 bits, ...)" past kMaxIntBits.
Value checked_int(Evaluator& ev, const BigInt& b, const std::string& what);

// a op b of ints and bools for + - * // % ** (** of a negative exponent is a float, as Python's).
Value int_arithmetic(Evaluator& ev, const std::string& op, const Value& a, const Value& b);
// -v and abs(v) of an int or bool.
Value int_negate(Evaluator& ev, const Value& v);
Value int_abs(Evaluator& ev, const Value& v);
// Python's a / b of ints and bools (b nonzero): the exact quotient rounded once to a double.
double int_true_divide(Evaluator& ev, const Value& a, const Value& b);
// Python's round(v, ndigits) of an int or bool: an int (halves to even).
Value round_int(Evaluator& ev, const Value& v, std::int64_t ndigits);
// Python's float(v) of a number; TemplateError "int too large to convert to float" past its range.
double float_of(Evaluator& ev, const Value& v);
// Python's int(f): exact for any finite double; TemplateError for infinity and NaN.
Value int_of_float(Evaluator& ev, double f);

// -1, 0 or 1 as number a <, ==, > b (ints, bools, floats), compared exactly as Python does
// (2**53 + 1 != 2.0**53); 2 when they are unordered (a NaN).
int compare_numbers(const Value& a, const Value& b);
// Python's hash of a number, consistent with compare_numbers (1, 1.0 and True hash alike, and
// 2**64 and 2.0**64).
std::size_t hash_number(const Value& v);
// The digits of an int in `base` (2..36, lower case) after a "-" when negative (str() in base
// 10); a BigInt's work charged to `work` when given.
std::string int_text(const Value& v, Work* work, int base = 10);

}  // namespace plexus::jinja
