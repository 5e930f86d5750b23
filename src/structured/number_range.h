// Grammar text for JSON numbers within bounds: integers in [lo, hi] as decimal-digit
// alternatives, and bounded `number`s built from them so that every string lies inside the bounds.
#pragma once
#include <cstdint>
#include <string>

namespace plexus::structured {

// A GBNF expression (alternatives in parentheses) matching exactly the decimal spellings of the
// integers in [lo, hi] (lo <= hi), without leading zeros or "-0".
std::string integer_range_grammar(std::int64_t lo, std::int64_t hi);

// Bounds of a JSON Schema `number`: each side inclusive or exclusive; infinite sides allowed.
struct NumberBounds {
  double lo = 0, hi = 0;
  bool lo_exclusive = false, hi_exclusive = false;
};

// A GBNF expression for numbers within `b`, or "" when the construction finds none (then the
// caller reports it): integers k inside the bounds, "k.ddd" where all of [k, k+1) lies inside
// ("-m.ddd" for (-m-1, -m)), and when no integer lies inside, the midpoint as a constant.
// Infinite sides are capped at +-(10^15 - 1).
std::string number_range_grammar(const NumberBounds& b);

}  // namespace plexus::structured
