// Values: construction, Python truthiness, equality, ordering, str() and repr().
#include "serve/jinja/value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

#include "serve/chat_template.h"
#include "serve/jinja/integers.h"
#include "serve/jinja/string_ops.h"
#include "serve/jinja/work.h"

namespace plexus::jinja {

static_assert(sizeof(Value) <= kItemBytes, "kItemBytes is the cost of a list item");

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
Value::Value(const BigInt& i) : kind_(Kind::kInt) {
  if (const auto small = i.to_int64()) i_ = *small;
  else big_ = std::make_shared<const BigInt>(i);
}

double Value::as_number() const {
  switch (kind_) {
    case Kind::kFloat: return f_;
    case Kind::kBool: return b_;
    case Kind::kInt: return big_ ? big_->to_double() : static_cast<double>(i_);
    default: return 0;
  }
}
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
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value(BigInt::from_digits(std::to_string(u), 10));
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
    case Kind::kInt: return big_ || i_ != 0;
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

namespace {

// The bytes a string's repr escapes when quoted with q (NUL too: next_special stops at it),
// with ascii() every byte of a non-ASCII character too.
const char* repr_special(char q, bool ascii) {
  static const std::array<std::string, 4> kSets = [] {
    std::array<std::string, 4> sets;
    for (int k = 0; k < 4; ++k) {
      sets[k] = "\\\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f";
      sets[k].push_back(k & 1 ? '"' : '\'');
      for (int c = 0x80; (k & 2) && c <= 0xff; ++c) sets[k].push_back(static_cast<char>(c));
    }
    return sets;
  }();
  return kSets[(q == '"' ? 1 : 0) + (ascii ? 2 : 0)].c_str();
}

// Python repr() (or ascii(): non-ASCII characters escaped) of strings, numbers, lists and dicts
// into `out`: charged to `work` and checked against its max_output before each piece is
// appended; or, with no work, cut past `cap` bytes.
class ReprWriter {
 public:
  ReprWriter(Work* work, std::size_t cap, bool ascii = false) : work_(work), cap_(cap), ascii_(ascii) {}

  void value(const Value& v) {
    if (full()) return;
    if (work_) work_->steps(1);
    switch (v.kind()) {
      case Value::Kind::kUndefined: return;
      case Value::Kind::kNone: put("None"); return;
      case Value::Kind::kBool: put(v.as_bool() ? "True" : "False"); return;
      case Value::Kind::kInt: put(int_text(v, work_)); return;
      case Value::Kind::kFloat: put(python_float(v.as_number())); return;
      case Value::Kind::kString: string(v.as_string()); return;
      case Value::Kind::kList: {
        const List& l = v.as_list();
        put(v.is_tuple() ? "(" : "[");
        for (std::size_t i = 0; i < l.size() && !full(); ++i) {
          if (i) put(", ");
          value(l[i]);
        }
        if (v.is_tuple() && l.size() == 1) put(",");
        put(v.is_tuple() ? ")" : "]");
        return;
      }
      case Value::Kind::kDict: {
        put(v.is_namespace() ? "<Namespace {" : "{");
        bool first = true;
        for (const auto& [k, x] : v.as_dict().items()) {
          if (full()) return;
          if (!first) put(", ");
          first = false;
          string(k);
          put(": ");
          value(x);
        }
        put(v.is_namespace() ? "}>" : "}");
        return;
      }
      case Value::Kind::kFunction: put("<function " + v.name() + ">"); return;
    }
  }

  // Python's repr of a string: quoted with ' (or " when it holds ' and no "), escapes for
  // backslash, the quote and control characters (and with ascii(), non-ASCII characters). Its
  // size is measured before it is written.
  void string(const std::string& s) {
    if (!work_ && s.size() > cap_) {  // brief: the start is enough
      string(s.substr(0, cap_));
      return;
    }
    if (work_) work_->bytes(kCharCost, s.size(), "printing a string");  // the measuring scan and the escaping copy
    const char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
    reserve(quote(nullptr, s, q));
    quote(&out_, s, q);
  }

  std::string take() {
    if (!work_ && out_.size() > cap_) {
      out_.resize(cap_);
      out_ += "...";
    }
    return std::move(out_);
  }

 private:
  bool full() const { return !work_ && out_.size() > cap_; }
  // Checks (and charges) `n` more bytes before they are appended.
  void reserve(std::size_t n) {
    if (!work_) return;
    work_->check_size(out_.size() + n);
    work_->bytes(n, "printing a value");
  }
  void put(std::string_view s) {
    if (work_) work_->append(out_, s, "printing a value");
    else out_.append(s);
  }
  // Writes s quoted with q into *out, or with `out` null only measures it; returns its bytes.
  std::uint64_t quote(std::string* out, const std::string& s, char q) const {
    return quote_text(out, s, q, repr_special(q, ascii_), [&s, q](std::size_t i, std::string& piece) {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto c = static_cast<unsigned char>(s[i]);
      const std::size_t len = c < 0x80 ? 1 : char_len(s, i);
      auto hex = [&piece](char kind, std::uint32_t x, int digits) {
        piece += {'\\', kind};
        for (int d = digits - 1; d >= 0; --d) piece.push_back(kHex[(x >> (4 * d)) & 15]);
      };
      std::uint32_t cp = c < 0x80 ? c : code_point(s, i, len);
      if (cp >= kStrayByte) cp -= kStrayByte;
      if (c == '\n' || c == '\r' || c == '\t') piece += {'\\', c == '\n' ? 'n' : c == '\r' ? 'r' : 't'};
      else if (c == '\\' || c == static_cast<unsigned char>(q)) piece += {'\\', static_cast<char>(c)};
      else if (cp < 0x100) hex('x', cp, 2);
      else if (cp < 0x10000) hex('u', cp, 4);
      else if (cp <= 0x10FFFF) hex('U', cp, 8);
      else  // no character: its bytes, each as a stray byte
        for (std::size_t k = 0; k < len; ++k) hex('x', static_cast<unsigned char>(s[i + k]), 2);
      return len;
    });
  }

  Work* work_;
  std::size_t cap_;
  bool ascii_;
  std::string out_;
};

// The bytes of a value's brief repr in error messages.
constexpr std::size_t kBriefBytes = 60;

}  // namespace

std::string Value::str(Work& work) const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString:
      work.bytes(s_->size(), "copying a string");
      return *s_;
    default: return repr(work);
  }
}

std::string Value::repr(Work& work, bool ascii) const {
  ReprWriter w(&work, 0, ascii);
  w.value(*this);
  return w.take();
}

std::string Value::brief() const {
  ReprWriter w(nullptr, kBriefBytes);
  w.value(*this);
  return w.take();
}

namespace {

// Walks v once per shared list or dict: its nesting depth (past `limit`: limit + 1), and whether
// it holds `target`.
int walk_depth(const Value& v, const Dict* target, int limit, std::unordered_map<const void*, int>& seen, bool* holds,
               Work& work) {
  const void* key = v.is_list() ? static_cast<const void*>(&v.as_list()) : v.is_dict() ? static_cast<const void*>(&v.as_dict()) : nullptr;
  if (!key) return 0;
  if (key == target) *holds = true;
  const auto it = seen.find(key);
  if (it != seen.end()) return it->second;
  int depth = 1;
  if (limit > 0) {
    if (v.is_list()) {
      work.steps(static_cast<std::int64_t>(v.as_list().size()));
      for (const Value& x : v.as_list()) depth = std::max(depth, 1 + walk_depth(x, target, limit - 1, seen, holds, work));
    } else {
      work.steps(static_cast<std::int64_t>(v.as_dict().size()));
      for (const auto& [k, x] : v.as_dict().items())
        depth = std::max(depth, 1 + walk_depth(x, target, limit - 1, seen, holds, work));
    }
  } else {
    depth = 2;  // past the limit
  }
  seen.emplace(key, depth);
  return depth;
}

}  // namespace

void check_storable(const Value& v, const Value& ns, int max_depth, Work& work) {
  std::unordered_map<const void*, int> seen;
  bool holds = false;
  const int depth = walk_depth(v, &ns.as_dict(), max_depth, seen, &holds, work);
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

int compare_text(std::string_view a, std::string_view b, Work& work) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t at = 0, chunk = 64; at < n; at += chunk, chunk *= 2) {
    const std::size_t len = std::min(chunk, n - at);
    work.bytes(len, "comparing strings");
    if (const int c = std::memcmp(a.data() + at, b.data() + at, len)) return c;
  }
  return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
}

namespace {

bool numeric(const Value& v) { return v.is_number() || v.is_bool(); }

}  // namespace

bool equal(const Value& a, const Value& b, Work& work) {
  work.steps(1);
  if (numeric(a) && numeric(b)) return compare_numbers(a, b) == 0;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString:
      if (&a.as_string() == &b.as_string()) return true;  // the same string (Python checks identity first)
      return a.as_string().size() == b.as_string().size() && compare_text(a.as_string(), b.as_string(), work) == 0;
    case Value::Kind::kList: {
      const List &x = a.as_list(), &y = b.as_list();
      if (&x == &y) return true;  // the same list
      if (a.is_tuple() != b.is_tuple()) return false;  // [1] != (1,)
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!equal(x[i], y[i], work)) return false;
      return true;
    }
    case Value::Kind::kDict: {
      const Dict &x = a.as_dict(), &y = b.as_dict();
      if (&x == &y) return true;
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items()) {
        work.bytes(k.size(), "looking up a key");
        const Value* w = y.find(k);
        if (!w || !equal(v, *w, work)) return false;
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

bool less(const Value& a, const Value& b, Work& work) {
  work.steps(1);
  if (numeric(a) && numeric(b)) return compare_numbers(a, b) == -1;
  if (a.is_string() && b.is_string())
    return &a.as_string() != &b.as_string() && compare_text(a.as_string(), b.as_string(), work) < 0;
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const List &x = a.as_list(), &y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equal(x[i], y[i], work)) continue;  // Python: the first unequal items decide
      return less(x[i], y[i], work);
    }
    return x.size() < y.size();
  }
  throw TemplateError("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

std::size_t hash_key(const Value& v, Work& work) {
  work.steps(1);
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return 0x5bd1e995;
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kFloat: return hash_number(v);
    case Value::Kind::kString:
      work.bytes(v.as_string().size(), "hashing strings");
      return std::hash<std::string_view>()(v.as_string());
    case Value::Kind::kList: {
      if (!v.is_tuple()) break;
      std::size_t h = 0x345678;
      for (const Value& x : v.as_list()) h = h * 1000003 ^ hash_key(x, work);
      return h;
    }
    case Value::Kind::kDict: break;
    case Value::Kind::kFunction: return std::hash<const void*>()(&v.as_function());
  }
  throw TemplateError("unhashable type: '" + v.type_name() + "'");
}

}  // namespace plexus::jinja
