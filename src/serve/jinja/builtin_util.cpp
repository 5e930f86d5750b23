// Helpers of the built-ins: argument access, int conversion, UTF-8 characters.
#include <cerrno>
#include <cstdlib>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"

namespace plexus::jinja {

Value arg(Evaluator& ev, const CallArgs& args, std::size_t index, const char* name, Value fallback) {
  const Value* found = index < args.positional.size() ? &args.positional[index] : nullptr;
  for (const auto& [k, v] : args.keyword)
    if (k == name) {
      if (found) ev.fail(std::string("argument '") + name + "' given twice");
      found = &v;
    }
  return found ? *found : fallback;
}

void check_args(Evaluator& ev, const CallArgs& args, const char* what, std::size_t n,
                std::initializer_list<const char*> names) {
  if (args.positional.size() > n)
    ev.fail(std::string(what) + " takes at most " + std::to_string(n) + " arguments, got " +
            std::to_string(args.positional.size()));
  for (const auto& [k, _] : args.keyword) {
    bool known = false;
    for (const char* name : names) known = known || k == name;
    if (!known) ev.fail(std::string(what) + " has no argument '" + k + "'");
  }
}

std::int64_t to_int(Evaluator& ev, const Value& v, const char* what) {
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool();
  if (v.is_float() && std::isfinite(v.as_number()) && std::abs(v.as_number()) < 9.2e18)
    return static_cast<std::int64_t>(v.as_number());
  ev.fail(std::string(what) + " must be an integer, got " + v.type_name() + " " + v.repr());
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (i + n > s.size()) n = 1;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) n = 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace plexus::jinja
