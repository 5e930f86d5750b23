// jinja2's built-in filters (the ones chat templates use), with transformers' `tojson`.
#include <algorithm>
#include <cmath>
#include <map>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"
#include "serve/jinja/string_ops.h"

namespace plexus::jinja {
namespace {

using Filter = Value (*)(Evaluator&, const Value&, CallArgs&);

Value f_trim(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "trim", 1, {"chars"});
  const Value chars = arg(ev, a, 0, "chars");
  const std::string c = chars.is_string() ? chars.as_string() : std::string();
  return Value(strip(v.str(), chars.is_string() ? &c : nullptr, true, true));
}

Value f_tojson(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "tojson", 2, {"indent", "ensure_ascii", "separators", "sort_keys"});
  const Value indent = arg(ev, a, 0, "indent");
  int n = -1;
  if (indent.is_int()) n = static_cast<int>(std::clamp<std::int64_t>(indent.as_int(), 0, 64));
  std::string item_sep = n >= 0 ? "," : ", ", key_sep = ": ";
  const Value seps = arg(ev, a, 99, "separators");
  if (seps.is_list() && seps.as_list().size() == 2 && seps.as_list()[0].is_string() && seps.as_list()[1].is_string()) {
    item_sep = seps.as_list()[0].as_string();
    key_sep = seps.as_list()[1].as_string();
  }
  return Value(to_json_text(ev, v, n, item_sep, key_sep, arg(ev, a, 99, "sort_keys").truthy()));
}

Value f_length(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "length", 0);
  switch (v.kind()) {
    case Value::Kind::kString: return Value(static_cast<std::int64_t>(utf8_chars(v.as_string()).size()));
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

// upper, lower, title, capitalize: a string function of the value's text.
template <std::string (*F)(const std::string&)>
Value f_text(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "this filter", 0);
  return Value(F(v.str()));
}

// The attribute path "a.b" (or an integer index) of an item, as jinja2's make_attrgetter reads it.
Value attr_path(Evaluator& ev, const Value& item, const Value& path) {
  if (path.is_int()) return ev.item(item, path);
  Value v = item;
  std::string dot = ".";
  for (const std::string& part : split(path.str(), &dot, -1)) {
    if (v.is_undefined()) return v;
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = digits ? ev.item(v, Value(static_cast<std::int64_t>(std::stoll(part.substr(0, 18))))) : ev.item(v, Value(part));
  }
  return v;
}

Value f_join(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "join", 2, {"d", "attribute"});
  const std::string sep = arg(ev, a, 0, "d", Value("")).str();
  const Value attribute = arg(ev, a, 1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : ev.iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += (attribute.is_undefined() ? item : attr_path(ev, item, attribute)).str();
    ev.check_size(out.size());
  }
  return Value(std::move(out));
}

Value f_replace(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "replace", 3, {"old", "new", "count"});
  const Value count = arg(ev, a, 2, "count");
  const std::string out = replace(v.str(), arg(ev, a, 0, "old").str(), arg(ev, a, 1, "new").str(),
                                  count.is_undefined() || count.is_none() ? -1 : to_int(ev, count, "replace count"));
  ev.check_size(out.size());
  return Value(out);
}

Value f_default(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "default", 2, {"default_value", "boolean"});
  const Value fallback = arg(ev, a, 0, "default_value", Value(""));
  const bool boolean = arg(ev, a, 1, "boolean", Value(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return fallback;
  return v;
}

Value f_first(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "first", 0);
  const List items = ev.iterate(v);
  return items.empty() ? Value::undefined("first of an empty sequence is undefined") : items.front();
}
Value f_last(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "last", 0);
  const List items = ev.iterate(v);
  return items.empty() ? Value::undefined("last of an empty sequence is undefined") : items.back();
}
Value f_list(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "list", 0);
  return Value::list(ev.iterate(v));
}
Value f_string(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "string", 0);
  return Value(v.str());
}

Value f_int(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "int", 2, {"default", "base"});
  const Value fallback = arg(ev, a, 0, "default", Value(0));
  if (v.is_undefined()) ev.fail(v.name());
  if (v.is_int()) return v;
  if (v.is_bool()) return Value(static_cast<std::int64_t>(v.as_bool()));
  if (v.is_float()) {
    const double f = v.as_number();
    return std::isfinite(f) && std::abs(f) < 9.2e18 ? Value(static_cast<std::int64_t>(f)) : fallback;
  }
  if (v.is_string()) {
    const std::string s = strip(v.as_string(), nullptr, true, true);
    try {
      std::size_t used = 0;
      const long long i = std::stoll(s, &used, 10);
      if (used == s.size()) return Value(static_cast<std::int64_t>(i));
      const double f = std::stod(s, &used);
      if (used == s.size() && std::isfinite(f) && std::abs(f) < 9.2e18) return Value(static_cast<std::int64_t>(f));
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

Value f_float(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "float", 1, {"default"});
  const Value fallback = arg(ev, a, 0, "default", Value(0.0));
  if (v.is_undefined()) ev.fail(v.name());
  if (v.is_number() || v.is_bool()) return Value(v.as_number());
  if (v.is_string()) {
    const std::string s = strip(v.as_string(), nullptr, true, true);
    try {
      std::size_t used = 0;
      const double f = std::stod(s, &used);
      if (used == s.size()) return Value(f);
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

Value f_abs(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "abs", 0);
  if (v.is_float()) return Value(std::abs(v.as_number()));
  const std::int64_t i = to_int(ev, v, "abs");
  if (i == INT64_MIN) ev.fail("integer overflow in abs");
  return Value(i < 0 ? -i : i);
}

Value f_round(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "round", 2, {"precision", "method"});
  const std::int64_t precision = std::clamp<std::int64_t>(to_int(ev, arg(ev, a, 0, "precision", Value(0)), "round precision"), -300, 300);
  const std::string method = arg(ev, a, 1, "method", Value("common")).str();
  if (!v.is_number() && !v.is_bool()) ev.fail("round needs a number, got " + v.type_name());
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_number() * scale;
  double r = 0;
  if (method == "common") r = std::nearbyint(x);  // Python's round: halves to even
  else if (method == "ceil") r = std::ceil(x);
  else if (method == "floor") r = std::floor(x);
  else ev.fail("round method must be 'common', 'ceil' or 'floor', got '" + method + "'");
  return Value(r / scale);
}

// select/reject/selectattr/rejectattr: keep the items whose test (or truth) is `keep`.
Value select_items(Evaluator& ev, const Value& v, CallArgs& a, bool keep, bool by_attr) {
  List out;
  if (!v.truthy()) return Value::list({});  // jinja2 iterates only a true value
  const std::size_t first_arg = by_attr ? 1 : 0;
  const Value attribute = by_attr ? arg(ev, a, 0, "attribute") : Value();
  if (by_attr && attribute.is_undefined()) ev.fail("selectattr/rejectattr need an attribute name");
  std::string test;
  CallArgs test_args;
  if (a.positional.size() > first_arg) {
    test = a.positional[first_arg].str();
    test_args.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(first_arg) + 1, a.positional.end());
  }
  for (const Value& item : ev.iterate(v)) {
    const Value subject = by_attr ? attr_path(ev, item, attribute) : item;
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
    const Value fallback = arg(ev, a, 99, "default");
    for (const Value& item : ev.iterate(v)) {
      Value x = attr_path(ev, item, attribute);
      out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : x);
    }
    return Value::list(std::move(out));
  }
  if (a.positional.empty()) ev.fail("map needs a filter name or attribute=");
  const std::string name = a.positional[0].str();
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : ev.iterate(v)) {
    CallArgs call = rest;
    out.push_back(apply_filter(ev, name, item, call));
  }
  return Value::list(std::move(out));
}

Value f_unique(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "unique", 2, {"case_sensitive", "attribute"});
  List out;
  const Value attribute = arg(ev, a, 1, "attribute");
  for (const Value& item : ev.iterate(v)) {
    const Value key = attribute.is_undefined() ? item : attr_path(ev, item, attribute);
    bool seen = false;
    for (const Value& o : out) {
      const Value ok = attribute.is_undefined() ? o : attr_path(ev, o, attribute);
      seen = seen || (key.is_string() && ok.is_string() && !arg(ev, a, 0, "case_sensitive", Value(false)).truthy()
                          ? lower(key.as_string()) == lower(ok.as_string())
                          : equal(key, ok));
    }
    if (!seen) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_items(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "items", 0);
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) ev.fail("items needs a mapping, got " + v.type_name());
  List out;
  for (const auto& [k, x] : v.as_dict().items()) out.push_back(Value::list({Value(k), x}, true));
  return Value::list(std::move(out));
}

Value f_dictsort(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "dictsort", 3, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) ev.fail("dictsort needs a mapping, got " + v.type_name());
  const bool by_value = arg(ev, a, 1, "by", Value("key")).str() == "value";
  const bool cs = arg(ev, a, 0, "case_sensitive", Value(false)).truthy();
  List out;
  for (const auto& [k, x] : v.as_dict().items()) out.push_back(Value::list({Value(k), x}, true));
  auto key = [&](const Value& pair) {
    const Value& k = pair.as_list()[by_value ? 1 : 0];
    return k.is_string() && !cs ? Value(lower(k.as_string())) : k;
  };
  std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) { return less(key(x), key(y)); });
  if (arg(ev, a, 2, "reverse", Value(false)).truthy()) std::reverse(out.begin(), out.end());
  return Value::list(std::move(out));
}

Value f_sort(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "sort", 3, {"reverse", "case_sensitive", "attribute"});
  List out = ev.iterate(v);
  const bool cs = arg(ev, a, 1, "case_sensitive", Value(false)).truthy();
  const Value attribute = arg(ev, a, 2, "attribute");
  auto key = [&](const Value& item) {
    const Value k = attribute.is_undefined() ? item : attr_path(ev, item, attribute);
    return k.is_string() && !cs ? Value(lower(k.as_string())) : k;
  };
  std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) { return less(key(x), key(y)); });
  if (arg(ev, a, 0, "reverse", Value(false)).truthy()) std::reverse(out.begin(), out.end());
  return Value::list(std::move(out));
}

Value f_reverse(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "reverse", 0);
  if (v.is_string()) {
    auto chars = utf8_chars(v.as_string());
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
    return Value(out);
  }
  List out = ev.iterate(v);
  std::reverse(out.begin(), out.end());
  return Value::list(std::move(out));
}

Value f_sum(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "sum", 2, {"attribute", "start"});
  const Value attribute = arg(ev, a, 0, "attribute");
  Value total = arg(ev, a, 1, "start", Value(0));
  for (const Value& item : ev.iterate(v)) {
    const Value x = attribute.is_undefined() ? item : attr_path(ev, item, attribute);
    if (!x.is_number() && !x.is_bool()) ev.fail("sum needs numbers, got " + x.type_name());
    total = total.is_float() || x.is_float() ? Value(total.as_number() + x.as_number())
                                             : Value(total.as_int() + (x.is_bool() ? x.as_bool() : x.as_int()));
  }
  return total;
}

Value min_max(Evaluator& ev, const Value& v, CallArgs& a, bool want_max) {
  check_args(ev, a, want_max ? "max" : "min", 2, {"case_sensitive", "attribute"});
  const List items = ev.iterate(v);
  if (items.empty()) return Value::undefined("min/max of an empty sequence is undefined");
  const Value attribute = arg(ev, a, 1, "attribute");
  const Value* best = &items[0];
  for (std::size_t i = 1; i < items.size(); ++i) {
    const Value& x = items[i];
    const Value kx = attribute.is_undefined() ? x : attr_path(ev, x, attribute);
    const Value kb = attribute.is_undefined() ? *best : attr_path(ev, *best, attribute);
    if (want_max ? less(kb, kx) : less(kx, kb)) best = &x;
  }
  return *best;
}
Value f_max(Evaluator& ev, const Value& v, CallArgs& a) { return min_max(ev, v, a, true); }
Value f_min(Evaluator& ev, const Value& v, CallArgs& a) { return min_max(ev, v, a, false); }

Value f_safe(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "safe", 0);
  return v;
}

Value f_escape(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "escape", 0);
  std::string out;
  for (char c : v.str()) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return Value(out);
}

Value f_indent(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "indent", 3, {"width", "first", "blank"});
  const Value w = arg(ev, a, 0, "width", Value(4));
  const std::string pad = w.is_string() ? w.as_string() : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(to_int(ev, w, "indent width"), 0, 1024)), ' ');
  const bool first = arg(ev, a, 1, "first", Value(false)).truthy();
  const bool blank = arg(ev, a, 2, "blank", Value(false)).truthy();
  const std::string nl = "\n";
  const auto lines = split(v.str(), &nl, -1);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    const bool empty = strip(lines[i], nullptr, true, true).empty();
    if ((i > 0 || first) && (blank || !empty)) out += pad;
    out += lines[i];
    ev.check_size(out.size());
  }
  return Value(out);
}

Value f_wordcount(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "wordcount", 0);
  // Runs of word characters (\w+), as jinja2 counts them; non-ASCII bytes count as letters.
  std::int64_t words = 0;
  bool in_word = false;
  for (unsigned char c : v.str()) {
    const bool w = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
    words += w && !in_word;
    in_word = w;
  }
  return Value(words);
}

// "%s and %s" | format(a, b): printf-style, as jinja2's format filter.
Value f_format(Evaluator& ev, const Value& v, CallArgs& a) {
  if (!a.keyword.empty() && !a.positional.empty()) ev.fail("format takes positional or keyword arguments, not both");
  if (!a.keyword.empty()) {
    Dict d;
    for (const auto& [k, x] : a.keyword) d.set(k, x);
    return Value(printf_format(ev, v.str(), Value::dict(std::move(d))));
  }
  return Value(printf_format(ev, v.str(), Value::list(a.positional, true)));
}

Value f_batch(Evaluator& ev, const Value& v, CallArgs& a) {
  check_args(ev, a, "batch", 2, {"linecount", "fill_with"});
  const std::int64_t n = to_int(ev, arg(ev, a, 0, "linecount"), "batch size");
  if (n <= 0) ev.fail("batch size must be positive");
  const Value fill = arg(ev, a, 1, "fill_with");
  List out, cur;
  for (const Value& x : ev.iterate(v)) {
    cur.push_back(x);
    if (static_cast<std::int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (!fill.is_undefined())
      while (static_cast<std::int64_t>(cur.size()) < n) cur.push_back(fill);
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
  if (it == all.end()) ev.fail("no filter named '" + name + "'");
  return it->second(ev, value, args);
}

}  // namespace plexus::jinja
