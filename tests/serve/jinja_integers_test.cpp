// The Jinja engine's integers past 64 bits (issue 32 item 9): Python's unbounded ints, as
// jinja2 computes with them, up to plexus's 4096-bit limit. Expected values are Python's own
// (python3 -c "..."), with jinja2's precedence (`-2**63` is (-2)**63, `2**64 is even` is
// 2 ** (64 is even), `**` groups left to right).
#include <gtest/gtest.h>

#include <chrono>

#include "jinja_util.h"
#include "serve/jinja/big_int.h"

namespace plexus::testing {
namespace {

using OJson = nlohmann::ordered_json;
using jinja::BigInt;

TEST(JinjaIntegersTest, Issue32HugeStepRangesGiveJinja2Results) {
  // Issue 32's reproducers, exactly: 2**63 and -2**63 are integers past 64 bits in jinja2.
  EXPECT_EQ(render("{{ range(0, 2**63-1, 2**62)|list }}"), "[0, 4611686018427387904]");
  EXPECT_EQ(render("{{ range(-2**63, 2**63-1, 2**62)|length }}"), "4");
  EXPECT_EQ(render("{{ range(0, 2**100, 2**99) | list }}"), "[0, 633825300114114700748351602688]");
  EXPECT_EQ(render("{{ range(2**100, 2**100 + 3) | list }}"),
            "[1267650600228229401496703205376, 1267650600228229401496703205377, 1267650600228229401496703205378]");
  EXPECT_EQ(render("{{ range(2**64, 0, -(2**63)) | list }}"), "[18446744073709551616, 9223372036854775808]");
}

TEST(JinjaIntegersTest, PowersOfTheSmallestInt64AsPython) {
  // (-2)**63 is INT64_MIN, whose absolute value no int64 holds (found in review: std::abs of it).
  EXPECT_EQ(render("{{ (-2**63)**2 }}|{{ (-2**63)**3 }}|{{ (-2**63)**0 }}|{{ (-2**63)**1 }}"),
            "85070591730234615865843651857942052864|-784637716923335095479473677900958302012794430558004314112|1"
            "|-9223372036854775808");
}

TEST(JinjaIntegersTest, PrintsAndComputesPast64BitsAsPython) {
  EXPECT_EQ(render("{{ 2**63-1 }}|{{ -2**63 }}|{{ 2**64 // 2 }}|{{ 2**100 }}|{{ 9223372036854775807 + 1 }}"),
            "9223372036854775807|-9223372036854775808|9223372036854775808|1267650600228229401496703205376|9223372036854775808");
  EXPECT_EQ(render("{{ -(-2**63) }}|{{ (-2**63) // -1 }}|{{ (-2**63) | abs }}|{{ 2 ** 10**18 }}|{{ 99999999999999999999999 }}"),
            "9223372036854775808|9223372036854775808|9223372036854775808|1532495540865888858358347027150309183618739122183602176"
            "|99999999999999999999999");
  EXPECT_EQ(render("{{ (2**64) % (2**32+1) }}|{{ -(2**100) // 7 }}|{{ -(2**100) % 7 }}|{{ 2**64 - 2**64 }}|{{ (2**64) * 0 }}"),
            "1|-181092942889747057356671886483|5|0|0");
  EXPECT_EQ(render("{% set a = 2**4000 + 12345 %}{% set b = 2**1500 - 3 %}{{ a // b % 10**12 }}|{{ a % b % 10**12 }}"),
            "236493717504|851012636729");
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in range(200) %}{% set ns.x = ns.x * 3 %}{% endfor %}{{ ns.x }}"),
            "265613988875874769338781322035779626829233452653394495974574961739092490901302182994384699044001");
  // True division rounds the exact quotient once, as Python's int / int.
  EXPECT_EQ(render("{{ 2**1100 / 2**1000 }}|{{ 9007199254740993 / 3 }}|{{ 10**20 / 3 }}|{{ (2**53+1) * 2**100 / 3 }}"
                   "|{{ 2**2000 / 3**1000 }}|{{ 1 / 2**1100 }}|{{ 3 / 2**1074 }}|{{ 2**1100 / (2**1100 * 7) }}|{{ 0 / -(2**100) }}"),
            "1.2676506002282294e+30|3002399751580331.0|3.333333333333333e+19|3.8059938472158934e+45|8.68433580377441e+124"
            "|0.0|1.5e-323|0.14285714285714285|-0.0");
  EXPECT_NE(render_error("{{ 2**2000 / 3 }}").find("integer division result too large for a float"), std::string::npos);
}

TEST(JinjaIntegersTest, ComparesAndHashesExactlyAsPython) {
  EXPECT_EQ(render("{{ 9007199254740993 == 9007199254740992.0 }}|{{ 9007199254740993 > 9007199254740992.0 }}"
                   "|{{ 2**64 == 2.0**64 }}|{{ 1e300 < 10**300 }}|{{ 10**400 > 1e308 }}|{{ 2**63 > 9.2e18 }}|{{ -(2**70) < -1e21 }}"),
            "False|True|True|False|True|True|True");
  EXPECT_EQ(render("{{ [2**64, 1, 2**70, 3.5, -(2**65)] | sort }}|{{ [2**64, 1] | max }}|{{ 2**64 in [2.0**64] }}"),
            "[-36893488147419103232, 1, 3.5, 18446744073709551616, 1180591620717411303424]|18446744073709551616|True");
  EXPECT_EQ(render("{{ [2**64, 2.0**64, 1, 1.0, true, 2**64 + 1] | unique | list }}"),
            "[18446744073709551616, 1, 18446744073709551617]");
  EXPECT_EQ(render("{{ (-2**63) == -9223372036854775808.0 }}|{{ [-2**63, -9223372036854775808.0] | unique | list }}"),
            "True|[-9223372036854775808]");
}

TEST(JinjaIntegersTest, FiltersTestsAndFormattingTakeBigIntegers) {
  EXPECT_EQ(render("{{ '99999999999999999999' | int }}|{{ '-0x_ffffffffffffffffffff' | int(base=0) }}|{{ 1e20 | int }}"
                   "|{{ (2**64) | int }}|{{ x | int }}",
                   {{"x", "123456789012345678901234567890"}}),
            "99999999999999999999|-1208925819614629174706175|100000000000000000000|18446744073709551616"
            "|123456789012345678901234567890");
  EXPECT_EQ(render("{{ 1e300 | int }}"),
            "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883"
            "878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640"
            "880074652742780142494579258788820056842838115669472196386865459400540160");
  EXPECT_EQ(render("{{ {'a': 2**64, 'b': [-(2**64)]} | tojson }}|{{ (2**64) | string }}|{{ [2**64] }}|{{ (2**64) ~ '' }}"),
            "{\"a\": 18446744073709551616, \"b\": [-18446744073709551616]}|18446744073709551616|[18446744073709551616]"
            "|18446744073709551616");
  EXPECT_EQ(render("{{ x }}|{{ x + 1 }}", {{"x", UINT64_MAX}}), "18446744073709551615|18446744073709551616");
  // float() rounds to nearest, ties to even, as Python's.
  EXPECT_EQ(render("{{ ((2**53+1) * 2**900) | float }}|{{ ((2**53+3) * 2**900) | float }}|{{ (2**1024 - 2**971) | float }}"
                   "|{{ (2**64 + 2**11) | float }}|{{ (2**64 + 2**11 + 1) | float }}|{{ (2**64) * 0.5 }}"),
            "7.61352657140625e+286|7.613526571406253e+286|1.7976931348623157e+308|1.8446744073709552e+19"
            "|1.8446744073709556e+19|9.223372036854776e+18");
  EXPECT_NE(render_error("{{ (2**1024) | float }}").find("int too large to convert to float"), std::string::npos);
  EXPECT_NE(render_error("{{ 2**1024 + 1.0 }}").find("int too large to convert to float"), std::string::npos);
  EXPECT_EQ(render("{{ [2**64, 2**64] | sum }}|{{ [1, 2**64] | sum(start=0.5) }}|{{ 5 | round }}|{{ 1250 | round(-2) }}"
                   "|{{ 12345678901234567890123 | round(-20) }}|{{ -25 | round(-1) }}|{{ 35 | round(-1) }}|{{ 2.5 | round }}"),
            "36893488147419103232|1.8446744073709552e+19|5|1200|12300000000000000000000|-20|40|2.0");
  EXPECT_EQ(render("{{ (2**64) is even }}|{{ (2**64 + 1) is odd }}|{{ (2**64) is divisibleby(2**32) }}|{{ (2**64) is divisibleby(3) }}"
                   "|{{ 2**64 is even }}"),
            "True|True|True|False|2");
  EXPECT_EQ(render("{{ '%d|%x|%X|%#o|%030d|%e|%+d' % (2**64, 2**64-1, 2**70, 2**70, -(2**64), 2**100, 2**64) }}"),
            "18446744073709551616|ffffffffffffffff|400000000000000000|0o200000000000000000000000|-00000000018446744073709551616"
            "|1.267651e+30|+18446744073709551616");
  EXPECT_NE(render_error("{{ '%c' % 2**100 }}").find("%c arg not in range(0x110000)"), std::string::npos);
}

TEST(JinjaIntegersTest, IndexesAndCountsPast64BitsAreClearNeverWrapped) {
  // An index past 64 bits is out of range (jinja2: undefined); slices clamp, as Python's.
  EXPECT_EQ(render("{{ [1, 2][2**64] is undefined }}|{{ 'ab'[-(2**64)] is undefined }}|{{ [1, 2].99999999999999999999 is undefined }}"
                   "|{{ [1, 2][2**64 - 2**64 + 1] }}"),
            "True|True|True|2");
  EXPECT_EQ(render("{{ [1,2,3][2**64:] }}{{ [1,2,3][-(2**64):] }}{{ [1,2,3][::2**64] }}{{ [1,2,3][::-(2**64)] }}{{ 'abc'[:2**70] }}"),
            "[][1, 2, 3][1][3]abc");
  // Counts Python takes as machine sizes: its OverflowError, as a clear error.
  EXPECT_NE(render_error("{{ 'a' * 2**64 }}").find("cannot fit 'int' into an index-sized integer"), std::string::npos);
  EXPECT_NE(render_error("{{ '' * -(2**65) }}").find("cannot fit 'int' into an index-sized integer"), std::string::npos);
  EXPECT_NE(render_error("{{ 'a b'.split(' ', 2**64) }}").find("split's maxsplit 18446744073709551616 is too large"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 'x' | indent(2**64) }}").find("indent width 18446744073709551616 is too large"), std::string::npos);
  EXPECT_EQ(render("{{ range(5) | batch(2**64) | list }}"), "[[0, 1, 2, 3, 4]]");
  EXPECT_NE(render_error("{{ range(2**64) | length }}").find("range() of more than 1000000 items"), std::string::npos);
  EXPECT_NE(render_error("{{ range(-(2**4000), 2**4000, 2**3000) | length }}").find("range() of more than"), std::string::npos);
}

TEST(JinjaIntegersTest, TheSizeLimitIsAQuickError) {
  EXPECT_EQ(render("{{ (2**4095) > 0 }}|{{ (10**1233) % 7 }}|{{ (2**4095) // 3 % 1000 }}"), "True|6|722");
  EXPECT_NE(render_error("{{ 2 ** 4096 }}").find("integer overflow in 2 ** 4096 (past 4096 bits, plexus's limit)"), std::string::npos);
  EXPECT_NE(render_error("{{ 2 ** (2**100) }}").find("past 4096 bits"), std::string::npos);
  EXPECT_NE(render_error("{{ (2**4095) * 2 }}").find("past 4096 bits"), std::string::npos);
  EXPECT_NE(render_error("{{ 1" + std::string(1300, '0') + " }}").find("is too large (the limit is 4096 bits)"), std::string::npos);
  EXPECT_NE(render_error("{{ x | int }}", {{"x", std::string(5000, '7')}}).find("past 4096-bit integers"), std::string::npos);
  EXPECT_EQ(render("{{ (-1) ** (2**100) }}|{{ 0 ** (2**100) }}|{{ 1 ** (2**100) }}|{{ (-1) ** (2**100 + 1) }}"), "1|0|1|-1");
  // Big-integer work counts against the byte budget: a loop of the largest divisions stops.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(render_error("{% set a = 2**4095 %}{% set b = 2**2000 + 1 %}{% for i in range(1000000) %}{% set q = a // b %}{% endfor %}")
                .find("integer arithmetic: the template touches more than"),
            std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
}

// BigInt itself, against Python's results.
TEST(BigIntTest, ArithmeticAndTextAsPython) {
  const BigInt a = BigInt::from_digits("123456789012345678901234567890123456789", 10);
  const BigInt b = BigInt::from_digits("987654321987654321", 10);
  BigInt q, r;
  floor_divmod(-a, b, &q, &r);
  EXPECT_EQ(q.to_string(), "-124999998748437501154");  // -a // b
  EXPECT_EQ(r.to_string(), "844908557067129645");      // -a % b
  floor_divmod(a, -b, &q, &r);
  EXPECT_EQ(q.to_string(), "-124999998748437501154");
  EXPECT_EQ(r.to_string(), "-844908557067129645");
  EXPECT_EQ((a * b).to_string(), "121932631246761163237311385323731138532360920590112635269");
  EXPECT_EQ((a - a).to_string(), "0");
  EXPECT_EQ((b - a).to_string(), "-123456789012345678900246913568135802468");
  EXPECT_EQ(a.to_string(16), "5ce0e9a56015fec5aadfa328ae398115");
  EXPECT_EQ(BigInt::from_digits("zz", 36).to_string(2), "10100001111");
  EXPECT_EQ(BigInt(INT64_MIN).to_string(), "-9223372036854775808");
  EXPECT_EQ(*BigInt(INT64_MIN).to_int64(), INT64_MIN);
  EXPECT_FALSE((-BigInt(INT64_MIN)).to_int64());
  EXPECT_EQ(BigInt::from_double(-1e20).to_string(), "-100000000000000000000");
  EXPECT_EQ(BigInt::from_double(4.75).to_string(), "4");
  EXPECT_EQ(BigInt(1).shifted_left(100).to_string(), "1267650600228229401496703205376");
  EXPECT_EQ(BigInt(3).shifted_left(64).bit_length(), 66u);
}

}  // namespace
}  // namespace plexus::testing
