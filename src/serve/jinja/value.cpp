// Values: construction, Python truthiness, equality, ordering, str() and repr().
#include "serve/jinja/value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <unordered_map>

#include "serve/chat_template.h"

namespace plexus::jinja {

const Value* Dict::find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

void Dict::set(const std::string& key, Value v) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    items_[it->second].second = std::move(v);
    return;
  }
  index_.emplace(key, items_.size());
  items_.emplace_back(key, std::move(v));
}

const std::string& Value::name() const {
  static const std::string kUnnamed = "a value is undefined";
  return s_ ? *s_ : kUnnamed;
}

Value Value::undefined(std::string name) {
  Value v;
  v.s_ = std::make_shared<const std::string>(std::move(name));
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(std::int64_t i) : kind_(Kind::kInt), i_(i) {}
Value::Value(double f) : kind_(Kind::kFloat), f_(f) {}
Value::Value(std::string s) : kind_(Kind::kString), s_(std::make_shared<const std::string>(std::move(s))) {}

Value Value::list(List items, bool tuple) {
  Value v;
  v.kind_ = Kind::kList;
  v.flag_ = tuple;
  v.list_ = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::dict() { return dict(Dict{}); }

Value Value::dict(Dict d, bool is_namespace) {
  Value v;
  v.kind_ = Kind::kDict;
  v.flag_ = is_namespace;
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}
Value Value::function(std::string name, Function fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.s_ = std::make_shared<const std::string>(std::move(name));
  v.fn_ = std::make_shared<Function>(std::move(fn));
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j, int depth) {
  if (depth > 512) throw TemplateError("template data nested deeper than 512 levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e, depth + 1));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.set(it.key(), from_json(it.value(), depth + 1));
      return dict(std::move(d));
    }
    case nlohmann::ordered_json::value_t::binary:
    case nlohmann::ordered_json::value_t::discarded: return none();
  }
  return none();
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0;
    case Kind::kString: return !s_->empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return is_namespace() || dict_->size() > 0;
    case Kind::kFunction: return true;
  }
  return false;
}

std::string python_float(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  // The shortest digits that read back as f, then Python's layout of them.
  char buf[64];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, f);
    if (std::strtod(buf, nullptr) == f) break;
  }
  std::string s(buf);
  const bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  const auto e = s.find('e');
  const int exp = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (std::size_t i = 0; i < e; ++i)
    if (s[i] != '.') digits.push_back(s[i]);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  const int n = static_cast<int>(digits.size());
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  } else if (exp + 1 >= n) {
    out = digits + std::string(static_cast<std::size_t>(exp + 1 - n), '0') + ".0";
  } else {
    out = digits.substr(0, static_cast<std::size_t>(exp + 1)) + "." + digits.substr(static_cast<std::size_t>(exp + 1));
  }
  return neg ? "-" + out : out;
}

std::string python_string_repr(const std::string& s) {
  const char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == q) out += std::string("\\") + static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else out.push_back(static_cast<char>(c));
  }
  out.push_back(q);
  return out;
}

std::string Value::str() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return *s_;
    default: return repr();
  }
}

namespace {

// repr() of shared sublists can be exponentially long: past this many bytes it stops.
constexpr std::size_t kMaxReprBytes = std::size_t{64} << 20;

void repr_into(const Value& v, std::string& out) {
  if (out.size() > kMaxReprBytes)
    throw TemplateError("printing a value takes more than " + std::to_string(kMaxReprBytes) + " bytes");
  switch (v.kind()) {
    case Value::Kind::kUndefined: return;
    case Value::Kind::kNone: out += "None"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "True" : "False"; return;
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: out += python_float(v.as_number()); return;
    case Value::Kind::kString: out += python_string_repr(v.as_string()); return;
    case Value::Kind::kList: {
      const List& l = v.as_list();
      out += v.is_tuple() ? "(" : "[";
      for (std::size_t i = 0; i < l.size(); ++i) {
        if (i) out += ", ";
        repr_into(l[i], out);
      }
      if (v.is_tuple() && l.size() == 1) out += ",";
      out += v.is_tuple() ? ")" : "]";
      return;
    }
    case Value::Kind::kDict: {
      out += v.is_namespace() ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, x] : v.as_dict().items()) {
        if (!first) out += ", ";
        first = false;
        out += python_string_repr(k) + ": ";
        repr_into(x, out);
      }
      out += v.is_namespace() ? "}>" : "}";
      return;
    }
    case Value::Kind::kFunction: out += "<function " + v.name() + ">"; return;
  }
}

// Walks v once per shared list or dict: its nesting depth (past `limit`: limit + 1), and whether
// it holds `target`.
int walk_depth(const Value& v, const Dict* target, int limit, std::unordered_map<const void*, int>& seen, bool* holds) {
  const void* key = v.is_list() ? static_cast<const void*>(&v.as_list()) : v.is_dict() ? static_cast<const void*>(&v.as_dict()) : nullptr;
  if (!key) return 0;
  if (key == target) *holds = true;
  const auto it = seen.find(key);
  if (it != seen.end()) return it->second;
  int depth = 1;
  if (limit > 0) {
    if (v.is_list())
      for (const Value& x : v.as_list()) depth = std::max(depth, 1 + walk_depth(x, target, limit - 1, seen, holds));
    else
      for (const auto& [k, x] : v.as_dict().items()) depth = std::max(depth, 1 + walk_depth(x, target, limit - 1, seen, holds));
  } else {
    depth = 2;  // past the limit
  }
  seen.emplace(key, depth);
  return depth;
}

}  // namespace

std::string Value::repr() const {
  std::string out;
  repr_into(*this, out);
  return out;
}

void check_storable(const Value& v, const Value& ns, int max_depth) {
  std::unordered_map<const void*, int> seen;
  bool holds = false;
  const int depth = walk_depth(v, &ns.as_dict(), max_depth, seen, &holds);
  if (holds) throw TemplateError("a namespace cannot hold itself");
  if (depth >= max_depth) throw TemplateError("a value nests deeper than " + std::to_string(max_depth) + " levels");
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return is_tuple() ? "tuple" : "list";
    case Kind::kDict: return is_namespace() ? "Namespace" : "dict";
    case Kind::kFunction: return "function";
  }
  return "";
}

namespace {

// Comparisons of shared sublists can take exponential time: past this many steps they stop.
constexpr std::int64_t kMaxCompareSteps = 10'000'000;

void spend(std::int64_t& budget) {
  if (--budget < 0) throw TemplateError("comparing values takes more than " + std::to_string(kMaxCompareSteps) + " steps");
}

bool equal_within(const Value& a, const Value& b, std::int64_t& budget);
bool less_within(const Value& a, const Value& b, std::int64_t& budget);

}  // namespace

bool equal(const Value& a, const Value& b) {
  std::int64_t budget = kMaxCompareSteps;
  return equal_within(a, b, budget);
}

bool less(const Value& a, const Value& b) {
  std::int64_t budget = kMaxCompareSteps;
  return less_within(a, b, budget);
}

namespace {

bool equal_within(const Value& a, const Value& b, std::int64_t& budget) {
  spend(budget);
  if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
    if (a.is_float() || b.is_float()) return a.as_number() == b.as_number();
    const std::int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    const std::int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      const List &x = a.as_list(), &y = b.as_list();
      if (&x == &y) return true;  // the same list (Python compares identity first too)
      if (a.is_tuple() != b.is_tuple()) return false;  // [1] != (1,)
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!equal_within(x[i], y[i], budget)) return false;
      return true;
    }
    case Value::Kind::kDict: {
      const Dict &x = a.as_dict(), &y = b.as_dict();
      if (&x == &y) return true;
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items()) {
        const Value* w = y.find(k);
        if (!w || !equal_within(v, *w, budget)) return false;
      }
      return true;
    }
    case Value::Kind::kFunction: return &a.as_function() == &b.as_function();
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kFloat: return false;  // handled above
  }
  return false;
}

bool less_within(const Value& a, const Value& b, std::int64_t& budget) {
  spend(budget);
  if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
    if (a.is_float() || b.is_float()) return a.as_number() < b.as_number();
    return (a.is_bool() ? a.as_bool() : a.as_int()) < (b.is_bool() ? b.as_bool() : b.as_int());
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const List &x = a.as_list(), &y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less_within(x[i], y[i], budget)) return true;
      if (less_within(y[i], x[i], budget)) return false;
    }
    return x.size() < y.size();
  }
  throw TemplateError("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace

}  // namespace plexus::jinja
