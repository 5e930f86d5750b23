// jinja2's built-in filters (the ones chat templates use), with transformers' `tojson`. Each
// charges its work and checks the sizes it makes before making them (work.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"
#include "serve/jinja/integers.h"
#include "serve/jinja/string_ops.h"

namespace plexus::jinja {
namespace {

using Filter = Value (*)(Evaluator&, const Value&, CallArgs&);

// The text of a value: a string in place, anything else printed (charged) into `holder`.
std::string_view text_view(Evaluator& ev, const Value& v, std::string& holder) {
  if (v.is_string()) return v.as_string();
  holder = text_of(ev, v);
  return holder;
}

// jinja2's ignore_case: a string lower-cased (charged), other values as they are.
Value fold_case(Evaluator& ev, const Value& v, bool case_sensitive) {
  if (case_sensitive || !v.is_string()) return v;
  ev.work().bytes(kCaseMapCost, v.as_string().size(), "lower-casing a string");
  return Value(lower(v.as_string()));
}

Value f_trim(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "trim", 1, {"chars"});
  const Value chars = arg(ev, a, 0, "chars");
  std::string holder;
  const std::string_view s = text_view(ev, v, holder);
  return Value(strip_text(ev, s, chars.is_string() ? &chars.as_string() : nullptr, true, true));
}

Value f_tojson(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "tojson", 2, {"indent", "ensure_ascii", "separators", "sort_keys"});
  const Value indent = arg(ev, a, 0, "indent");
  // Python's json.dumps: an integer indent is that many spaces (none when negative), a string is itself.
  std::string unit;
  const bool indented = indent.is_int() || indent.is_string();
  if (indent.is_string()) unit = indent.as_string();
  if (indent.is_int() && clamped_int(indent) > 0) {
    ev.work().check_size(static_cast<std::uint64_t>(clamped_int(indent)));
    unit.assign(static_cast<std::size_t>(clamped_int(indent)), ' ');
  }
  std::string item_sep = indented ? "," : ", ", key_sep = ": ";
  const Value seps = arg(ev, a, 99, "separators");
  if (seps.is_list() && seps.as_list().size() == 2 && seps.as_list()[0].is_string() && seps.as_list()[1].is_string()) {
    item_sep = seps.as_list()[0].as_string();
    key_sep = seps.as_list()[1].as_string();
  }
  return Value(to_json_text(ev, v, indented ? &unit : nullptr, item_sep, key_sep, arg(ev, a, 99, "sort_keys").truthy(),
                            arg(ev, a, 99, "ensure_ascii", Value(false)).truthy()));
}

Value f_length(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "length", 0);
  switch (v.kind()) {
    case Value::Kind::kString:
      ev.work().bytes(kCharCost, v.as_string().size(), "counting characters");
      return Value(static_cast<std::int64_t>(count_chars(v.as_string())));
    case Value::Kind::kList: return Value(static_cast<std::int64_t>(v.as_list().size()));
    case Value::Kind::kDict: return Value(static_cast<std::int64_t>(v.as_dict().size()));
    case Value::Kind::kUndefined: return Value(0);
    case Value::Kind::kNone:
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
    case Value::Kind::kFunction: break;
  }
  ev.fail("object of type '" + v.type_name() + "' has no len()");
}

// upper, lower, title, capitalize: a string function of the value's text (no longer than it).
template <std::string (*F)(const std::string&)>
Value f_text(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "this filter", 0);
  return Value(change_case(ev, text_of(ev, v), F));
}

Value f_join(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "join", 2, {"d", "attribute"});
  std::string sep_holder;
  const Value d = arg(ev, a, 0, "d", Value(""));
  const std::string_view sep = text_view(ev, d, sep_holder);
  const Value attribute = arg(ev, a, 1, "attribute");
  const std::optional<AttrPath> path = attribute.is_undefined() ? std::nullopt : std::optional<AttrPath>(AttrPath(ev, attribute));
  std::string out;
  bool first = true;
  for (const Value& item : ev.iterate(v)) {
    const Value x = path ? path->of(ev, item) : item;
    std::string holder;
    const std::string_view piece = text_view(ev, x, holder);
    if (!first) ev.work().append(out, sep, "joining strings");
    first = false;
    ev.work().append(out, piece, "joining strings");
  }
  return Value(std::move(out));
}

Value f_replace(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "replace", 3, {"old", "new", "count"});
  const Value count = arg(ev, a, 2, "count");
  return Value(replace_text(ev, text_of(ev, v), text_of(ev, arg(ev, a, 0, "old")), text_of(ev, arg(ev, a, 1, "new")),
                            count.is_undefined() || count.is_none() ? -1 : to_int(ev, count, "replace count")));
}

Value f_default(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "default", 2, {"default_value", "boolean"});
  const Value fallback = arg(ev, a, 0, "default_value", Value(""));
  const bool boolean = arg(ev, a, 1, "boolean", Value(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return fallback;
  return v;
}

// first and last: the end of a list, string (a character) or dict (a key), without copying it.
Value end_item(Evaluator& ev, const Value& v, bool last) {
  const char* what = last ? "last of an empty sequence is undefined" : "first of an empty sequence is undefined";
  if (v.is_list()) {
    const List& l = v.as_list();
    return l.empty() ? Value::undefined(what) : last ? l.back() : l.front();
  }
  if (v.is_string()) {
    const std::string& t = v.as_string();
    if (t.empty()) return Value::undefined(what);
    const std::size_t at = last ? prev_char_start(t, t.size()) : 0;
    return Value(t.substr(at, char_len(t, at)));
  }
  if (v.is_dict()) {
    const auto& items = v.as_dict().items();
    return items.empty() ? Value::undefined(what) : Value(last ? items.back().first : items.front().first);
  }
  if (v.is_undefined()) return Value::undefined(what);
  ev.fail("'" + v.type_name() + "' object is not iterable");
}
Value f_first(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "first", 0);
  return end_item(ev, v, false);
}
Value f_last(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "last", 0);
  return end_item(ev, v, true);
}
Value f_list(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "list", 0);
  return Value::list(ev.iterate(v));
}
Value f_string(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "string", 0);
  return Value(text_of(ev, v));
}

// jinja2's int: int(value) (a string: int(value, base)); on a ValueError or TypeError,
// int(float(value)) ("42.5" gives 42); when that fails too, the default. int() of an infinite
// float ('inf' too) raises (jinja2 lets OverflowError through); of NaN ('nan' too) it is a
// ValueError, so the default.
Value f_int(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "int", 2, {"default", "base"});
  const Value fallback = arg(ev, a, 0, "default", Value(0));
  const Value base = arg(ev, a, 1, "base", Value(10));
  if (v.is_undefined()) ev.fail(v.name());
  if (v.is_int()) return v;
  if (v.is_bool()) return Value(static_cast<std::int64_t>(v.as_bool()));
  if (v.is_float()) return std::isnan(v.as_number()) ? fallback : int_of_float(ev, v.as_number());
  if (!v.is_string()) return fallback;
  if (base.is_int() || base.is_bool())  // a base past 64 bits is no base: Python's ValueError
    if (const auto i = parse_python_int(ev, v.as_string(), clamped_int(base))) return *i;
  ev.work().bytes(v.as_string().size(), "reading a number");
  const auto f = parse_python_float(v.as_string());
  if (!f || std::isnan(*f)) return fallback;
  return int_of_float(ev, *f);
}

Value f_float(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "float", 1, {"default"});
  const Value fallback = arg(ev, a, 0, "default", Value(0.0));
  if (v.is_undefined()) ev.fail(v.name());
  if (v.is_number() || v.is_bool()) return Value(float_of(ev, v));
  if (!v.is_string()) return fallback;
  ev.work().bytes(v.as_string().size(), "reading a number");
  const auto f = parse_python_float(v.as_string());
  return f ? Value(*f) : fallback;
}

Value f_abs(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "abs", 0);
  if (v.is_float()) return Value(std::abs(v.as_number()));
  if (!v.is_int() && !v.is_bool()) ev.fail("bad operand type for abs(): '" + v.type_name() + "'");
  return int_abs(ev, v);
}

Value f_round(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "round", 2, {"precision", "method"});
  const Value digits = arg(ev, a, 0, "precision", Value(0));
  // An int precision past 64 bits rounds as the nearest 64-bit one does.
  const std::int64_t ndigits = digits.is_int() ? clamped_int(digits) : to_int(ev, digits, "round precision");
  const Value method_value = arg(ev, a, 1, "method", Value("common"));
  const std::string method = method_value.is_string() ? method_value.as_string() : method_value.brief();
  if (!v.is_number() && !v.is_bool()) ev.fail("round needs a number, got " + v.type_name());
  // Python's round() of an int is an int, of a float a float rounded by its exact decimal value.
  if (method == "common" && !v.is_float()) return round_int(ev, v, ndigits);
  if (method == "common") {
    ev.work().bytes(1024, "rounding a number");  // its exact decimal digits, written and read
    const auto r = python_round(v.as_number(), ndigits);
    if (!r) ev.fail("rounded value too large to represent");
    return Value(*r);
  }
  if (method != "ceil" && method != "floor")
    ev.fail("round method must be 'common', 'ceil' or 'floor', got " + Value(method.substr(0, 80)).brief());
  // jinja2's ceil and floor: math.ceil(value * 10**precision) / 10**precision, in doubles. Python
  // fails past 10**308 (int too large to convert to float) and on an infinite product; below
  // 10**-323 the scale is 0.0, and dividing by it fails.
  if (ndigits > 308) ev.fail("int too large to convert to float");
  if (ndigits < -323) ev.fail("float division by zero");
  const double scale = std::pow(10.0, static_cast<double>(ndigits));
  const double x = float_of(ev, v) * scale;
  if (std::isinf(x)) ev.fail("cannot convert float infinity to integer");
  if (std::isnan(x)) ev.fail("cannot convert float NaN to integer");
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

// select/reject/selectattr/rejectattr: keep the items whose test (or truth) is `keep`.
Value select_items(Evaluator& ev, const Value& v, CallArgs& a, bool keep, bool by_attr) {
  List out;
  if (!v.truthy()) return Value::list({});  // jinja2 iterates only a true value
  const std::size_t first_arg = by_attr ? 1 : 0;
  const Value attribute = by_attr ? arg(ev, a, 0, "attribute") : Value();
  if (by_attr && attribute.is_undefined()) ev.fail("selectattr/rejectattr need an attribute name");
  const std::optional<AttrPath> path = by_attr ? std::optional<AttrPath>(AttrPath(ev, attribute)) : std::nullopt;
  std::string test;
  CallArgs test_args;
  if (a.positional.size() > first_arg) {
    const Value& name = a.positional[first_arg];
    test = name.is_string() ? name.as_string() : name.brief();
    test_args.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(first_arg) + 1, a.positional.end());
  }
  for (const Value& item : ev.iterate(v)) {
    const Value subject = path ? path->of(ev, item) : item;
    CallArgs call = test_args;
    const bool ok = test.empty() ? subject.truthy() : apply_test(ev, test, subject, call);
    if (ok == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}
Value f_select(Evaluator& ev, const Value& v, CallArgs& a) { return select_items(ev, v, a, true, false); }
Value f_reject(Evaluator& ev, const Value& v, CallArgs& a) { return select_items(ev, v, a, false, false); }
Value f_selectattr(Evaluator& ev, const Value& v, CallArgs& a) { return select_items(ev, v, a, true, true); }
Value f_rejectattr(Evaluator& ev, const Value& v, CallArgs& a) { return select_items(ev, v, a, false, true); }

Value f_map(Evaluator& ev, const Value& v, CallArgs& a) {
  List out;
  if (!v.truthy()) return Value::list({});  // jinja2 iterates only a true value
  const Value attribute = arg(ev, a, 99, "attribute");
  if (!attribute.is_undefined()) {
    const AttrPath path(ev, attribute);
    const Value fallback = arg(ev, a, 99, "default");
    for (const Value& item : ev.iterate(v)) {
      Value x = path.of(ev, item);
      out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : x);
    }
    return Value::list(std::move(out));
  }
  if (a.positional.empty()) ev.fail("map needs a filter name or attribute=");
  const std::string name = a.positional[0].is_string() ? a.positional[0].as_string() : a.positional[0].brief();
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : ev.iterate(v)) {
    CallArgs call = rest;
    out.push_back(apply_filter(ev, name, item, call));
  }
  return Value::list(std::move(out));
}

// The key of each item: `attribute` of it (or itself), case folded; the bytes charged.
std::vector<Value> keys_of(Evaluator& ev, const List& items, const Value& attribute, bool case_sensitive) {
  const std::optional<AttrPath> path = attribute.is_undefined() ? std::nullopt : std::optional<AttrPath>(AttrPath(ev, attribute));
  ev.work().bytes(kItemBytes, items.size(), "making sort keys");
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const Value& item : items) keys.push_back(fold_case(ev, path ? path->of(ev, item) : item, case_sensitive));
  return keys;
}

Value f_unique(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "unique", 2, {"case_sensitive", "attribute"});
  // As jinja2: a set of the keys seen (hashes, then equality among equal hashes).
  const List items = ev.iterate(v);
  const std::vector<Value> keys = keys_of(ev, items, arg(ev, a, 1, "attribute"), arg(ev, a, 0, "case_sensitive", Value(false)).truthy());
  std::unordered_multimap<std::size_t, std::size_t> seen;  // hash -> index of a kept key
  List out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::size_t h = hash_key(keys[i], ev.work());
    bool found = false;
    for (auto [it, end] = seen.equal_range(h); it != end && !found; ++it) found = equal(keys[it->second], keys[i], ev.work());
    if (found) continue;
    ev.work().bytes(kItemBytes, 1, "remembering the items seen");  // a node of the set
    seen.emplace(h, i);
    out.push_back(items[i]);
  }
  return Value::list(std::move(out));
}

Value f_items(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "items", 0);
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) ev.fail("items needs a mapping, got " + v.type_name());
  CallArgs none;
  return method(v, "items").as_function()(ev, none);
}

// Python's sorted(items, key=keys[i], reverse=reverse): stable; a reversed sort keeps equal
// items in their order too.
Value sorted_by(Evaluator& ev, const List& items, const std::vector<Value>& keys, bool reverse) {
  ev.work().bytes(kItemBytes, items.size(), "sorting");  // the order and the sorted list
  std::vector<std::size_t> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  Work& work = ev.work();
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return reverse ? less(keys[y], keys[x], work) : less(keys[x], keys[y], work);
  });
  List out;
  out.reserve(items.size());
  for (std::size_t i : order) out.push_back(items[i]);
  return Value::list(std::move(out));
}

Value f_dictsort(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "dictsort", 3, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) ev.fail("dictsort needs a mapping, got " + v.type_name());
  const Value by = arg(ev, a, 1, "by", Value("key"));
  if (!by.is_string() || (by.as_string() != "key" && by.as_string() != "value"))
    ev.fail("dictsort: you can only sort by either \"key\" or \"value\"");
  CallArgs none;
  const Value pairs = method(v, "items").as_function()(ev, none);
  const bool cs = arg(ev, a, 0, "case_sensitive", Value(false)).truthy();
  ev.work().bytes(kItemBytes, pairs.as_list().size(), "making sort keys");
  std::vector<Value> keys;
  for (const Value& pair : pairs.as_list()) keys.push_back(fold_case(ev, pair.as_list()[by.as_string() == "value" ? 1 : 0], cs));
  return sorted_by(ev, pairs.as_list(), keys, arg(ev, a, 2, "reverse", Value(false)).truthy());
}

Value f_sort(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "sort", 3, {"reverse", "case_sensitive", "attribute"});
  const List items = ev.iterate(v);
  const bool cs = arg(ev, a, 1, "case_sensitive", Value(false)).truthy();
  const Value attribute = arg(ev, a, 2, "attribute");
  std::vector<Value> keys;
  if (attribute.is_string() && attribute.as_string().find(',') != std::string::npos) {
    // jinja2's make_multi_attrgetter: "a,b" sorts by the list of both.
    const std::string comma = ",";
    ev.work().bytes(attribute.as_string().size(), "reading an attribute path");
    std::vector<std::vector<Value>> columns;
    for (const std::string& part : split(attribute.as_string(), &comma, -1, ev.limits().max_items))
      columns.push_back(keys_of(ev, items, Value(part), cs));
    ev.work().bytes(kItemBytes, std::uint64_t{items.size()} * columns.size(), "sorting");
    for (std::size_t i = 0; i < items.size(); ++i) {
      List row;
      for (const auto& column : columns) row.push_back(column[i]);
      keys.push_back(Value::list(std::move(row)));
    }
  } else {
    keys = keys_of(ev, items, attribute, cs);
  }
  return sorted_by(ev, items, keys, arg(ev, a, 0, "reverse", Value(false)).truthy());
}

Value f_reverse(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "reverse", 0);
  if (v.is_string()) {  // by characters: each written at its mirrored place
    const std::string& t = v.as_string();
    ev.work().bytes(kCharCost, t.size(), "reversing a string");
    if (is_ascii(t)) return Value(std::string(t.rbegin(), t.rend()));
    std::string out(t.size(), '\0');
    for (std::size_t i = 0; i < t.size();) {
      const std::size_t n = char_len(t, i);
      for (std::size_t k = 0; k < n; ++k) out[t.size() - i - n + k] = t[i + k];
      i += n;
    }
    return Value(std::move(out));
  }
  List out = ev.iterate(v);
  std::reverse(out.begin(), out.end());
  return Value::list(std::move(out));
}

Value f_sum(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "sum", 2, {"attribute", "start"});
  const Value attribute = arg(ev, a, 0, "attribute");
  const std::optional<AttrPath> path = attribute.is_undefined() ? std::nullopt : std::optional<AttrPath>(AttrPath(ev, attribute));
  Value total = arg(ev, a, 1, "start", Value(0));
  if (!total.is_number() && !total.is_bool()) ev.fail("sum needs a number to start from, got " + total.type_name());
  for (const Value& item : ev.iterate(v)) {
    const Value x = path ? path->of(ev, item) : item;
    if (!x.is_number() && !x.is_bool()) ev.fail("sum needs numbers, got " + x.type_name());
    if (total.is_float() || x.is_float()) {
      total = Value(float_of(ev, total) + float_of(ev, x));
      continue;
    }
    total = int_arithmetic(ev, "+", total, x);
  }
  return total;
}

// jinja2's min/max: the first smallest (largest) item by its key (case folded unless case_sensitive).
Value min_max(Evaluator& ev, const Value& v, CallArgs& a, bool want_max) {
  check_args(ev, a, want_max ? "max" : "min", 2, {"case_sensitive", "attribute"});
  const List items = ev.iterate(v);
  if (items.empty()) return Value::undefined("min/max of an empty sequence is undefined");
  const std::vector<Value> keys = keys_of(ev, items, arg(ev, a, 1, "attribute"), arg(ev, a, 0, "case_sensitive", Value(false)).truthy());
  std::size_t best = 0;
  for (std::size_t i = 1; i < items.size(); ++i)
    if (want_max ? less(keys[best], keys[i], ev.work()) : less(keys[i], keys[best], ev.work())) best = i;
  return items[best];
}
Value f_max(Evaluator& ev, const Value& v, CallArgs& a) { return min_max(ev, v, a, true); }
Value f_min(Evaluator& ev, const Value& v, CallArgs& a) { return min_max(ev, v, a, false); }

Value f_safe(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "safe", 0);
  return v;
}

Value f_escape(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "escape", 0);
  std::string holder;
  const std::string_view s = text_view(ev, v, holder);
  auto escaped = [](char c) -> const char* {
    switch (c) {
      case '&': return "&amp;";
      case '<': return "&lt;";
      case '>': return "&gt;";
      case '"': return "&#34;";
      case '\'': return "&#39;";
      default: return nullptr;
    }
  };
  // A character loop (charged as one) measures the result, checked and charged before it is made.
  ev.work().bytes(kCharCost, s.size(), "escaping a string");
  std::uint64_t size = 0;
  for (char c : s) size += escaped(c) ? std::char_traits<char>::length(escaped(c)) : 1;
  ev.work().check_size(size);
  ev.work().bytes(size, "escaping a string");
  std::string out;
  out.reserve(size);
  for (char c : s) {
    if (const char* e = escaped(c)) out += e;
    else out.push_back(c);
  }
  return Value(std::move(out));
}

// jinja2's indent: each line after the first (and the first with first=true) gets the width's
// spaces (or the width's string); lines of nothing stay as they are unless blank=true.
Value f_indent(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "indent", 3, {"width", "first", "blank"});
  const Value w = arg(ev, a, 0, "width", Value(4));
  std::string pad;
  if (w.is_string()) {
    pad = w.as_string();
  } else {
    const std::int64_t n = to_int(ev, w, "indent width");
    ev.work().check_size(static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0)));
    pad.assign(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)), ' ');
  }
  const bool first = arg(ev, a, 1, "first", Value(false)).truthy();
  const bool blank = arg(ev, a, 2, "blank", Value(false)).truthy();
  std::string holder;
  const std::string_view text = text_view(ev, v, holder);
  ev.work().check_size(std::uint64_t{text.size()} + 1);
  ev.work().bytes(kCharCost, std::uint64_t{text.size()} + 1, "indenting a string");  // the copy and its lines
  const std::string s = std::string(text) + "\n";  // jinja2's quirk for splitlines
  const std::vector<std::string> lines = splitlines(s, false, ev.limits().max_items);
  ev.work().check_items(lines.size());
  std::uint64_t size = first ? pad.size() : 0;
  for (std::size_t i = 0; i < lines.size(); ++i)
    size += lines[i].size() + (i > 0 ? 1 + ((blank || !lines[i].empty()) ? pad.size() : 0) : 0);
  ev.work().check_size(size);
  ev.work().bytes(size, "indenting a string");
  std::string out = first ? pad : std::string();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += '\n';
      if (blank || !lines[i].empty()) out += pad;
    }
    out += lines[i];
  }
  return Value(std::move(out));
}

Value f_wordcount(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "wordcount", 0);
  std::string holder;
  const std::string_view s = text_view(ev, v, holder);
  ev.work().bytes(s.size(), "counting words");
  // Runs of word characters (\w+), as jinja2 counts them; non-ASCII bytes count as letters.
  std::int64_t words = 0;
  bool in_word = false;
  for (unsigned char c : s) {
    const bool w = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
    words += w && !in_word;
    in_word = w;
  }
  return Value(words);
}

// "%s and %s" | format(a, b): printf-style, as jinja2's format filter.
Value f_format(Evaluator& ev, const Value& v, CallArgs& a) {
  if (!a.keyword.empty() && !a.positional.empty()) ev.fail("format takes positional or keyword arguments, not both");
  std::string holder;
  const std::string_view fmt = text_view(ev, v, holder);
  if (!a.keyword.empty()) {
    Dict d;
    for (const auto& [k, x] : a.keyword) d.set(k, x);
    return Value(printf_format(ev, fmt, Value::dict(std::move(d))));
  }
  return Value(printf_format(ev, fmt, Value::list(a.positional, true)));
}

// jinja2's batch: lists of `linecount` items, the last one filled up with fill_with (unless none).
Value f_batch(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "batch", 2, {"linecount", "fill_with"});
  const Value count = arg(ev, a, 0, "linecount");
  // Past 64 bits a batch holds every item all the same (filling it up is then an error).
  const std::int64_t n = count.is_int() ? clamped_int(count) : to_int(ev, count, "batch size");
  if (n <= 0) ev.fail("batch size must be positive");
  const Value fill = arg(ev, a, 1, "fill_with");
  const List items = ev.iterate(v);
  const auto size = static_cast<std::uint64_t>(n);
  const std::uint64_t rest = items.size() % size;
  if (rest != 0 && !fill.is_undefined() && !fill.is_none()) {
    ev.work().check_items(size);  // the last batch is filled up to n items
    ev.work().steps(static_cast<std::int64_t>(size - rest));
    ev.work().bytes(kItemBytes, size - rest, "filling a batch");
  }
  List out, cur;
  for (const Value& x : items) {
    cur.push_back(x);
    if (cur.size() == size) out.push_back(Value::list(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (!fill.is_undefined() && !fill.is_none()) cur.resize(static_cast<std::size_t>(size), fill);
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

const std::map<std::string, Filter>& filters() {
  static const std::map<std::string, Filter> kFilters = {
      {"trim", f_trim},         {"tojson", f_tojson},         {"length", f_length},     {"count", f_length},
      {"upper", f_text<upper>}, {"lower", f_text<lower>},     {"title", f_text<title>}, {"capitalize", f_text<capitalize>},
      {"join", f_join},         {"replace", f_replace},       {"default", f_default},   {"d", f_default},
      {"first", f_first},       {"last", f_last},             {"list", f_list},         {"string", f_string},
      {"int", f_int},           {"float", f_float},           {"abs", f_abs},           {"round", f_round},
      {"select", f_select},     {"reject", f_reject},         {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr}, {"map", f_map},           {"unique", f_unique},     {"items", f_items},
      {"dictsort", f_dictsort}, {"sort", f_sort},             {"reverse", f_reverse},   {"sum", f_sum},
      {"max", f_max},           {"min", f_min},               {"safe", f_safe},         {"escape", f_escape},
      {"e", f_escape},          {"indent", f_indent},         {"wordcount", f_wordcount}, {"batch", f_batch},
      {"format", f_format},
  };
  return kFilters;
}

}  // namespace

Value apply_filter(Evaluator& ev, const std::string& name, const Value& value, CallArgs& args) {
  const auto& all = filters();
  const auto it = all.find(name);
  if (it == all.end()) ev.fail("no filter named " + Value(name.substr(0, 80)).brief());
  return it->second(ev, value, args);
}

}  // namespace plexus::jinja
