// Python's printf-style string formatting (`"%s: %d" % (a, b)` and jinja2's `format` filter):
// flags "-+ 0#", width, precision, %(name)s with a dict, and the conversions s r d i u f F e E
// g G x X o %.
#include <algorithm>
#include <cstdio>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"

namespace plexus::jinja {
namespace {

int read_number(const std::string& fmt, std::size_t& i) {
  int n = 0;
  while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') n = std::min(n * 10 + (fmt[i++] - '0'), 4000);
  return n;
}

}  // namespace

std::string printf_format(Evaluator& ev, const std::string& fmt, const Value& args) {
  const bool mapping = args.is_dict();
  const List positional = args.is_tuple() ? args.as_list() : List{args};
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    if (++i >= fmt.size()) ev.fail("format: incomplete format");
    Value v;
    bool have = false;
    if (fmt[i] == '(') {
      const std::size_t close = fmt.find(')', i);
      if (close == std::string::npos || !mapping) ev.fail("format: a %(name) field needs a mapping");
      const std::string key = fmt.substr(i + 1, close - i - 1);
      const Value* found = args.as_dict().find(key);
      if (!found) ev.fail("format: no key '" + key + "'");
      v = *found;
      have = true;
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string("-+ 0#").find(fmt[i]) != std::string::npos) flags.push_back(fmt[i++]);
    const int width = read_number(fmt, i);
    int precision = -1;
    if (i < fmt.size() && fmt[i] == '.') precision = read_number(fmt, ++i);
    if (i >= fmt.size()) ev.fail("format: incomplete format");
    const char conv = fmt[i];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (!have) {
      if (next >= positional.size()) ev.fail("format: not enough arguments for format string");
      v = positional[next++];
    }
    std::string field;
    if (conv == 's' || conv == 'r') {
      field = conv == 's' ? v.str() : v.repr();
      if (precision >= 0 && static_cast<std::size_t>(precision) < field.size()) field.resize(static_cast<std::size_t>(precision));
      if (static_cast<std::size_t>(width) > field.size()) {
        const std::string fill(static_cast<std::size_t>(width) - field.size(), ' ');
        field = flags.find('-') != std::string::npos ? field + fill : fill + field;
      }
    } else {
      if (!v.is_number() && !v.is_bool())
        ev.fail("format: %" + std::string(1, conv) + " format: a real number is required, not " + v.type_name());
      std::string spec = "%" + flags + (width ? std::to_string(width) : "") + (precision >= 0 ? "." + std::to_string(precision) : "");
      std::vector<char> buf(static_cast<std::size_t>(width + precision) + 400);
      if (std::string("diuxXo").find(conv) != std::string::npos) {
        const long long n = v.is_float() ? static_cast<long long>(v.as_number()) : (v.is_bool() ? v.as_bool() : v.as_int());
        const char c = conv == 'i' || conv == 'u' ? 'd' : conv;
        std::snprintf(buf.data(), buf.size(), (spec + "ll" + c).c_str(), n);
      } else if (std::string("fFeEgG").find(conv) != std::string::npos) {
        std::snprintf(buf.data(), buf.size(), (spec + conv).c_str(), v.as_number());
      } else {
        ev.fail("format: unsupported format character '" + std::string(1, conv) + "'");
      }
      field = buf.data();
    }
    out += field;
    ev.check_size(out.size());
  }
  // Python checks only tuples and single values (a list or dict argument is taken as a mapping).
  if (!mapping && (args.is_tuple() || !args.is_list()) && next < positional.size()) ev.fail("format: not all arguments converted during string formatting");
  return out;
}

}  // namespace plexus::jinja
