// jinja2's built-in filters, tests, global functions and the methods of strings, lists and
// dicts that templates call (the ones Hugging Face chat templates use).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/jinja/value.h"

namespace plexus::jinja {

class Evaluator;

// `value | name(args)`; TemplateError for an unknown filter or bad arguments.
Value apply_filter(Evaluator& ev, const std::string& name, const Value& value, CallArgs& args);
// `value is name(args)`; TemplateError for an unknown test.
bool apply_test(Evaluator& ev, const std::string& name, const Value& value, CallArgs& args);
bool has_test(const std::string& name);
// The bound method `obj.name` of a string, list or dict; undefined when there is none (with an
// empty name()), or when it would change a list or dict (name() says so).
Value method(const Value& obj, const std::string& name);
// range, namespace, dict: added to every render's globals.
void add_builtin_globals(Dict& globals);

// The argument at `index` or named `name`, else `fallback`; TemplateError naming `what` when
// an argument is given twice.
Value arg(Evaluator& ev, const CallArgs& args, std::size_t index, const char* name, Value fallback = Value());
// TemplateError unless at most `n` positional arguments and only keywords among `names` are given.
void check_args(Evaluator& ev, const CallArgs& args, const char* what, std::size_t n,
                std::initializer_list<const char*> names = {});

// json.dumps(v, ensure_ascii, indent=indent (null: none; else each level's unit), separators,
// sort_keys); sizes checked and bytes charged before each piece is written.
std::string to_json_text(Evaluator& ev, const Value& v, const std::string* indent, const std::string& item_sep,
                         const std::string& key_sep, bool sort_keys, bool ensure_ascii = false);

// Python's `fmt % args` (args a tuple, a dict for %(name)s, or one value).
std::string printf_format(Evaluator& ev, std::string_view fmt, const Value& args);

// The 64-bit value of an int, bool or integral-enough float (a size, count or width);
// TemplateError naming `what` otherwise, and for an int past 64 bits (Python's OverflowError).
std::int64_t to_int(Evaluator& ev, const Value& v, const char* what);
// Python's int(text, base) (whitespace, sign, underscores, 0x/0o/0b prefixes; base 0 or 2..36)
// and float(text) (decimal, exponent, underscores, inf, infinity, nan). nullopt when Python
// raises ValueError; TemplateError for an integer past kMaxIntBits (integers.h).
std::optional<Value> parse_python_int(Evaluator& ev, std::string_view text, std::int64_t base);
std::optional<double> parse_python_float(std::string_view text);
// Python's round(x, ndigits) of a float: its exact value rounded to ndigits decimals, halves to
// even; nullopt where Python's OverflowError is ("rounded value too large to represent").
std::optional<double> python_round(double x, std::int64_t ndigits);

// str(v), charged (a string's bytes copied; other values printed).
std::string text_of(Evaluator& ev, const Value& v);
// A case change of s (upper, lower, title, ... of string_ops.h: no longer than s), its size
// checked and its work charged first.
std::string change_case(Evaluator& ev, const std::string& s, std::string (*f)(const std::string&));
// str.strip/lstrip/rstrip(chars) (string_ops.h), its character loops and searches charged.
std::string strip_text(Evaluator& ev, std::string_view s, const std::string* chars, bool left, bool right);
// Charges a linear search of `text` bytes for a pattern of `pattern` bytes (with its prefix table).
void charge_search(Evaluator& ev, std::uint64_t text, std::uint64_t pattern, const char* what);
// The first occurrence of `needle` in `text` at or after `from` (npos when none), in time
// linear in both and charged so.
std::size_t find_text(Evaluator& ev, std::string_view text, std::string_view needle, std::size_t from = 0);
// Non-overlapping occurrences of `sub` in s (str.count), at most `max`, charged per byte and match.
std::size_t count_text(Evaluator& ev, std::string_view s, std::string_view sub, std::uint64_t max);
// str.replace(from, to, count) (count < 0: all), its size checked before it is made.
std::string replace_text(Evaluator& ev, const std::string& s, const std::string& from, const std::string& to,
                         std::int64_t count);

// jinja2's attribute argument ("a.b", "items.0" or an integer index), read once and then
// applied to each item (make_attrgetter); lookups charged.
class AttrPath {
 public:
  AttrPath(Evaluator& ev, const Value& path);
  Value of(Evaluator& ev, const Value& item) const;

 private:
  std::vector<Value> parts_;
};

}  // namespace plexus::jinja
