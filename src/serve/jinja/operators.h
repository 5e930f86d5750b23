// Python's arithmetic, comparison, membership and slicing on template values.
#pragma once
#include <string>

#include "serve/jinja/value.h"

namespace plexus::jinja {

class Evaluator;

// a op b for + - * / // % ** ~ == != < > <= >= in "not in"; TemplateError on types Python rejects.
Value binary(Evaluator& ev, const std::string& op, const Value& a, const Value& b);
// -v, +v.
Value unary(Evaluator& ev, const std::string& op, const Value& v);
// obj[start:stop:step] of a list or string, Python semantics (undefined parts omitted).
Value slice(Evaluator& ev, const Value& obj, const Value& start, const Value& stop, const Value& step);
// `needle in haystack`.
bool contains(Evaluator& ev, const Value& haystack, const Value& needle);

}  // namespace plexus::jinja
