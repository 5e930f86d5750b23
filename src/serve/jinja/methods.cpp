// The methods templates call on strings, lists and dicts (Python's), bound to their object.
// Lists and dicts are immutable, as in transformers' ImmutableSandboxedEnvironment: append,
// pop, update and the like fail with a TemplateError.
#include <algorithm>
#include <map>
#include <set>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"
#include "serve/jinja/integers.h"
#include "serve/jinja/string_ops.h"
#include "serve/jinja/text_search.h"

namespace plexus::jinja {
namespace {

using Method = Value (*)(Evaluator&, const Value&, CallArgs&);

std::string str_arg(Evaluator& ev, const CallArgs& a, std::size_t i, const char* name, const char* method) {
  const Value v = arg(ev, a, i, name);
  if (!v.is_string()) ev.fail(std::string(method) + "() argument must be str, not " + v.type_name());
  return v.as_string();
}

// A list of strings made by a method, its size checked (the parts were cut at limit + 1).
Value string_list(Evaluator& ev, std::vector<std::string> parts) {
  ev.work().check_items(parts.size());
  ev.work().steps(static_cast<std::int64_t>(parts.size()));
  ev.work().bytes(kItemBytes, parts.size(), "splitting a string");
  List out;
  out.reserve(parts.size());
  for (auto& p : parts) out.emplace_back(std::move(p));
  return Value::list(std::move(out));
}

// strip/lstrip/rstrip(chars=None)
Value do_strip(Evaluator& ev, const Value& s, CallArgs& a, const char* name, bool left, bool right) {
  check_args(ev, a, name, 1, {});
  const Value chars = arg(ev, a, 0, "chars");
  if (!chars.is_undefined() && !chars.is_none() && !chars.is_string()) ev.fail(std::string(name) + " arg must be None or str");
  const std::string* set = chars.is_string() ? &chars.as_string() : nullptr;
  return Value(strip_text(ev, s.as_string(), set, left, right));
}
Value m_strip(Evaluator& ev, const Value& s, CallArgs& a) { return do_strip(ev, s, a, "strip", true, true); }
Value m_lstrip(Evaluator& ev, const Value& s, CallArgs& a) { return do_strip(ev, s, a, "lstrip", true, false); }
Value m_rstrip(Evaluator& ev, const Value& s, CallArgs& a) { return do_strip(ev, s, a, "rstrip", false, true); }

Value m_split(Evaluator& ev, const Value& s, CallArgs& a) {
  check_args(ev, a, "split", 2, {"sep", "maxsplit"});
  const Value sep = arg(ev, a, 0, "sep"), maxsplit = arg(ev, a, 1, "maxsplit", Value(-1));
  const std::int64_t n = to_int(ev, maxsplit, "split's maxsplit");
  const std::string& t = s.as_string();
  if (sep.is_undefined() || sep.is_none()) {
    ev.work().bytes(kCharCost, t.size(), "splitting a string");
    return string_list(ev, split(t, nullptr, n, ev.limits().max_items));
  }
  if (!sep.is_string()) ev.fail("split() separator must be str or None, not " + sep.type_name());
  if (sep.as_string().empty()) ev.fail("split(): empty separator");
  charge_search(ev, t.size(), sep.as_string().size(), "splitting a string");
  return string_list(ev, split(t, &sep.as_string(), n, ev.limits().max_items));
}

Value m_splitlines(Evaluator& ev, const Value& s, CallArgs& a) {
  check_args(ev, a, "splitlines", 1, {"keepends"});
  ev.work().bytes(kCharCost, s.as_string().size(), "splitting a string");
  return string_list(ev, splitlines(s.as_string(), arg(ev, a, 0, "keepends", Value(false)).truthy(), ev.limits().max_items));
}

// startswith/endswith(prefix or tuple of prefixes)
Value affix(Evaluator& ev, const Value& s, CallArgs& a, bool start) {
  check_args(ev, a, start ? "startswith" : "endswith", 1, {});
  const Value p = arg(ev, a, 0, "prefix");
  const List options = p.is_list() ? p.as_list() : List{p};
  const std::string& t = s.as_string();
  for (const Value& o : options) {
    if (!o.is_string()) ev.fail(std::string(start ? "startswith" : "endswith") + " first arg must be str or a tuple of str, not " + o.type_name());
    const std::string& x = o.as_string();
    ev.work().steps(1);
    if (x.size() > t.size()) continue;
    if (compare_text(x, std::string_view(t).substr(start ? 0 : t.size() - x.size(), x.size()), ev.work()) == 0) return Value(true);
  }
  return Value(false);
}
Value m_startswith(Evaluator& ev, const Value& s, CallArgs& a) { return affix(ev, s, a, true); }
Value m_endswith(Evaluator& ev, const Value& s, CallArgs& a) { return affix(ev, s, a, false); }

// upper, lower, title, capitalize: a string function of the string (no longer than it).
template <std::string (*F)(const std::string&)>
Value m_text(Evaluator& ev, const Value& s, CallArgs& a) {
  check_args(ev, a, "this method", 0);
  return Value(change_case(ev, s.as_string(), F));
}
Value m_replace(Evaluator& ev, const Value& s, CallArgs& a) {
  check_args(ev, a, "replace", 3, {});
  const Value count = arg(ev, a, 2, "count", Value(-1));
  return Value(replace_text(ev, s.as_string(), str_arg(ev, a, 0, "old", "replace"), str_arg(ev, a, 1, "new", "replace"),
                            to_int(ev, count, "replace's count")));
}

// The code point index of byte offset `pos` in s (find returns code point indices, as Python).
std::int64_t char_index(Evaluator& ev, const std::string& s, std::size_t pos) {
  ev.work().bytes(kCharCost, pos, "counting characters");
  return static_cast<std::int64_t>(count_chars(std::string_view(s).substr(0, pos)));
}
Value m_find(Evaluator& ev, const Value& s, CallArgs& a) {
  check_args(ev, a, "find", 1, {});
  const std::size_t f = find_text(ev, s.as_string(), str_arg(ev, a, 0, "sub", "find"));
  return Value(f == std::string::npos ? std::int64_t{-1} : char_index(ev, s.as_string(), f));
}
Value m_rfind(Evaluator& ev, const Value& s, CallArgs& a) {
  check_args(ev, a, "rfind", 1, {});
  const std::string sub = str_arg(ev, a, 0, "sub", "rfind");
  const std::string& t = s.as_string();
  if (sub.empty()) return Value(char_index(ev, t, t.size()));
  if (sub.size() > t.size()) return Value(std::int64_t{-1});
  charge_search(ev, t.size(), sub.size(), "searching a string");
  const std::size_t f = Searcher(sub).rfind(t);
  return Value(f == std::string::npos ? std::int64_t{-1} : char_index(ev, t, f));
}
Value m_count(Evaluator& ev, const Value& s, CallArgs& a) {
  check_args(ev, a, "count", 1, {});
  if (s.is_list()) {
    const Value x = arg(ev, a, 0, "value");
    std::int64_t n = 0;
    for (const Value& y : s.as_list()) n += equal(y, x, ev.work());
    return Value(n);
  }
  return Value(static_cast<std::int64_t>(count_text(ev, s.as_string(), str_arg(ev, a, 0, "sub", "count"), UINT64_MAX)));
}
Value m_join(Evaluator& ev, const Value& s, CallArgs& a) {
  check_args(ev, a, "join", 1, {});
  const std::string& sep = s.as_string();
  std::string out;
  bool first = true;
  for (const Value& x : ev.iterate(arg(ev, a, 0, "iterable"))) {
    if (!x.is_string()) ev.fail("join: expected str instance, " + x.type_name() + " found");
    if (!first) ev.work().append(out, sep, "joining strings");
    first = false;
    ev.work().append(out, x.as_string(), "joining strings");
  }
  return Value(std::move(out));
}
// str.format with positional "{}" / "{0}" and keyword "{name}" fields (no format specs).
Value m_format(Evaluator& ev, const Value& s, CallArgs& a) {
  const std::string& t = s.as_string();
  ev.work().bytes(t.size(), "formatting a string");
  std::string out;
  auto put = [&](std::string_view piece) { ev.work().append(out, piece, "formatting a string"); };
  std::size_t next = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if ((t[i] == '{' || t[i] == '}') && i + 1 < t.size() && t[i + 1] == t[i]) {
      put(std::string_view(&t[i++], 1));
      continue;
    }
    if (t[i] == '}') ev.fail("format: single '}' encountered in the format string");
    if (t[i] != '{') {
      const std::size_t stop = t.find_first_of("{}", i);
      const std::size_t end = stop == std::string::npos ? t.size() : stop;
      put(std::string_view(t).substr(i, end - i));
      i = end - 1;
      continue;
    }
    const std::size_t close = t.find('}', i);
    if (close == std::string::npos) ev.fail("format: single '{' encountered in the format string");
    const std::string field = t.substr(i + 1, close - i - 1);
    Value v;
    if (field.empty()) {
      v = arg(ev, a, next++, "");
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      v = arg(ev, a, field.size() > 9 ? SIZE_MAX : static_cast<std::size_t>(std::stoul(field)), "");
    } else {
      v = arg(ev, a, SIZE_MAX, field.c_str());
    }
    if (v.is_undefined()) ev.fail("format: no argument for the field " + Value("{" + field.substr(0, 80) + "}").brief());
    if (v.is_string()) put(v.as_string());
    else put(v.str(ev.work()));
    i = close;
  }
  return Value(std::move(out));
}
#define PLEXUS_STRING_PREDICATE(fn, cond)                                           \
  Value fn(Evaluator& ev, const Value& s, CallArgs& a) {                            \
    check_args(ev, a, #fn, 0);                                                      \
    const std::string& t = s.as_string();                                           \
    ev.work().bytes(t.size(), "testing a string");                                  \
    if (t.empty()) return Value(false);                                             \
    for (unsigned char c : t)                                                       \
      if (!(cond)) return Value(false);                                             \
    return Value(true);                                                             \
  }
PLEXUS_STRING_PREDICATE(m_isdigit, c >= '0' && c <= '9')
PLEXUS_STRING_PREDICATE(m_isspace, is_py_space(c))
PLEXUS_STRING_PREDICATE(m_isalpha, (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80)
PLEXUS_STRING_PREDICATE(m_isalnum, (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80)
#undef PLEXUS_STRING_PREDICATE

// items, keys, values: lists made from a dict (its keys copied).
Value dict_list(Evaluator& ev, const Value& d, CallArgs& a, const char* name, int part) {
  check_args(ev, a, name, 0);
  ev.work().steps(static_cast<std::int64_t>(d.as_dict().size()));
  List out;
  out.reserve(d.as_dict().size());
  for (const auto& [k, v] : d.as_dict().items()) {
    ev.work().bytes(kItemBytes * 3 + (part == 1 ? 0 : k.size()), "listing a dict");
    if (part == 0) out.push_back(Value::list({Value(k), v}, true));
    else if (part == 1) out.push_back(v);
    else out.emplace_back(k);
  }
  return Value::list(std::move(out));
}
Value m_items(Evaluator& ev, const Value& d, CallArgs& a) { return dict_list(ev, d, a, "items", 0); }
Value m_values(Evaluator& ev, const Value& d, CallArgs& a) { return dict_list(ev, d, a, "values", 1); }
Value m_keys(Evaluator& ev, const Value& d, CallArgs& a) { return dict_list(ev, d, a, "keys", 2); }
Value m_get(Evaluator& ev, const Value& d, CallArgs& a) {
  check_args(ev, a, "get", 2, {});
  const Value key = arg(ev, a, 0, "key");
  if (key.is_string()) {
    ev.work().bytes(key.as_string().size(), "looking up a key");
    if (const Value* v = d.as_dict().find(key.as_string())) return *v;
  }
  return arg(ev, a, 1, "default", Value::none());
}
Value m_index(Evaluator& ev, const Value& l, CallArgs& a) {
  check_args(ev, a, "index", 1, {});
  const Value x = arg(ev, a, 0, "value");
  for (std::size_t i = 0; i < l.as_list().size(); ++i)
    if (equal(l.as_list()[i], x, ev.work())) return Value(static_cast<std::int64_t>(i));
  ev.fail(x.brief() + " is not in list");
}

const std::map<std::string, Method>& string_methods() {
  static const std::map<std::string, Method> kMethods = {
      {"strip", m_strip},       {"lstrip", m_lstrip},     {"rstrip", m_rstrip},   {"split", m_split},
      {"splitlines", m_splitlines}, {"startswith", m_startswith}, {"endswith", m_endswith},
      {"upper", m_text<upper>}, {"lower", m_text<lower>}, {"title", m_text<python_title>},
      {"capitalize", m_text<capitalize>},
      {"replace", m_replace},   {"find", m_find},         {"rfind", m_rfind},     {"count", m_count},
      {"join", m_join},         {"format", m_format},     {"isdigit", m_isdigit}, {"isspace", m_isspace},
      {"isalpha", m_isalpha},   {"isalnum", m_isalnum},
  };
  return kMethods;
}
const std::map<std::string, Method>& dict_methods() {
  static const std::map<std::string, Method> kMethods = {
      {"items", m_items}, {"keys", m_keys}, {"values", m_values}, {"get", m_get}};
  return kMethods;
}
const std::map<std::string, Method>& list_methods() {
  static const std::map<std::string, Method> kMethods = {{"index", m_index}, {"count", m_count}};
  return kMethods;
}
// Methods that would change a list or dict: the sandbox refuses them.
bool is_mutating(const Value& obj, const std::string& name) {
  static const std::set<std::string> kList = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
  static const std::set<std::string> kDict = {"update", "pop", "popitem", "clear", "setdefault"};
  return (obj.is_list() && kList.count(name)) || (obj.is_dict() && kDict.count(name));
}

// namespace(...) and dict(...): the items of dicts given, then the keyword arguments.
Dict dict_of_args(Evaluator& ev, const CallArgs& a, const char* what) {
  Dict d;
  for (const Value& p : a.positional) {
    if (!p.is_dict()) ev.fail(std::string(what) + "() takes keyword arguments or a dict");
    ev.work().steps(static_cast<std::int64_t>(p.as_dict().size()));
    for (const auto& [k, v] : p.as_dict().items()) {
      ev.work().bytes(kItemBytes + 3 * std::uint64_t{k.size()}, "copying a dict");  // the key copied twice and hashed
      d.set(k, v);
    }
  }
  for (const auto& [k, v] : a.keyword) d.set(k, v);
  return d;
}

}  // namespace

Value method(const Value& obj, const std::string& name) {
  const std::map<std::string, Method>* table = obj.is_string() ? &string_methods()
                                               : obj.is_dict() && !obj.is_namespace() ? &dict_methods()
                                               : obj.is_list()                        ? &list_methods()
                                                                                      : nullptr;
  if (table) {
    const auto it = table->find(name);
    if (it != table->end()) {
      const Method m = it->second;
      return Value::function(name, [obj, m](Evaluator& ev, CallArgs& a) { return m(ev, obj, a); });
    }
  }
  if (is_mutating(obj, name))  // undefined, as the sandbox's: not `defined`, an error when called
    return Value::undefined("'" + obj.type_name() + "." + name +
                            "' is not allowed: templates cannot change lists or dicts (use a namespace)");
  return Value::undefined();
}

void add_builtin_globals(Dict& globals) {
  globals.set("range", Value::function("range", [](Evaluator& ev, CallArgs& a) -> Value {
    check_args(ev, a, "range", 3);
    if (a.positional.empty()) ev.fail("range expected at least 1 argument, got 0");
    // Python's range over its unbounded integers (any two may be past 64 bits and the items
    // still few): the count first, checked before any item is made.
    auto bound = [&](std::size_t i, const char* what) {
      const Value& v = a.positional[i];
      return v.is_int() || v.is_bool() ? big_of(v) : BigInt(to_int(ev, v, what));
    };
    const bool one = a.positional.size() == 1;
    const BigInt start = one ? BigInt(0) : bound(0, "range's start");
    const BigInt stop = one ? bound(0, "range's argument") : bound(1, "range's stop");
    const BigInt step = a.positional.size() == 3 ? bound(2, "range's step") : BigInt(1);
    if (step.is_zero()) ev.fail("range() arg 3 must not be zero");
    const BigInt span = step.negative() ? start - stop : stop - start;
    std::int64_t n = 0;  // ceil(span / |step|)
    if (!span.negative() && !span.is_zero()) {
      const Value count = int_arithmetic(ev, "//", Value(span - BigInt(1)), Value(step.abs()));
      if (count.big() || count.as_int() >= ev.limits().max_range)
        ev.fail("range() of more than " + std::to_string(ev.limits().max_range) + " items is not allowed");
      n = count.as_int() + 1;
    }
    ev.work().check_items(static_cast<std::uint64_t>(n));
    ev.work().steps(n);
    ev.work().bytes(kItemBytes, static_cast<std::uint64_t>(n), "making a range");
    const auto small_start = start.to_int64(), small_step = step.to_int64();
    if (!small_start || !small_step)  // items past 64 bits: their limbs too
      ev.work().bytes(4 * (std::max(start.limb_count(), stop.limb_count()) + 1), static_cast<std::uint64_t>(n), "making a range");
    List out;
    out.reserve(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
      std::int64_t x = 0;  // in 64 bits while the items fit them
      if (small_start && small_step && !__builtin_mul_overflow(k, *small_step, &x) && !__builtin_add_overflow(x, *small_start, &x))
        out.emplace_back(x);
      else
        out.emplace_back(start + BigInt(k) * step);
    }
    return Value::list(std::move(out));
  }));
  globals.set("namespace", Value::function("namespace", [](Evaluator& ev, CallArgs& a) {
    return Value::dict(dict_of_args(ev, a, "namespace"), true);
  }));
  globals.set("dict", Value::function("dict", [](Evaluator& ev, CallArgs& a) {
    return Value::dict(dict_of_args(ev, a, "dict"));
  }));
}

}  // namespace plexus::jinja
