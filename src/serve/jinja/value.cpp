// Values: construction, Python truthiness, equality, ordering, str() and repr().
#include "serve/jinja/value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

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

nlohmann::ordered_json Value::to_json() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return nullptr;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_;
    case Kind::kFloat: return f_;
    case Kind::kString: return *s_;
    case Kind::kList: {
      auto a = nlohmann::ordered_json::array();
      for (const auto& e : *list_) a.push_back(e.to_json());
      return a;
    }
    case Kind::kDict: {
      auto o = nlohmann::ordered_json::object();
      for (const auto& [k, v] : dict_->items()) o[k] = v.to_json();
      return o;
    }
    case Kind::kFunction: throw TemplateError("Object of type function is not JSON serializable");
  }
  return nullptr;
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

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return b_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return python_float(f_);
    case Kind::kString: return python_string_repr(*s_);
    case Kind::kList: {
      std::string out = is_tuple() ? "(" : "[";
      for (std::size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        out += (*list_)[i].repr();
      }
      if (is_tuple() && list_->size() == 1) out += ",";
      return out + (is_tuple() ? ")" : "]");
    }
    case Kind::kDict: {
      std::string out = is_namespace() ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, v] : dict_->items()) {
        if (!first) out += ", ";
        first = false;
        out += python_string_repr(k) + ": " + v.repr();
      }
      return out + (is_namespace() ? "}>" : "}");
    }
    case Kind::kFunction: return "<function " + *s_ + ">";
  }
  return "";
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

bool equal(const Value& a, const Value& b) {
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
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!equal(x[i], y[i])) return false;
      return true;
    }
    case Value::Kind::kDict: {
      const Dict &x = a.as_dict(), &y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items()) {
        const Value* w = y.find(k);
        if (!w || !equal(v, *w)) return false;
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

bool less(const Value& a, const Value& b) {
  if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
    if (a.is_float() || b.is_float()) return a.as_number() < b.as_number();
    return (a.is_bool() ? a.as_bool() : a.as_int()) < (b.is_bool() ? b.as_bool() : b.as_int());
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const List &x = a.as_list(), &y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less(x[i], y[i])) return true;
      if (less(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  throw TemplateError("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace plexus::jinja
