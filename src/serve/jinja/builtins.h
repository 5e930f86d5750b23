// jinja2's built-in filters, tests, global functions and the methods of strings, lists and
// dicts that templates call (the ones Hugging Face chat templates use).
#pragma once
#include <string>

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

// json.dumps(v, ensure_ascii=False, indent=indent (<0: none), separators, sort_keys).
std::string to_json_text(Evaluator& ev, const Value& v, int indent, const std::string& item_sep,
                         const std::string& key_sep, bool sort_keys);

// Python's `fmt % args` (args a tuple, a dict for %(name)s, or one value).
std::string printf_format(Evaluator& ev, const std::string& fmt, const Value& args);

// Python int(x)/str(x) helpers shared by filters and methods.
std::int64_t to_int(Evaluator& ev, const Value& v, const char* what);
// Python's str.split / whitespace helpers and code point views of UTF-8 text.
std::vector<std::string> utf8_chars(const std::string& s);

}  // namespace plexus::jinja
