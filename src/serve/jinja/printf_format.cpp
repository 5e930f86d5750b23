// Python's printf-style string formatting (`"%s: %d" % (a, b)` and jinja2's `format` filter):
// %(name)s with a mapping, flags "-+ 0#", width and precision (numbers or *), the length
// modifiers h l L (ignored), and the conversions s r a c d i u x X o e E f F g G %, with
// Python's results (widths and precisions in full: past the output limit they are an error).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"
#include "serve/jinja/integers.h"
#include "serve/jinja/string_ops.h"

namespace plexus::jinja {
namespace {

struct Spec {
  bool left = false, plus = false, space = false, zero = false, alt = false;
  std::uint64_t width = 0;
  std::optional<std::uint64_t> precision;
  char conv = 0;
};

// Digits of |n| in base 10, 16 or 8 (conv 'd', 'x', 'X' or 'o'), zero-padded to `precision` digits.
std::string integer_digits(Evaluator& ev, const Value& n, char conv, std::uint64_t precision) {
  std::string digits = int_text(int_abs(ev, n), &ev.work(), conv == 'd' ? 10 : conv == 'o' ? 8 : 16);
  if (conv == 'X')
    for (char& c : digits) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return (precision > digits.size() ? std::string(precision - digits.size(), '0') : std::string()) + digits;
}

// A float's text without width: C's printf agrees with Python except for NaN's sign. Its
// size is bounded from the precision and the exponent, checked and charged, then formatted once.
std::string float_text(Evaluator& ev, double f, const Spec& spec) {
  const char lower = static_cast<char>(spec.conv | 0x20);
  if (std::isnan(f)) {
    const std::string nan = lower == spec.conv ? "nan" : "NAN";
    return (spec.plus ? "+" : spec.space ? " " : "") + nan;
  }
  std::string c_spec = "%";
  if (spec.plus) c_spec += '+';
  if (spec.space) c_spec += ' ';
  if (spec.alt) c_spec += '#';
  const std::uint64_t precision = spec.precision.value_or(6);
  c_spec += "." + std::to_string(precision) + spec.conv;
  // Sign, point and exponent ("e+308") take at most 8 bytes; %f adds the integer digits (at most
  // 309 for a finite double), %g at most 4 leading zeros ("0.0000123"), %e one digit.
  const double magnitude = std::abs(f);
  const std::uint64_t whole_digits = lower == 'f' && std::isfinite(magnitude) && magnitude >= 1
                                           ? static_cast<std::uint64_t>(std::log10(magnitude)) + 2
                                           : 5;
  const std::uint64_t bound = 8 + whole_digits + precision;
  ev.work().check_size(bound);
  ev.work().bytes(bound, "formatting a number");
  std::string out(bound + 1, '\0');
  const int n = std::snprintf(out.data(), out.size(), c_spec.c_str(), f);
  if (n < 0 || static_cast<std::uint64_t>(n) > bound) ev.fail("format: cannot format " + python_float(f));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// The field of one conversion of `v`, before its width is applied (the caller counts its
// characters: the width counts characters).
std::string convert(Evaluator& ev, const Value& v, const Spec& spec) {
  Work& work = ev.work();
  const char conv = spec.conv;
  const std::string what = std::string("format: %") + conv + " format: ";
  if (conv == 's' || conv == 'r' || conv == 'a') {
    std::string text = conv == 's' ? v.str(work) : v.repr(work, conv == 'a');
    if (spec.precision && *spec.precision < text.size()) {  // the first `precision` characters
      std::size_t at = 0;
      for (std::uint64_t k = 0; k < *spec.precision && at < text.size(); ++k) at += char_len(text, at);
      text.resize(at);
    }
    return text;
  }
  if (conv == 'c') {
    if (v.is_string() && !v.as_string().empty() && char_len(v.as_string(), 0) == v.as_string().size()) return v.as_string();
    if (!v.is_int() && !v.is_bool()) ev.fail(what + "%c requires an int or a single character, not " + v.type_name());
    const std::int64_t cp = clamped_int(v);
    if (cp < 0 || cp > 0x10FFFF) ev.fail(what + "%c arg not in range(0x110000)");
    std::string out;
    std::size_t len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    static const unsigned char kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
    out.resize(len);
    auto c = static_cast<std::uint32_t>(cp);
    for (std::size_t k = len - 1; k > 0; --k, c >>= 6) out[k] = static_cast<char>(0x80 | (c & 0x3F));
    out[0] = static_cast<char>(len == 1 ? c : (kLead[len] | c));
    return out;
  }
  const bool integer_conv = std::strchr("diuxXo", conv) != nullptr;
  if (integer_conv) {
    Value n;
    if (v.is_int() || v.is_bool()) n = v;
    else if (v.is_float() && std::strchr("diu", conv)) n = int_of_float(ev, v.as_number());
    else ev.fail(what + (std::strchr("diu", conv) ? "a real number is required, not " : "an integer is required, not ") + v.type_name());
    const bool negative = compare_numbers(n, Value(0)) < 0;
    const std::uint64_t precision = spec.precision.value_or(0);
    work.check_size(precision);
    work.bytes(precision, "formatting a number");
    const char base = conv == 'x' || conv == 'X' || conv == 'o' ? conv : 'd';
    std::string sign = negative ? "-" : spec.plus ? "+" : spec.space ? " " : "";
    if (spec.alt && base != 'd') sign += base == 'o' ? "0o" : base == 'x' ? "0x" : "0X";
    return sign + integer_digits(ev, n, base, precision);
  }
  if (std::strchr("eEfFgG", conv)) {
    if (!v.is_number() && !v.is_bool()) ev.fail(what + "must be real number, not " + v.type_name());
    return float_text(ev, float_of(ev, v), spec);
  }
  ev.fail(std::string("format: unsupported format character ") + Value(std::string(1, conv)).brief());
}

}  // namespace

std::string printf_format(Evaluator& ev, std::string_view fmt, const Value& args) {
  Work& work = ev.work();
  const std::uint64_t max = ev.limits().max_output;
  work.bytes(fmt.size(), "formatting a string");
  const bool mapping = args.is_dict();
  const std::size_t count = args.is_tuple() ? args.as_list().size() : 1;
  std::size_t next = 0;
  auto next_arg = [&]() -> Value {
    if (next >= count) ev.fail("format: not enough arguments for format string");
    return args.is_tuple() ? args.as_list()[next++] : (++next, args);
  };
  std::string out;
  auto put = [&](std::string_view piece) { work.append(out, piece, "formatting a string"); };
  // A width or precision: digits (saturating at 10^18) or * (the next argument). As Python's,
  // a negative * width left-justifies by its absolute value (`left`); a negative precision is 0.
  auto number = [&](std::size_t& i, bool* left) -> std::uint64_t {
    if (i < fmt.size() && fmt[i] == '*') {
      ++i;
      const std::int64_t n = to_int(ev, next_arg(), "format: * width or precision");
      if (n >= 0) return static_cast<std::uint64_t>(n);
      if (!left) return 0;
      *left = true;
      return static_cast<std::uint64_t>(-(n + 1)) + 1;
    }
    std::uint64_t n = 0;
    for (; i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9'; ++i)
      n = std::min<std::uint64_t>(n * 10 + static_cast<std::uint64_t>(fmt[i] - '0'), 1'000'000'000'000'000'000);
    return n;
  };
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    const std::size_t pct = fmt.find('%', i);
    put(fmt.substr(i, pct == std::string_view::npos ? std::string_view::npos : pct - i));
    if (pct == std::string_view::npos) break;
    i = pct + 1;
    if (i >= fmt.size()) ev.fail("format: incomplete format");
    Value v;
    bool have = false;
    if (fmt[i] == '(') {
      const std::size_t close = fmt.find(')', i);
      if (close == std::string_view::npos || !mapping) ev.fail("format: a %(name) field needs a mapping");
      const std::string key(fmt.substr(i + 1, close - i - 1));
      work.bytes(key.size(), "looking up a key");
      const Value* found = args.as_dict().find(key);
      if (!found) ev.fail("format: no key " + Value(key.substr(0, 80)).brief());
      v = *found;
      have = true;
      i = close + 1;
    }
    Spec spec;
    for (; i < fmt.size() && std::strchr("-+ 0#", fmt[i]) && fmt[i] != '\0'; ++i) {
      spec.left = spec.left || fmt[i] == '-';
      spec.plus = spec.plus || fmt[i] == '+';
      spec.space = spec.space || fmt[i] == ' ';
      spec.zero = spec.zero || fmt[i] == '0';
      spec.alt = spec.alt || fmt[i] == '#';
    }
    spec.width = number(i, &spec.left);
    if (i < fmt.size() && fmt[i] == '.') spec.precision = number(++i, nullptr);
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) ev.fail("format: incomplete format");
    spec.conv = fmt[i];
    if (spec.conv == '\0') ev.fail("format: unsupported format character '\\x00'");
    if (spec.width > max || spec.precision.value_or(0) > max)
      ev.fail("format: a width or precision of " + std::to_string(std::max(spec.width, spec.precision.value_or(0))) +
              " makes a string past the " + std::to_string(max) + "-byte output limit");
    if (spec.conv == '%') {
      put("%");
      continue;
    }
    if (!have) v = next_arg();
    const std::string field = convert(ev, v, spec);
    // Python's width counts characters; numbers pad with zeros after their sign and prefix.
    const std::uint64_t chars = spec.conv == 's' || spec.conv == 'r' || spec.conv == 'a' || spec.conv == 'c'
                                    ? (work.bytes(kCharCost, field.size(), "formatting a string"), count_chars(field))
                                    : field.size();
    const std::uint64_t pad = spec.width > chars ? spec.width - chars : 0;
    work.check_size(out.size() + field.size() + pad);
    if (pad == 0) {
      put(field);
    } else if (spec.left) {
      put(field);
      put(std::string(pad, ' '));
    } else if (spec.zero && std::strchr("diuxXoeEfFgG", spec.conv)) {
      std::size_t head = field.find_first_not_of("+- ");
      if (head == std::string::npos) head = 0;
      if (spec.alt && field.size() > head + 1 && field[head] == '0' && std::strchr("xXo", field[head + 1])) head += 2;
      put(std::string_view(field).substr(0, head));
      put(std::string(pad, '0'));
      put(std::string_view(field).substr(head));
    } else {
      put(std::string(pad, ' '));
      put(field);
    }
  }
  // Python checks only tuples and single values (a list or dict argument is taken as a mapping).
  if (!mapping && (args.is_tuple() || !args.is_list()) && next < count)
    ev.fail("format: not all arguments converted during string formatting");
  return out;
}

}  // namespace plexus::jinja
