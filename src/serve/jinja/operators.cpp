// Python's operators on template values (see operators.h).
#include "serve/jinja/operators.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"
#include "serve/jinja/integers.h"
#include "serve/jinja/string_ops.h"

namespace plexus::jinja {
namespace {

[[noreturn]] void unsupported(Evaluator& ev, const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) ev.fail(a.name());
  if (b.is_undefined()) ev.fail(b.name());
  ev.fail("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool numeric(const Value& v) { return v.is_number() || v.is_bool(); }

// Checks and charges a new string of `size` bytes or list of `size` items before it is made.
void charge(Evaluator& ev, std::uint64_t size, bool list) {
  Work& work = ev.work();
  if (list) {
    work.check_items(size);
    work.steps(static_cast<std::int64_t>(size));
    work.bytes(kItemBytes, size, "copying lists");
  } else {
    work.check_size(size);
    work.bytes(size, "copying strings");
  }
}

Value repeat(Evaluator& ev, const Value& seq, const Value& count) {
  if (count.big()) ev.fail("cannot fit 'int' into an index-sized integer (" + count.brief() + " repeats)");
  const std::int64_t n = clamped_int(count);
  if (n <= 0) return seq.is_string() ? Value(std::string()) : Value::list({}, seq.is_tuple());
  const std::uint64_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size();
  std::uint64_t total = 0;
  if (__builtin_mul_overflow(unit, static_cast<std::uint64_t>(n), &total)) total = UINT64_MAX;
  charge(ev, total, seq.is_list());
  if (unit == 0) return seq.is_string() ? Value(std::string()) : Value::list({}, seq.is_tuple());  // any n: no loop
  if (seq.is_string()) {  // doubling copies of what is made so far
    const auto size = static_cast<std::size_t>(total);
    std::string out;
    out.reserve(size);
    out = seq.as_string();
    while (out.size() < size) out.append(out.data(), std::min(out.size(), size - out.size()));
    return Value(std::move(out));
  }
  List out;
  out.reserve(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return Value::list(std::move(out), seq.is_tuple());
}

Value arithmetic(Evaluator& ev, const std::string& op, const Value& a, const Value& b) {
  if (!numeric(a) || !numeric(b)) unsupported(ev, op, a, b);
  const bool ints = !a.is_float() && !b.is_float();
  if (op == "/") {
    if (ints ? (!b.big() && clamped_int(b) == 0) : b.as_number() == 0) ev.fail("division by zero");
    return Value(ints ? int_true_divide(ev, a, b) : float_of(ev, a) / float_of(ev, b));
  }
  if (ints) return int_arithmetic(ev, op, a, b);
  const double x = float_of(ev, a), y = float_of(ev, b);
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "**") return Value(std::pow(x, y));
  if (y == 0) ev.fail("float division by zero");
  const double q = std::floor(x / y);
  if (op == "//") return Value(q);
  double m = std::fmod(x, y);
  if (m != 0 && ((m < 0) != (y < 0))) m += y;
  return Value(m);
}

}  // namespace

bool contains(Evaluator& ev, const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case Value::Kind::kString:
      if (!needle.is_string())
        ev.fail("'in <string>' requires string as left operand, not " + needle.type_name());
      return find_text(ev, haystack.as_string(), needle.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : haystack.as_list())
        if (equal(v, needle, ev.work())) return true;
      return false;
    case Value::Kind::kDict:
      if (!needle.is_string()) return false;
      ev.work().bytes(needle.as_string().size(), "looking up a key");
      return haystack.as_dict().find(needle.as_string()) != nullptr;
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kNone:
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
    case Value::Kind::kFunction: break;
  }
  ev.fail("argument of type '" + haystack.type_name() + "' is not iterable");
}

Value binary(Evaluator& ev, const std::string& op, const Value& a, const Value& b) {
  Work& work = ev.work();
  if (op == "==") return Value(equal(a, b, work));
  if (op == "!=") return Value(!equal(a, b, work));
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    const bool comparable = (numeric(a) && numeric(b)) || (a.kind() == b.kind() && a.is_string()) ||
                            (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple());
    if (!comparable) {
      if (a.is_undefined() || b.is_undefined()) unsupported(ev, op, a, b);
      ev.fail("'" + op + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
    }
    if (op == "<") return Value(less(a, b, work));
    if (op == ">") return Value(less(b, a, work));
    if (op == "<=") return Value(!less(b, a, work));
    return Value(!less(a, b, work));
  }
  if (op == "in") return Value(contains(ev, b, a));
  if (op == "not in") return Value(!contains(ev, b, a));
  if (op == "~") {
    // Strings are read in place; other values printed first (charged as they are printed).
    const std::string x = a.is_string() ? std::string() : a.str(work), y = b.is_string() ? std::string() : b.str(work);
    const std::string& s = a.is_string() ? a.as_string() : x;
    const std::string& t = b.is_string() ? b.as_string() : y;
    charge(ev, std::uint64_t{s.size()} + t.size(), false);
    return Value(s + t);
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      charge(ev, std::uint64_t{a.as_string().size()} + b.as_string().size(), false);
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list()) {
      charge(ev, std::uint64_t{a.as_list().size()} + b.as_list().size(), true);
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value::list(std::move(out), a.is_tuple());
    }
    if (a.is_string() && !b.is_undefined()) ev.fail("can only concatenate str (not \"" + b.type_name() + "\") to str");
  }
  if (op == "%" && a.is_string()) return Value(printf_format(ev, a.as_string(), b));
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(ev, a, b);
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(ev, b, a);
  }
  return arithmetic(ev, op, a, b);
}

Value unary(Evaluator& ev, const std::string& op, const Value& v) {
  if (!numeric(v)) ev.fail(v.is_undefined() ? v.name() : "bad operand type for unary " + op + ": '" + v.type_name() + "'");
  if (op == "+") return v.is_bool() ? Value(clamped_int(v)) : v;
  if (v.is_float()) return Value(-v.as_number());
  return int_negate(ev, v);
}

Value slice(Evaluator& ev, const Value& obj, const Value& start, const Value& stop, const Value& step) {
  auto part = [&](const Value& v, const char* what) -> std::optional<std::int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) ev.fail(std::string("slice ") + what + " must be an integer or none, got " + v.type_name());
    return clamped_int(v);  // as Python clamps, past 64 bits
  };
  const auto a = part(start, "start"), b = part(stop, "stop"), c = part(step, "step");
  const std::int64_t st = c.value_or(1);
  if (st == 0) ev.fail("slice step cannot be zero");
  if (!obj.is_string() && !obj.is_list())
    ev.fail(obj.is_undefined() ? obj.name() : "'" + obj.type_name() + "' object is not subscriptable");
  Work& work = ev.work();
  std::size_t size = 0;
  if (obj.is_string()) {
    work.bytes(kCharCost, obj.as_string().size(), "slicing a string");
    size = count_chars(obj.as_string());
  } else {
    size = obj.as_list().size();
  }
  const auto n = static_cast<std::int64_t>(size);
  auto clamp = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
    if (!v) return dflt;
    std::int64_t x = *v;
    if (x < 0) x += n;
    if (st > 0) return std::clamp<std::int64_t>(x, 0, n);
    return std::clamp<std::int64_t>(x, -1, n - 1);
  };
  const std::int64_t from = clamp(a, st > 0 ? 0 : n - 1), to = clamp(b, st > 0 ? n : -1);
  // Python's slice length, without overflow (|st| may be 2^63 - 1).
  const std::uint64_t span = st > 0 ? (to > from ? static_cast<std::uint64_t>(to - from) : 0)
                                    : (from > to ? static_cast<std::uint64_t>(from - to) : 0);
  const std::uint64_t mag = st > 0 ? static_cast<std::uint64_t>(st) : 0 - static_cast<std::uint64_t>(st);
  const std::uint64_t count = span == 0 ? 0 : (span - 1) / mag + 1;
  auto index = [&](std::uint64_t k) {  // the k-th pick, k < count
    return static_cast<std::size_t>(st > 0 ? from + static_cast<std::int64_t>(k * mag) : from - static_cast<std::int64_t>(k * mag));
  };
  if (obj.is_string()) {
    const std::string& t = obj.as_string();
    std::string out;
    if (size == t.size() && st == 1) {  // one byte per character, one run
      out.assign(t, static_cast<std::size_t>(from), count);
    } else if (size == t.size()) {  // one byte per character
      out.reserve(count);
      for (std::uint64_t k = 0; k < count; ++k) out.push_back(t[index(k)]);
    } else if (st == 1) {  // one run of characters
      std::size_t begin = 0, i = 0;
      for (std::int64_t c = 0; c < from + static_cast<std::int64_t>(count); ++c) {
        if (c == from) begin = i;
        i += char_len(t, i);
      }
      out.assign(t, begin, count == 0 ? 0 : i - begin);
    } else {  // where each character starts, then the picks
      work.bytes(4 * kCharCost, t.size(), "slicing a string");  // a table of where characters start, then a copy each
      std::vector<std::uint32_t> starts;
      starts.reserve(size + 1);
      for (std::size_t i = 0; i < t.size(); i += char_len(t, i)) starts.push_back(static_cast<std::uint32_t>(i));
      starts.push_back(static_cast<std::uint32_t>(t.size()));
      for (std::uint64_t k = 0; k < count; ++k) {
        const std::size_t i = index(k);
        out.append(t, starts[i], starts[i + 1] - starts[i]);
      }
    }
    return Value(std::move(out));
  }
  charge(ev, count, true);
  List out;
  out.reserve(count);
  for (std::uint64_t k = 0; k < count; ++k) out.push_back(obj.as_list()[index(k)]);
  return Value::list(std::move(out), obj.is_tuple());
}

}  // namespace plexus::jinja
