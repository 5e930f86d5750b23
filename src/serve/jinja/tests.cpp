// jinja2's built-in tests (`x is defined`, `x is divisibleby(3)`, ...).
#include <cmath>
#include <map>

#include "serve/jinja/builtins.h"
#include "serve/jinja/evaluator.h"
#include "serve/jinja/operators.h"
#include "serve/jinja/string_ops.h"

namespace plexus::jinja {
namespace {

using Test = bool (*)(Evaluator&, const Value&, CallArgs&);

const Value& other(Evaluator& ev, CallArgs& a, const char* test) {
  if (a.positional.size() != 1 || !a.keyword.empty()) ev.fail(std::string("test '") + test + "' takes one argument");
  return a.positional[0];
}
void none_args(Evaluator& ev, CallArgs& a, const char* test) {
  if (!a.positional.empty() || !a.keyword.empty()) ev.fail(std::string("test '") + test + "' takes no arguments");
}

#define PLEXUS_SIMPLE_TEST(fn, name, expr)                  \
  bool fn(Evaluator& ev, const Value& v, CallArgs& a) {     \
    none_args(ev, a, name);                                 \
    return expr;                                            \
  }
PLEXUS_SIMPLE_TEST(t_defined, "defined", !v.is_undefined())
PLEXUS_SIMPLE_TEST(t_undefined, "undefined", v.is_undefined())
PLEXUS_SIMPLE_TEST(t_none, "none", v.is_none())
PLEXUS_SIMPLE_TEST(t_string, "string", v.is_string())
PLEXUS_SIMPLE_TEST(t_mapping, "mapping", v.is_dict())
PLEXUS_SIMPLE_TEST(t_iterable, "iterable", v.is_list() || v.is_dict() || v.is_string() || v.is_undefined())
PLEXUS_SIMPLE_TEST(t_sequence, "sequence", v.is_list() || v.is_dict() || v.is_string() || v.is_undefined())
PLEXUS_SIMPLE_TEST(t_number, "number", v.is_number() || v.is_bool())
PLEXUS_SIMPLE_TEST(t_integer, "integer", v.is_int())
PLEXUS_SIMPLE_TEST(t_float, "float", v.is_float())
PLEXUS_SIMPLE_TEST(t_boolean, "boolean", v.is_bool())
PLEXUS_SIMPLE_TEST(t_true, "true", v.is_bool() && v.as_bool())
PLEXUS_SIMPLE_TEST(t_false, "false", v.is_bool() && !v.as_bool())
PLEXUS_SIMPLE_TEST(t_callable, "callable", v.is_function())
#undef PLEXUS_SIMPLE_TEST

// lower/upper: jinja2's str(value).islower() / isupper() (a character loop, charged).
bool case_test(Evaluator& ev, const Value& v, CallArgs& a, const char* name, bool upper) {
  none_args(ev, a, name);
  const std::string holder = v.is_string() ? std::string() : text_of(ev, v);
  const std::string_view s = v.is_string() ? std::string_view(v.as_string()) : std::string_view(holder);
  ev.work().bytes(kCharCost, s.size(), "testing a string");
  return upper ? is_upper(s) : is_lower(s);
}
bool t_lower(Evaluator& ev, const Value& v, CallArgs& a) { return case_test(ev, v, a, "lower", false); }
bool t_upper(Evaluator& ev, const Value& v, CallArgs& a) { return case_test(ev, v, a, "upper", true); }

// value % 2 with Python's modulo (floats too: 1.5 is neither even nor odd).
double mod2(Evaluator& ev, const Value& v, const char* test) {
  if (v.is_float()) {
    const double m = std::fmod(v.as_number(), 2.0);
    return m < 0 ? m + 2.0 : m;
  }
  if (v.big()) return v.big()->is_odd();
  const std::int64_t m = to_int(ev, v, test) % 2;
  return static_cast<double>(m < 0 ? m + 2 : m);
}
bool t_even(Evaluator& ev, const Value& v, CallArgs& a) {
  none_args(ev, a, "even");
  return mod2(ev, v, "the value of 'even'") == 0;
}
bool t_odd(Evaluator& ev, const Value& v, CallArgs& a) {
  none_args(ev, a, "odd");
  return mod2(ev, v, "the value of 'odd'") == 1;
}
bool t_divisibleby(Evaluator& ev, const Value& v, CallArgs& a) {
  const Value& d = other(ev, a, "divisibleby");  // jinja2: value % num == 0
  if (!(v.is_number() || v.is_bool()) || !(d.is_number() || d.is_bool()))
    ev.fail("divisibleby needs numbers, got " + v.type_name() + " and " + d.type_name());
  if (d.as_number() == 0) ev.fail("divisibleby(0): division by zero");
  return equal(binary(ev, "%", v, d), Value(0), ev.work());
}
bool t_eq(Evaluator& ev, const Value& v, CallArgs& a) { return equal(v, other(ev, a, "eq"), ev.work()); }
bool t_ne(Evaluator& ev, const Value& v, CallArgs& a) { return !equal(v, other(ev, a, "ne"), ev.work()); }
bool t_lt(Evaluator& ev, const Value& v, CallArgs& a) { return binary(ev, "<", v, other(ev, a, "lt")).as_bool(); }
bool t_le(Evaluator& ev, const Value& v, CallArgs& a) { return binary(ev, "<=", v, other(ev, a, "le")).as_bool(); }
bool t_gt(Evaluator& ev, const Value& v, CallArgs& a) { return binary(ev, ">", v, other(ev, a, "gt")).as_bool(); }
bool t_ge(Evaluator& ev, const Value& v, CallArgs& a) { return binary(ev, ">=", v, other(ev, a, "ge")).as_bool(); }
bool t_in(Evaluator& ev, const Value& v, CallArgs& a) { return contains(ev, other(ev, a, "in"), v); }
bool t_sameas(Evaluator& ev, const Value& v, CallArgs& a) {
  const Value& o = other(ev, a, "sameas");
  if (v.kind() != o.kind()) return false;
  return v.is_none() || v.is_undefined() || ((v.is_bool() || v.is_int()) && equal(v, o, ev.work()));
}

const std::map<std::string, Test>& tests() {
  static const std::map<std::string, Test> kTests = {
      {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none},         {"string", t_string},
      {"mapping", t_mapping}, {"iterable", t_iterable},   {"sequence", t_sequence}, {"number", t_number},
      {"integer", t_integer}, {"float", t_float},         {"boolean", t_boolean},   {"true", t_true},
      {"false", t_false},     {"callable", t_callable},   {"lower", t_lower},       {"upper", t_upper},
      {"even", t_even},       {"odd", t_odd},             {"divisibleby", t_divisibleby},
      {"eq", t_eq},           {"equalto", t_eq},          {"==", t_eq},             {"ne", t_ne},
      {"!=", t_ne},           {"lt", t_lt},               {"lessthan", t_lt},       {"<", t_lt},
      {"le", t_le},           {"<=", t_le},               {"gt", t_gt},             {"greaterthan", t_gt},
      {">", t_gt},            {"ge", t_ge},               {">=", t_ge},             {"in", t_in},
      {"sameas", t_sameas},
  };
  return kTests;
}

}  // namespace

bool has_test(const std::string& name) { return tests().count(name) > 0; }

bool apply_test(Evaluator& ev, const std::string& name, const Value& value, CallArgs& args) {
  const auto& all = tests();
  const auto it = all.find(name);
  if (it == all.end()) ev.fail("no test named " + Value(name.substr(0, 80)).brief());
  return it->second(ev, value, args);
}

}  // namespace plexus::jinja
