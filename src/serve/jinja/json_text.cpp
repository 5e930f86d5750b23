// The `tojson` filter's text: Python's json.dumps with ensure_ascii=False (as Hugging Face
// transformers calls it; ensure_ascii=True escapes non-ASCII characters): ", " and ": "
// separators, key order kept, floats as Python prints them, `indent` putting each item on its
// own line.
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

// The bytes JSON escapes (NUL too: next_special stops at it); with ensure_ascii, DEL and every
// byte of a non-ASCII character too.
constexpr char kJsonSpecial[] = "\"\\\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f";
const std::string& ascii_special() {
  static const std::string kSet = [] {
    std::string set = kJsonSpecial;
    for (int c = 0x7f; c <= 0xff; ++c) set.push_back(static_cast<char>(c));
    return set;
  }();
  return kSet;
}

// Appends \uXXXX of a UTF-16 code unit.
void append_unit(std::string& out, std::uint32_t u) {
  out += {'\\', 'u', kHex[(u >> 12) & 15], kHex[(u >> 8) & 15], kHex[(u >> 4) & 15], kHex[u & 15]};
}

// Writes s as a JSON string into *out, or with `out` null only measures it; returns its bytes.
// With ensure_ascii (Python's json.dumps default) every non-ASCII character is \uXXXX (a
// surrogate pair past U+FFFF) and a stray byte b is \u00bb (as are the bytes of a sequence
// past U+10FFFF).
std::uint64_t quote(std::string* out, const std::string& s, bool ensure_ascii) {
  const char* special = ensure_ascii ? ascii_special().c_str() : kJsonSpecial;
  return quote_text(out, s, '"', special, [&s](std::size_t i, std::string& piece) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = c < 0x80 ? 1 : char_len(s, i);
    switch (c) {
      case '"': piece = "\\\""; break;
      case '\\': piece = "\\\\"; break;
      case '\n': piece = "\\n"; break;
      case '\r': piece = "\\r"; break;
      case '\t': piece = "\\t"; break;
      case '\b': piece = "\\b"; break;
      case '\f': piece = "\\f"; break;
      default: {
        std::uint32_t cp = code_point(s, i, len);
        if (cp >= kStrayByte) cp -= kStrayByte;
        if (cp > 0x10FFFF) {  // no character: its bytes, each as a stray byte
          for (std::size_t k = 0; k < len; ++k) append_unit(piece, static_cast<unsigned char>(s[i + k]));
        } else if (cp < 0x10000) {
          append_unit(piece, cp);
        } else {
          cp -= 0x10000;
          append_unit(piece, 0xD800 + ((cp >> 10) & 0x3FF));
          append_unit(piece, 0xDC00 + (cp & 0x3FF));
        }
      }
    }
    return len;
  });
}

struct Writer {
  Evaluator& ev;
  const std::string* indent;
  std::string item_sep, key_sep;
  bool sort_keys, ensure_ascii;
  std::string out;

  // Checks and charges `n` more bytes of output before they are written.
  void reserve(std::uint64_t n) {
    ev.work().check_size(out.size() + n);
    ev.work().bytes(n, "writing JSON");
  }
  void put(std::string_view s) { ev.work().append(out, s, "writing JSON"); }
  void string(const std::string& s) {
    ev.work().bytes(kCharCost, s.size(), "writing JSON");  // the measuring scan and the escaping copy
    reserve(quote(nullptr, s, ensure_ascii));
    quote(&out, s, ensure_ascii);
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
                         const std::string& key_sep, bool sort_keys, bool ensure_ascii) {
  Writer w{ev, indent, item_sep, key_sep, sort_keys, ensure_ascii, {}};
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace plexus::jinja
