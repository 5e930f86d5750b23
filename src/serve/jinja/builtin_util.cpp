// Helpers of the built-ins: argument access, integers, charged text search and replace,
// attribute paths.
#include <bit>
#include <cmath>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"
#include "serve/jinja/string_ops.h"
#include "serve/jinja/text_search.h"

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
    if (!known) ev.fail(std::string(what) + " has no argument " + Value(k.substr(0, 80)).brief());
  }
}

std::int64_t to_int(Evaluator& ev, const Value& v, const char* what) {
  if (v.big()) ev.fail(std::string(what) + " " + v.brief() + " is too large (past 64 bits)");
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool();
  if (v.is_float() && std::isfinite(v.as_number()) && std::abs(v.as_number()) < 9.2e18)
    return static_cast<std::int64_t>(v.as_number());
  ev.fail(std::string(what) + " must be an integer, got " + v.type_name() + " " + v.brief());
}

std::string text_of(Evaluator& ev, const Value& v) { return v.str(ev.work()); }

std::string change_case(Evaluator& ev, const std::string& s, std::string (*f)(const std::string&)) {
  ev.work().check_size(s.size());
  ev.work().bytes(kCaseMapCost, s.size(), "changing the case of a string");
  return f(s);
}

std::string strip_text(Evaluator& ev, std::string_view s, const std::string* chars, bool left, bool right) {
  Work& work = ev.work();
  const std::uint64_t bytes = std::uint64_t{s.size()} + (chars ? chars->size() : 0);
  work.bytes(kCharCost, bytes, "stripping a string");  // the character loops over both
  // Non-ASCII characters to strip are sorted, then binary-searched: a comparison per halving.
  if (chars && !is_ascii(*chars))
    work.bytes(kCharCost * static_cast<std::uint64_t>(std::bit_width(chars->size())), bytes, "stripping a string");
  return strip(s, chars, left, right);
}

void charge_search(Evaluator& ev, std::uint64_t text, std::uint64_t pattern, const char* what) {
  ev.work().bytes(kSearchCost, text, what);
  ev.work().bytes(sizeof(std::uint32_t) + 1, pattern, what);  // the pattern's prefix table
}

std::size_t find_text(Evaluator& ev, std::string_view text, std::string_view needle, std::size_t from) {
  if (needle.empty()) return from <= text.size() ? from : std::string_view::npos;
  if (from > text.size() || needle.size() > text.size() - from) return std::string_view::npos;
  charge_search(ev, text.size() - from, needle.size(), "searching a string");
  return Searcher(needle).find(text, from);
}

std::string replace_text(Evaluator& ev, const std::string& s, const std::string& from, const std::string& to,
                         std::int64_t count) {
  Work& work = ev.work();
  // Count first (a scan), so the result's size is checked before it is made.
  const std::size_t n = count_text(ev, s, from, count < 0 ? SIZE_MAX : static_cast<std::uint64_t>(count));
  std::uint64_t added = 0, size = 0;
  if (__builtin_mul_overflow(std::uint64_t{n}, std::uint64_t{to.size()}, &added) ||
      __builtin_add_overflow(std::uint64_t{s.size()} - std::uint64_t{n} * from.size(), added, &size))
    size = UINT64_MAX;
  work.check_size(size);
  work.bytes(size + s.size(), "replacing in a string");
  return replace(s, from, to, n);
}

std::size_t count_text(Evaluator& ev, std::string_view s, std::string_view sub, std::uint64_t max) {
  Work& work = ev.work();
  charge_search(ev, s.size(), sub.size(), "searching a string");
  // Each match costs a search's setup: counted up to what the budget affords, then charged.
  const std::size_t n = count_occurrences(s, sub, std::min(max, work.affordable(kMatchCost) + 1));
  work.bytes(kMatchCost, n, "searching a string");
  return n;
}

AttrPath::AttrPath(Evaluator& ev, const Value& path) {
  if (path.is_int()) {
    parts_.push_back(path);
    return;
  }
  const std::string text = text_of(ev, path);
  const std::string dot = ".";
  ev.work().bytes(text.size(), "reading an attribute path");
  const std::vector<std::string> parts = split(text, &dot, -1, ev.limits().max_items);
  ev.work().check_items(parts.size());
  for (const std::string& part : parts) {
    // Digits index a list (jinja2's make_attrgetter); past 18 digits no list is that long.
    const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) parts_.emplace_back(part);
    else parts_.emplace_back(part.size() > 18 ? INT64_MAX : static_cast<std::int64_t>(std::stoll(part)));
  }
}

Value AttrPath::of(Evaluator& ev, const Value& item) const {
  Value v = item;
  for (const Value& part : parts_) {
    if (v.is_undefined()) return v;
    v = ev.item(v, part);
  }
  return v;
}

}  // namespace plexus::jinja
