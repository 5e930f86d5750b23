// The `tojson` filter's text: Python's json.dumps with ensure_ascii=False (as Hugging Face
// transformers calls it): ", " and ": " separators, key order kept, non-ASCII kept, floats as
// Python prints them, `indent` putting each item on its own line.
#include <cmath>
#include <cstdio>
#include <algorithm>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"
#include "serve/jinja/integers.h"
#include "serve/jinja/string_ops.h"

namespace plexus::jinja {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// The bytes JSON escapes (NUL too: next_special stops at it).
constexpr char kJsonSpecial[] = "\"\\\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f";

// The bytes `quote` writes for s.
std::uint64_t quoted_size(const std::string& s) {
  std::uint64_t n = 2 + s.size();
  for (std::size_t i = next_special(s, 0, kJsonSpecial); i < s.size(); i = next_special(s, i + 1, kJsonSpecial)) {
    const char c = s[i];
    n += c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f' ? 1 : 5;
  }
  return n;
}

void quote(std::string& out, const std::string& s) {
  out.push_back('"');
  std::size_t run = 0;  // where the bytes copied as they are start
  for (std::size_t i = next_special(s, 0, kJsonSpecial); i < s.size(); i = next_special(s, i + 1, kJsonSpecial)) {
    const auto c = static_cast<unsigned char>(s[i]);
    out.append(s, run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default: out += {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
    }
  }
  out.append(s, run, std::string::npos);
  out.push_back('"');
}

struct Writer {
  Evaluator& ev;
  const std::string* indent;
  std::string item_sep, key_sep;
  bool sort_keys;
  std::string out;

  // Checks and charges `n` more bytes of output before they are written.
  void reserve(std::uint64_t n) {
    ev.work().check_size(out.size() + n);
    ev.work().bytes(n, "writing JSON");
  }
  void put(std::string_view s) {
    reserve(s.size());
    out.append(s);
  }
  void string(const std::string& s) {
    ev.work().bytes(kCharCost, s.size(), "writing JSON");  // the measuring scan and the escaping copy
    reserve(quoted_size(s));
    quote(out, s);
  }
  void newline(int level) {
    reserve(1 + std::uint64_t{indent->size()} * static_cast<std::uint64_t>(level));
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += *indent;
  }

  void write(const Value& v, int level) {
    if (level > ev.limits().max_depth) ev.fail("tojson: the value nests too deep");
    ev.work().steps(1);
    switch (v.kind()) {
      case Value::Kind::kNone: put("null"); return;
      case Value::Kind::kBool: put(v.as_bool() ? "true" : "false"); return;
      case Value::Kind::kInt: put(int_text(v, &ev.work())); return;
      case Value::Kind::kFloat: {
        const double f = v.as_number();
        if (std::isnan(f)) put("NaN");
        else if (std::isinf(f)) put(f < 0 ? "-Infinity" : "Infinity");
        else put(python_float(f));
        return;
      }
      case Value::Kind::kString: string(v.as_string()); return;
      case Value::Kind::kList: {
        const List& l = v.as_list();
        if (l.empty()) {
          put("[]");
          return;
        }
        put("[");
        for (std::size_t i = 0; i < l.size(); ++i) {
          if (i) put(item_sep);
          if (indent) newline(level + 1);
          write(l[i], level + 1);
        }
        if (indent) newline(level);
        put("]");
        return;
      }
      case Value::Kind::kDict: {
        std::vector<const std::pair<std::string, Value>*> items;
        ev.work().steps(static_cast<std::int64_t>(v.as_dict().size()));
        for (const auto& kv : v.as_dict().items()) items.push_back(&kv);
        if (items.empty()) {
          put("{}");
          return;
        }
        if (sort_keys) {
          Work& work = ev.work();
          std::stable_sort(items.begin(), items.end(), [&work](auto* a, auto* b) {
            return compare_text(a->first, b->first, work) < 0;
          });
        }
        put("{");
        for (std::size_t i = 0; i < items.size(); ++i) {
          if (i) put(item_sep);
          if (indent) newline(level + 1);
          string(items[i]->first);
          put(key_sep);
          write(items[i]->second, level + 1);
        }
        if (indent) newline(level);
        put("}");
        return;
      }
      case Value::Kind::kUndefined: ev.fail(v.name() + " (tojson of an undefined value)");
      case Value::Kind::kFunction: ev.fail("Object of type function is not JSON serializable");
    }
  }
};

}  // namespace

std::string to_json_text(Evaluator& ev, const Value& v, const std::string* indent, const std::string& item_sep,
                         const std::string& key_sep, bool sort_keys) {
  Writer w{ev, indent, item_sep, key_sep, sort_keys, {}};
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace plexus::jinja
