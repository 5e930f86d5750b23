// The Jinja engine against hostile templates (issue 32): work counted in bytes touched, so big
// strings compared, sorted, copied or scanned a million times stop with an error within seconds;
// sizes checked before anything is allocated; huge-step ranges counted, not iterated; and a
// legitimate 8 MiB conversation still renders through the real chat templates.
#include <gtest/gtest.h>

#include <chrono>

#include "jinja_util.h"
#include "test_util.h"

namespace plexus::testing {
namespace {

using OJson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// 60 MB strings given as data, as a client's messages are: t differs from s in its last byte,
// u equals s (another string), so each comparison of them reads all 60 MB.
const OJson& big_strings() {
  static const OJson kVars = {{"s", std::string(60'000'000, 'a')},
                              {"t", std::string(59'999'999, 'a') + "b"},
                              {"u", std::string(60'000'000, 'a')}};
  return kVars;
}

// A render error from one of the limits on work and sizes.
bool hits_limit(const std::string& e) {
  return e.find("the template touches more than 536870912 bytes") != std::string::npos ||
         e.find("grows past") != std::string::npos;
}

// The message of rendering `source`, which must fail within a generous liveness bound (the
// same templates ran past 60 s, or until killed, before the work limit counted bytes).
std::string error_within_bound(const std::string& source, const OJson& vars = OJson::object()) {
  const auto start = Clock::now();
  const std::string e = render_error(source, vars);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 30.0) << source;
  EXPECT_FALSE(e.empty()) << source << " rendered";
  return e;
}

TEST(JinjaLimitsTest, BigStringComparisonsStopAtTheByteBudget) {
  // Issue 32's templates (~100 bytes; with the strings made by the template itself in
  // chat_template_cli_test.cpp): a 60 MB string compared a million times.
  for (const char* body : {
           "{{ t in [s] * 1000000 }}",
           "{{ ([s, t] * 500000) | sort | length }}",
           "{{ ([s, t] * 500000) | unique | list | length }}",
           "{{ ([s, t] * 500000) | max | length }}",
           "{{ [s] * 1000000 == [u] * 1000000 }}",
           "{{ {'a': s, 'b': t, 'c': s, 'd': t, 'e': s, 'f': t, 'g': s, 'h': t} | dictsort(by='value') }}",
           "{{ ([{'k': s}, {'k': t}] * 500000) | sort(attribute='k') | length }}",
       }) {
    const std::string e = error_within_bound(body, big_strings());
    EXPECT_NE(e.find("the template touches more than 536870912 bytes"), std::string::npos) << body << ": " << e;
    EXPECT_EQ(e.rfind("template error at line 1, column ", 0), 0u) << e;  // where it happened
  }
  // A string that differs early costs little: the bytes compared, not the strings' length.
  EXPECT_EQ(render("{% set w = 'b' ~ s %}{{ (([w, s] * 1000) | sort(case_sensitive=true))[0] == s }}", big_strings()), "True");
  // The same string object is equal at once (as Python's identity check).
  EXPECT_EQ(render("{{ s in [s] * 1000000 }}", big_strings()), "True");
}

TEST(JinjaLimitsTest, EveryBuiltinChargesTheBytesItTouches) {
  // Filters, tests, methods and operators that compare, copy, search, format, slice or sort
  // strings, each over an 8 MB string a million times, against a 64 MiB budget.
  const OJson vars = {{"s", std::string(8'000'000, 'a')}, {"t", std::string(7'999'999, 'a') + "b"},
                      {"u", std::string(8'000'000, 'a')}};
  jinja::RenderLimits limits;
  limits.max_bytes = 64 << 20;
  for (const char* body : {
           "{{ ([s, t] * 500000) | sort(reverse=true, case_sensitive=true) | length }}",
           "{{ ([s, t] * 500000) | unique(case_sensitive=true) | list | length }}",
           "{{ ([s, t] * 500000) | min(case_sensitive=true) | length }}",
           "{{ ([s] * 1000000) is eq([u] * 1000000) }}",
           "{{ ([s, t] * 500000) | select('eq', t) | list | length }}",
           "{{ ([s] * 1000000).index(t) }}",
           "{{ ([s] * 1000000).count(t) }}",
           "{% for x in [s] * 1000000 %}{% if x in {'k': 1} %}{% endif %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% if x == t %}{% endif %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% if x < t %}{% endif %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% if x.startswith(t) %}{% endif %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% if x.endswith(t) %}{% endif %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% if 'b' in x %}{% endif %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = x[-1] %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = x[1:] %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = x.split('b') %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = x.find(t) %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = x.rfind('b') %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = x.strip('b') %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = x.isdigit() %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = '%s' % x %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = '{}'.format(x) %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = x ~ '' %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = x + '' %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = {x: 1} %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{% set y = x | int %}{% endfor %}",
           "{% for x in [s] * 1000000 %}{{ '' if x else x }}{% endfor %}{% for x in [s] * 1000000 %}{{ x[:0] ~ x | wordcount }}{% endfor %}",
           "{{ ([s] * 1000000) | map('length') | sum }}",
           "{{ ([s] * 1000000) | map('upper') | list | length }}",
           "{{ ([s] * 1000000) | map('trim') | list | length }}",
           "{{ ([s] * 1000000) | map('string') | list | length }}",
           "{{ ([s] * 1000000) | map('replace', 'a', 'b') | list | length }}",
           "{{ ([s] * 1000000) | map('tojson') | list | length }}",
           "{{ ([s] * 1000000) | map('escape') | list | length }}",
           "{{ ([s] * 1000000) | map('reverse') | list | length }}",
           "{{ ([s] * 1000000) | map('indent') | list | length }}",
           "{{ ([s] * 1000000) | map('first') | map('format') | list | length }}",
           "{{ ([s] * 1000000) | select('lower') | list | length }}",
           "{{ ([{'k': s}] * 1000000) | map(attribute=s) | list | length }}",
           "{{ ([s] * 1000000) | join(t) | length }}",
       }) {
    const auto start = Clock::now();
    const std::string e = render_error(body, vars, limits);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 30.0) << body;
    EXPECT_NE(e.find("the template touches more than 67108864 bytes"), std::string::npos) << body << ": " << e;
  }
}

TEST(JinjaLimitsTest, OutputAndListSizesAreCheckedBeforeAllocating) {
  // Each of these would make gigabytes before a check after the fact.
  EXPECT_NE(error_within_bound("{{ range(10) | batch(10**8, 'x') | list }}").find("a list grows past 1000000 items"),
            std::string::npos);
  EXPECT_TRUE(hits_limit(error_within_bound("{{ ('a' * 60000000) | replace('a', 'a' * 1000) | length }}")));
  EXPECT_TRUE(hits_limit(error_within_bound("{{ ('a' * 60000000).replace('a', 'a' * 1000) | length }}")));
  EXPECT_NE(error_within_bound("{{ ('ab' * 20000000) | replace('b', 'b' * 1000, 100000) | length }}").find("grows past 67108864 bytes"),
            std::string::npos);
  for (const char* source : {
           "{{ 'x' | indent(10**9) }}",
           "{{ [1] | tojson(indent=10**9) }}",
           "{{ ('\\x01' * 20000000) | tojson | length }}",
           "{{ ['\\x01' * 20000000] | string | length }}",
           "{{ ('<' * 20000000) | escape | length }}",
           "{{ ('a\\n' * 1000) | indent('x' * 100000) | length }}",
           "{{ ([['x' * 1000000]] * 100) | tojson(indent=2) | length }}",
           "{{ (['a' * 1000000] * 100) | join(',') | length }}",
           "{{ ('{0}' * 100).format('a' * 1000000) }}",
           "{{ ('%s' * 100) % (('a' * 1000000,) * 100) }}",
       })
    EXPECT_NE(error_within_bound(source).find("grows past 67108864 bytes"), std::string::npos) << source;
  for (const char* source : {"{{ ('a' * 6000000).split('a') | length }}", "{{ ('a\\n' * 2000000).splitlines() | length }}",
                             "{{ ('ab' * 600000) | list | length }}"})
    EXPECT_NE(error_within_bound(source).find("a list grows past 1000000 items"), std::string::npos) << source;
}

TEST(JinjaLimitsTest, RepeatingNothingAnyNumberOfTimesIsImmediate) {
  // An empty string or list repeated 10^18 times looped 10^18 times (found auditing `*`).
  const auto start = Clock::now();
  EXPECT_EQ(render("{{ ('' * 1000000000000000000) | length }}|{{ ([] * 1000000000000000000) | length }}|{{ 'ab' * 3 }}"),
            "0|0|ababab");
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 30.0);
}

TEST(JinjaLimitsTest, HugeStepRangesAreCountedNotIterated) {
  EXPECT_EQ(render("{{ range(0, 9223372036854775807, 4611686018427387904) | list }}"), "[0, 4611686018427387904]");
  EXPECT_EQ(render("{{ range(-9223372036854775807 - 1, 9223372036854775807, 4611686018427387904) | length }}"), "4");
  EXPECT_EQ(render("{{ range(9223372036854775807, -9223372036854775807 - 1, -4611686018427387904) | list }}"),
            "[9223372036854775807, 4611686018427387903, -1, -4611686018427387905]");
  EXPECT_EQ(render("{{ range(0, big, 4611686018427387904) | list }}", {{"big", INT64_MAX}}), "[0, 4611686018427387904]");
  EXPECT_EQ(render("{{ range(0, 10, 9223372036854775807) | list }}{{ range(5, 0, -9223372036854775807) | list }}"), "[0][5]");
  // Issue 32's reproducers exactly: 2**63 is an integer past 64 bits, as in jinja2.
  EXPECT_EQ(render("{{ range(0, 2**63-1, 2**62)|list }}"), "[0, 4611686018427387904]");
  EXPECT_EQ(render("{{ range(-2**63, 2**63-1, 2**62)|length }}"), "4");
  EXPECT_NE(error_within_bound("{{ range(-9223372036854775807 - 1, 9223372036854775807, 2) | length }}").find("range() of more than"),
            std::string::npos);
}

TEST(JinjaLimitsTest, ABigLegitimateConversationRenders) {
  // 8 MiB of messages (the server's default --max-body) through the real templates: well inside the budget.
  std::string big(2 << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 97) big[i] = ' ';
  ChatInput input;
  input.messages = OJson::array({{{"role", "system"}, {"content", big}},
                                 {{"role", "user"}, {"content", big}},
                                 {{"role", "assistant"}, {"content", "<think>" + big + "</think>" + big}},
                                 {{"role", "user"}, {"content", "and?"}}});
  for (const char* model : {"llama3", "qwen3"}) {
    const std::optional<ChatTemplate> tmpl = ChatTemplate::from_model(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/" + model);
    ASSERT_TRUE(tmpl);
    const std::string out = tmpl->render(input);
    EXPECT_GT(out.size(), 3 * big.size()) << model;
    EXPECT_NE(out.find("and?"), std::string::npos) << model;
  }
}

}  // namespace
}  // namespace plexus::testing
