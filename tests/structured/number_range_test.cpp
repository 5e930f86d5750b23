// Integer and number ranges: every integer inside a range is accepted and none outside, checked
// against plain arithmetic; bounded numbers are only ever inside their bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "structured/byte_matcher.h"
#include "structured/grammar_parser.h"
#include "structured/number_range.h"

namespace plexus::structured {
namespace {

TEST(IntegerRange, ExactlyTheIntegersInside) {
  std::mt19937_64 rng(36);
  const std::vector<std::pair<std::int64_t, std::int64_t>> fixed = {{0, 0}, {-5, 5}, {7, 123}, {-1000, -1}, {99, 1001}, {-37, 240}, {0, 9}, {10, 99}};
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges = fixed;
  for (int i = 0; i < 20; ++i) {
    std::int64_t a = static_cast<std::int64_t>(rng() % 4001) - 2000, b = static_cast<std::int64_t>(rng() % 4001) - 2000;
    ranges.emplace_back(std::min(a, b), std::max(a, b));
  }
  for (const auto& [lo, hi] : ranges) {
    const Grammar g = parse_grammar("root ::= " + integer_range_grammar(lo, hi));
    for (std::int64_t v = -2100; v <= 2100; ++v) {
      EXPECT_EQ(grammar_accepts(g, std::to_string(v)), v >= lo && v <= hi) << "[" << lo << ", " << hi << "] " << v;
    }
    EXPECT_FALSE(grammar_accepts(g, "-0"));
    EXPECT_FALSE(grammar_accepts(g, "00"));
  }
}

TEST(IntegerRange, LargeBounds) {
  const Grammar g = parse_grammar("root ::= " + integer_range_grammar(-999999999999999, 123456789012345));
  EXPECT_TRUE(grammar_accepts(g, "123456789012345"));
  EXPECT_FALSE(grammar_accepts(g, "123456789012346"));
  EXPECT_TRUE(grammar_accepts(g, "-999999999999999"));
  EXPECT_FALSE(grammar_accepts(g, "-1000000000000000"));
}

// Every string a bounded-number grammar accepts (sampled by random walks) lies inside.
TEST(NumberRange, EveryAcceptedNumberIsInside) {
  std::mt19937_64 rng(7);
  const std::vector<NumberBounds> cases = {
      {-5.5, 20.25, false, false}, {0.2, 0.7, false, false}, {0, 1, true, true}, {-1, 0, false, true},
      {3, 3, false, false},        {-2.5, -1.5, false, false}, {-INFINITY, 10, false, true}, {100, INFINITY, true, false}};
  for (const NumberBounds& b : cases) {
    const std::string expr = number_range_grammar(b);
    ASSERT_FALSE(expr.empty()) << b.lo << " " << b.hi;
    const Grammar g = parse_grammar("root ::= " + expr);
    int complete = 0;
    for (int walk = 0; walk < 300; ++walk) {
      ByteMatcher m(g);
      std::string text;
      for (int i = 0; i < 24; ++i) {
        if (m.complete() && (rng() % 4 == 0 || !m.can_continue())) break;
        std::vector<char> next;
        for (char c : std::string("-.0123456789")) {
          ByteMatcher probe = m;
          if (probe.advance(static_cast<std::uint8_t>(c))) next.push_back(c);
        }
        if (next.empty()) break;
        const char c = next[rng() % next.size()];
        ASSERT_TRUE(m.advance(static_cast<std::uint8_t>(c)));
        text += c;
      }
      if (!m.complete()) continue;
      ++complete;
      const double v = std::strtod(text.c_str(), nullptr);
      EXPECT_TRUE(b.lo_exclusive ? v > b.lo : v >= b.lo) << text << " below " << b.lo;
      EXPECT_TRUE(b.hi_exclusive ? v < b.hi : v <= b.hi) << text << " above " << b.hi;
    }
    EXPECT_GT(complete, 50) << b.lo << " " << b.hi;
  }
}

}  // namespace
}  // namespace plexus::structured
