// Checked integer arithmetic for sizes, shapes, budgets and counts read from input: an overflow
// is an InputError naming what was being computed, never a wrapped (silently wrong) value.
#pragma once
#include <cstdint>
#include <string>

#include "core/error.h"

namespace plexus {

[[noreturn]] inline void throw_overflow(const std::string& what) {
  throw InputError(what + " overflows a 64-bit integer: a size or count in the input is far too large");
}

// a * b; `what` names the quantity ("config.json: parameter count") when it overflows.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow(what);
  return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const std::string& what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow(what);
  return r;
}

inline std::uint64_t checked_add_u64(std::uint64_t a, std::uint64_t b, const std::string& what) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow(what);
  return r;
}

inline std::uint64_t checked_mul_u64(std::uint64_t a, std::uint64_t b, const std::string& what) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow(what);
  return r;
}

}  // namespace plexus
