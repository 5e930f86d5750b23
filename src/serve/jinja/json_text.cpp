// The `tojson` filter's text: Python's json.dumps with ensure_ascii=False (as Hugging Face
// transformers calls it): ", " and ": " separators, key order kept, non-ASCII kept, floats as
// Python prints them, `indent` putting each item on its own line.
#include <cmath>
#include <cstdio>
#include <algorithm>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"

namespace plexus::jinja {
namespace {

void quote(std::string& out, const std::string& s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

struct Writer {
  Evaluator& ev;
  int indent;
  std::string item_sep, key_sep;
  bool sort_keys;
  std::string out;

  void newline(int level) {
    out.push_back('\n');
    out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(level), ' ');
  }

  void write(const Value& v, int level) {
    ev.check_size(out.size());
    if (level > ev.limits().max_depth) ev.fail("tojson: the value nests too deep");
    switch (v.kind()) {
      case Value::Kind::kNone: out += "null"; return;
      case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
      case Value::Kind::kFloat: {
        const double f = v.as_number();
        if (std::isnan(f)) out += "NaN";
        else if (std::isinf(f)) out += f < 0 ? "-Infinity" : "Infinity";
        else out += python_float(f);
        return;
      }
      case Value::Kind::kString: quote(out, v.as_string()); return;
      case Value::Kind::kList: {
        const List& l = v.as_list();
        if (l.empty()) {
          out += "[]";
          return;
        }
        out.push_back('[');
        for (std::size_t i = 0; i < l.size(); ++i) {
          if (i) out += item_sep;
          if (indent >= 0) newline(level + 1);
          write(l[i], level + 1);
        }
        if (indent >= 0) newline(level);
        out.push_back(']');
        return;
      }
      case Value::Kind::kDict: {
        std::vector<const std::pair<std::string, Value>*> items;
        for (const auto& kv : v.as_dict().items()) items.push_back(&kv);
        if (items.empty()) {
          out += "{}";
          return;
        }
        if (sort_keys)
          std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
        out.push_back('{');
        for (std::size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep;
          if (indent >= 0) newline(level + 1);
          quote(out, items[i]->first);
          out += key_sep;
          write(items[i]->second, level + 1);
        }
        if (indent >= 0) newline(level);
        out.push_back('}');
        return;
      }
      case Value::Kind::kUndefined: ev.fail(v.name() + " (tojson of an undefined value)");
      case Value::Kind::kFunction: ev.fail("Object of type function is not JSON serializable");
    }
  }
};

}  // namespace

std::string to_json_text(Evaluator& ev, const Value& v, int indent, const std::string& item_sep,
                         const std::string& key_sep, bool sort_keys) {
  Writer w{ev, indent, item_sep, key_sep, sort_keys, {}};
  w.write(v, 0);
  return std::move(w.out);
}

}  // namespace plexus::jinja
