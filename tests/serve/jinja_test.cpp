// The Jinja engine's statements, whitespace control, expressions, scoping, undefined values,
// errors with line and column, and limits on hostile templates (expected outputs from jinja2
// configured as transformers configures it).
#include <gtest/gtest.h>

#include "jinja_util.h"

namespace plexus::testing {
namespace {

using OJson = nlohmann::ordered_json;

TEST(JinjaTest, TextExpressionsAndComments) {
  EXPECT_EQ(render("plain text"), "plain text");
  EXPECT_EQ(render("a{# note #}b{{ 1 + 2 }}"), "ab3");
  EXPECT_EQ(render("{{ name }}!", {{"name", "Ada"}}), "Ada!");
  EXPECT_EQ(render("ends with a newline\n"), "ends with a newline");  // keep_trailing_newline off
  EXPECT_EQ(render("a\r\nb\rc"), "a\nb\nc");
}

TEST(JinjaTest, Literals) {
  EXPECT_EQ(render("{{ 'a\\tb\\u00e9\\x41' }}|{{ \"it's\" }}|{{ 'x' 'y' }}"), "a\tbéA|it's|xy");
  EXPECT_EQ(render("{{ 42 }} {{ 1_000 }} {{ 2.5 }} {{ 1e3 }} {{ true }} {{ False }} {{ none }} {{ None }}"),
            "42 1000 2.5 1000.0 True False None None");
  EXPECT_EQ(render("{{ [1, 'a', none, true, 1.0] }}|{{ {'a': 1, 'b': [1, 2]} }}|{{ (1,) }}|{{ (1, 2) }}"),
            "[1, 'a', None, True, 1.0]|{'a': 1, 'b': [1, 2]}|(1,)|(1, 2)");
  EXPECT_EQ(render("{{ [\"it's\", 'say \"hi\"', 'a\\nb'] }}"), "[\"it's\", 'say \"hi\"', 'a\\nb']");
}

TEST(JinjaTest, Arithmetic) {
  EXPECT_EQ(render("{{ 1 + 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}|{{ 7 / 2 }}|{{ 1.5 * 2 }}"),
            "3|3|-4|1|2|1024|3.5|3.0");
  EXPECT_EQ(render("{{ 0.1 + 0.2 }}|{{ 1e20 }}|{{ 1e-5 }}|{{ 1e16 }}|{{ 123456789.123 }}|{{ 1/3 }}|{{ 2 ** -1 }}"),
            "0.30000000000000004|1e+20|1e-05|1e+16|123456789.123|0.3333333333333333|0.5");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ true }}|{{ [1] + [2] }}|{{ 'ab' * 3 }}|{{ [0] * 3 }}|{{ -x }}|{{ +x }}", {{"x", 3}}),
            "a1NoneTrue|[1, 2]|ababab|[0, 0, 0]|-3|3");
}

TEST(JinjaTest, ComparisonsLogicAndMembership) {
  EXPECT_EQ(render("{{ 3 > 2.5 }}{{ 'a' < 'b' }}{{ [1,2] < [1,3] }}{{ 1 == 1.0 }}{{ true == 1 }}{{ none == none }}{{ 'a' != 'b' }}"),
            "TrueTrueTrueTrueTrueTrueTrue");
  // Comparisons chain as Python's; ** is left-associative as jinja2's.
  EXPECT_EQ(render("{{ 3 > 2 > 1 }}{{ 1 < 3 > 2 == 2 }}{{ 1 < 2 > 3 }}|{{ 2 ** 3 ** 2 }}"), "TrueTrueFalse|64");
  EXPECT_EQ(render("{{ true and 'x' }}|{{ false or 0 }}|{{ none or [] }}|{{ 0 and 1 }}|{{ not 0 }}"), "x|0|[]|0|True");
  const OJson vars = {{"s", "abc"}, {"lst", {3, 1, 2}}, {"d", {{"a", 1}}}};
  EXPECT_EQ(render("{{ 'a' in s }}{{ 'z' not in s }}{{ 1 in lst }}{{ 'a' in d }}{{ 'q' in d }}", vars),
            "TrueTrueTrueTrueFalse");
  EXPECT_EQ(render("{{ 'yes' if lst else 'no' }}|{{ 'yes' if not lst }}|", vars), "yes||");
}

TEST(JinjaTest, IfElifElse) {
  const std::string t = "{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(render(t, {{"x", 1}}), "one");
  EXPECT_EQ(render(t, {{"x", 2}}), "two");
  EXPECT_EQ(render(t, {{"x", 5}}), "many");
}

TEST(JinjaTest, ForLoopVariables) {
  const OJson vars = {{"xs", {"a", "b", "c"}}};
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.cycle('+', '-') }};{% endfor %}",
                   vars),
            "1032TrueFalse3+;2121FalseFalse3-;3210FalseTrue3+;");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.previtem if loop.previtem is defined else '_' }}"
                   "{{ loop.nextitem if loop.nextitem is defined else '_' }} {% endfor %}",
                   vars),
            "_b ac b_ ");
}

TEST(JinjaTest, ForLoopElseFilterBreakContinueUnpacking) {
  const OJson vars = {{"lst", {3, 1, 2}}, {"d", {{"b", 2}, {"a", 1}}}};
  EXPECT_EQ(render("{% for x in lst if x > 1 %}{{ x }}{{ loop.length }}{% else %}none{% endfor %}", vars), "3222");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 5 %}{% break %}{% endif %}{% if x is odd %}{% continue %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "024");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}", vars),
            "b=2;a=1;ba");
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}"), "1234");
  EXPECT_EQ(render("{% for c in 'hé' %}[{{ c }}]{% endfor %}"), "[h][é]");
}

TEST(JinjaTest, ScopingAndNamespace) {
  // A set inside a loop stays inside (and each iteration starts again); if does not scope.
  EXPECT_EQ(render("{% set x = 4 %}{% for i in range(2) %}{% set x = x * 10 %}{{ x }}{% endfor %}{{ x }}"), "40404");
  EXPECT_EQ(render("{% set y = 1 %}{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");
  EXPECT_EQ(render("{% set ns = namespace(n=0, s='') %}{% for x in [1, 2, 3] %}{% set ns.n = ns.n + x %}"
                   "{% set ns.s = ns.s ~ x %}{% endfor %}{{ ns.n }} {{ ns.s }}"),
            "6 123");
  EXPECT_EQ(render("{% set p, q = 1, 2 %}{{ p }}{{ q }}"), "12");
  EXPECT_EQ(render("{% set a %}inner {{ 1 }}{% endset %}[{{ a }}]{% set b | upper %}shout{% endset %}{{ b }}"),
            "[inner 1]SHOUT");
  EXPECT_NE(render_error("{% set d = {} %}{% set d.x = 1 %}").find("namespace"), std::string::npos);
}

TEST(JinjaTest, Macros) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('a') }} {{ greet('b', '?') }} {{ greet(name='c', punct='.') }}"),
            "Hello a! Hello b? Hello c.");
  EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}"), "54321");
  EXPECT_NE(render_error("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}").find("takes 1 arguments"), std::string::npos);
  // A macro sees the scopes around its definition, as jinja2's closures do.
  EXPECT_EQ(render("{% for i in [1, 2] %}{% macro m() %}{{ i }}{{ loop.first }}{% endmacro %}{{ m() }};{% endfor %}"),
            "1True;2False;");
  EXPECT_EQ(render("{% macro f() %}{{ x }}{% endmacro %}{% set x = 7 %}{{ f() }}"), "7");
}

TEST(JinjaTest, FilterAndGenerationBlocks) {
  EXPECT_EQ(render("{% filter upper %}hello {{ s }}{% endfilter %}", {{"s", "abc"}}), "HELLO ABC");
  EXPECT_EQ(render("{% filter trim | upper %}  x  {% endfilter %}"), "X");
  EXPECT_EQ(render("{% generation %}gen {{ 1 }}{% endgeneration %}"), "gen 1");
  EXPECT_EQ(render("{% do [1].count(1) %}ok"), "ok");
}

TEST(JinjaTest, WhitespaceControl) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it goes.
  EXPECT_EQ(render("<a>\n  {% if true %}\n    x\n  {% endif %}\n<b>"), "<a>\n    x\n<b>");
  EXPECT_EQ(render("a  {{- ' b ' -}}  c"), "a b c");
  EXPECT_EQ(render("a\n  {%- if true -%}\n  b  \n{%- endif %}\nc"), "abc");
  // `+` keeps what lstrip_blocks and trim_blocks would take.
  EXPECT_EQ(render("a\n  {%+ if true +%}\nb{% endif %}"), "a\n  \nb");
  EXPECT_EQ(render("<start>\n    {%- if x %}\n        A\n    {%- endif %}\n    {% if x %}\n        B\n    {% endif %}\n"
                   "    {% if x -%}\n        C\n    {%- endif %}\n<end>",
                   {{"x", true}}),
            "<start>        A        B\nC<end>");
  EXPECT_EQ(render("{# comment #}\na {#- trimmed -#} b\n  {# lstripped #}\nc"), "ab\nc");
  EXPECT_EQ(render("  {{ 'x' }}\n"), "  x");  // no lstrip before {{
}

TEST(JinjaTest, AttributesItemsAndSlices) {
  const OJson vars = {{"m", {{"role", "user"}, {"parts", {"a", "b"}}}}, {"s", "abc"}, {"lst", {3, 1, 2}}};
  EXPECT_EQ(render("{{ m.role }}{{ m['role'] }}{{ m.parts[1] }}{{ m.parts.0 }}{{ lst[-1] }}{{ s[0] }}", vars), "useruserba2a");
  EXPECT_EQ(render("{{ s[1:] }}|{{ s[::-1] }}|{{ s[-2:] }}|{{ lst[::2] }}|{{ lst[1:-1] }}|{{ lst[:10] }}|{{ lst[5:1:-1] }}"
                   "|{{ 'héllo'[1:3] }}|{{ lst[::-1] }}",
                   vars),
            "bc|cba|bc|[3, 2]|[1]|[3, 1, 2]|[2]|él|[2, 1, 3]");
  EXPECT_NE(render_error("{{ lst[::0] }}", vars).find("slice step cannot be zero"), std::string::npos);
}

TEST(JinjaTest, UndefinedLikeJinja2) {
  const OJson vars = {{"d", OJson::object()}};
  EXPECT_EQ(render("[{{ y }}]|{{ y | length }}|{% for i in y %}no{% endfor %}|{{ 'def' if not y }}|{{ y ~ 'a' }}|"
                   "{{ d.zz }}|{{ d['zz'] }}|{{ y is defined }}{{ y is undefined }}{{ d.zz is defined }}",
                   vars),
            "[]|0||def|a|||FalseTrueFalse");
  EXPECT_NE(render_error("{{ y.attr }}").find("'y' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ y + 1 }}").find("'y' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ d.zz.deeper }}", vars).find("has no attribute 'zz'"), std::string::npos);
}

TEST(JinjaTest, TypeErrorsAreTemplateErrors) {
  EXPECT_NE(render_error("{{ 1 + 'a' }}").find("unsupported operand type(s) for +: 'int' and 'str'"), std::string::npos);
  EXPECT_NE(render_error("{{ 'a' in none }}").find("argument of type 'NoneType' is not iterable"), std::string::npos);
  EXPECT_NE(render_error("{{ 'a' < 1 }}").find("'<' not supported"), std::string::npos);
  EXPECT_NE(render_error("{{ 1 / 0 }}").find("division by zero"), std::string::npos);
  EXPECT_NE(render_error("{{ 'a'() }}").find("not callable"), std::string::npos);
  EXPECT_NE(render_error("{% for x in 3 %}{% endfor %}").find("'int' object is not iterable"), std::string::npos);
  // Lists and dicts are immutable, as in transformers' sandbox.
  EXPECT_NE(render_error("{{ [1].append(2) }}").find("cannot change lists or dicts"), std::string::npos);
}

TEST(JinjaTest, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(render_error("line one\n{% for %}"), "template syntax error at line 2, column 8: expected a name, got '%}'");
  EXPECT_EQ(render_error("{% if x %}unclosed"),
            "template syntax error at line 1, column 19: missing 'elif' or 'else' or 'endif' (the block is not closed)");
  EXPECT_EQ(render_error("ok\n  {% endif %}"), "template syntax error at line 2, column 6: 'endif' with no open block it could close");
  EXPECT_EQ(render_error("{{ 'abc' }"), "template syntax error at line 1, column 1: unterminated expression: add '}}'");
  EXPECT_EQ(render_error("{{ \"open }}"), "template syntax error at line 1, column 4: unterminated string literal");
  EXPECT_EQ(render_error("{# open"), "template syntax error at line 1, column 1: unterminated comment: add '#}'");
  EXPECT_EQ(render_error("{% bogus %}"), "template syntax error at line 1, column 4: unknown statement 'bogus'");
  EXPECT_EQ(render_error("{% break %}"), "template syntax error at line 1, column 4: 'break' outside a for loop");
  EXPECT_EQ(render_error("{{ 1 $ 2 }}"), "template syntax error at line 1, column 6: unexpected character '$'");
  EXPECT_EQ(render_error("\n\n  {{ x | nofilter }}"), "template error at line 3, column 8: no filter named 'nofilter'");
  EXPECT_EQ(render_error("{{ x is nottest }}"), "template error at line 1, column 6: no test named 'nottest'");
}

TEST(JinjaTest, HostileTemplatesHitLimitsNotTheStack) {
  const std::string deep_parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_NE(render_error(deep_parens).find("nested deeper than 200 levels"), std::string::npos);
  std::string deep_ifs;
  for (int i = 0; i < 3000; ++i) deep_ifs += "{% if true %}";
  EXPECT_NE(render_error(deep_ifs).find("nested deeper than 200 levels"), std::string::npos);
  std::string nots = "{{ ";
  for (int i = 0; i < 100000; ++i) nots += "not ";
  EXPECT_NE(render_error(nots + "x }}").find("nested deeper"), std::string::npos);
  std::string chain = "{{ x";
  for (int i = 0; i < 100000; ++i) chain += "|string";
  EXPECT_NE(render_error(chain + " }}").find("nested deeper"), std::string::npos);

  EXPECT_NE(render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("calls nest deeper than 100"),
            std::string::npos);
  EXPECT_NE(render_error("{% for i in range(10**12) %}{% endfor %}").find("range() of more than"), std::string::npos);
  jinja::RenderLimits small;
  small.max_steps = 100000;
  EXPECT_NE(render_error("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", {}, small)
                .find("more than 100000 steps"),
            std::string::npos);
  small.max_output = 1000;
  EXPECT_NE(render_error("{% for i in range(100) %}{{ 'x' * 20 }}{% endfor %}", {}, small).find("grows past 1000 bytes"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 'a' * 10**12 }}").find("grows past"), std::string::npos);
  EXPECT_NE(render_error("{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
                .find("grows past"),
            std::string::npos);
  // Integers are Python's up to 4096 bits (jinja_integers_test.cpp); past them an error.
  EXPECT_NE(render_error("{{ 2 ** 5000 }}").find("integer overflow in 2 ** 5000 (past 4096 bits"), std::string::npos);
  EXPECT_NE(render_error("{{ 9" + std::string(1300, '9') + " }}").find("too large"), std::string::npos);
  EXPECT_EQ(render("{{ [1, 2, 3][::9223372036854775807] }}"), "[1]");
}

TEST(JinjaTest, HostileValuesStayAcyclicShallowAndSmall) {
  // Namespace attributes are the one place values change: no cycles, no deep nesting.
  EXPECT_EQ(render_error("{% set ns = namespace(x=1) %}{% set ns.x = ns %}"),
            "template error at line 1, column 33: a namespace cannot hold itself");
  EXPECT_EQ(render_error("{% set ns = namespace(x=1) %}{% set ns.x = [1, {'a': ns}] %}"),
            "template error at line 1, column 33: a namespace cannot hold itself");
  EXPECT_NE(render_error("{% set ns = namespace(x=1) %}{% for i in range(200000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}")
                .find("nests deeper than 600 levels"),
            std::string::npos);
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in range(500) %}{% set ns.x = [ns.x] %}{% endfor %}"
                   "{{ ns.x | string | length }}"),
            "1001");
  // A loop stored in a namespace keeps the fields it had then (found in review: the loop object
  // changed in place after the check, so ns -> l -> previtem -> ns was a cycle that crashed printing).
  const std::string ns = "{% set ns = namespace() %}";
  EXPECT_EQ(render(ns + "{% for x in [ns, 1] %}{% if loop.first %}{% set ns.l = loop %}{% endif %}{% endfor %}"
                        "{{ ns.l.index }}{{ ns.l.previtem is defined }}{{ ns.l.nextitem }}{{ ns.l.last }}"),
            "1False1False");
  EXPECT_EQ(render(ns + "{% for x in [ns, 1] %}{% if loop.first %}{% set ns.l = loop %}{% endif %}{% endfor %}{{ ns }}")
                .rfind("<Namespace {'l': {'length': 2, ", 0),
            0u);
  EXPECT_EQ(render(ns + "{% for x in [ns, 1, 2] %}{% if loop.first %}{% set ns.l = [loop] %}{% endif %}{% endfor %}"
                        "{{ ns == ns }}{{ ns.l[0].index }}{{ (ns | string | length) > 0 }}"),
            "True1True");
  for (const char* source : {"{% for x in [1, ns] %}{% if loop.first %}{% set ns.l = loop %}{% endif %}{% endfor %}{{ ns }}",
                             "{% for x in [ns, 1] %}{% if loop.last %}{% set ns.l = loop %}{% endif %}{% endfor %}{{ ns }}",
                             "{% for x in [ns, 1] %}{% set ns.l = [loop] %}{% endfor %}{{ ns }}"})
    EXPECT_NE(render_error(ns + source).find("a namespace cannot hold itself"), std::string::npos) << source;
  // Through a second namespace: b keeps a loop stored before previtem was a, so a may hold b.
  EXPECT_EQ(render("{% set a = namespace() %}{% set b = namespace() %}{% for x in [a, 1] %}{% if loop.first %}"
                   "{% set b.l = loop %}{% endif %}{% endfor %}{% set a.b = b %}{{ a.b.l.index }}{{ a | string | length > 0 }}"),
            "1True");
  // Shared sublists: printing and comparing them is bounded, not exponential.
  const std::string dag = "{% set ns = namespace(x=1, y=1) %}{% for i in range(100) %}{% set ns.x = [ns.x, ns.x] %}"
                          "{% set ns.y = [ns.y, ns.y] %}{% endfor %}";
  EXPECT_NE(render_error(dag + "{{ ns.x }}").find("more than 10000000 steps"), std::string::npos);
  EXPECT_NE(render_error(dag + "{{ ns.x == ns.y }}").find("more than 10000000 steps"), std::string::npos);
  EXPECT_NE(render_error(dag + "{{ ns.x | tojson }}").find("more than 10000000 steps"), std::string::npos);
  EXPECT_EQ(render(dag + "{{ ns.x == ns.x }}"), "True");
  // Lists and the work of copying them are bounded too.
  EXPECT_NE(render_error("{% set ns = namespace(x=[1]) %}{% for i in range(100) %}{% set ns.x = ns.x + ns.x %}{% endfor %}")
                .find("a list grows past 1000000 items"),
            std::string::npos);
  EXPECT_NE(render_error("{% set ns = namespace(x=[]) %}{% for i in range(1000000) %}{% set ns.x = ns.x + [i] %}{% endfor %}")
                .find("copying lists: the template touches more than 536870912 bytes"),
            std::string::npos);
}

}  // namespace
}  // namespace plexus::testing
