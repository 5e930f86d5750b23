// Command-line parsing: values, defaults, flags and the errors people see.
#include "core/args.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace plexus {

Args make_args() {
  Args a("demo", "a demo command");
  a.positional("MODEL", "model directory")
      .option("--max-tokens", "N", "tokens to generate", "16")
      .option("--seed", "S", "random seed")
      .flag("--json", "print JSON");
  return a;
}

TEST(Args, ParsesValuesDefaultsAndFlags) {
  Args a = make_args();
  ASSERT_TRUE(a.parse(std::vector<std::string>{"m", "--seed=7", "--json"}));
  EXPECT_EQ(a.get("MODEL"), "m");
  EXPECT_EQ(a.get_int("--max-tokens"), 16);
  EXPECT_EQ(a.get_int("--seed"), 7);
  EXPECT_TRUE(a.get_flag("--json"));
}

TEST(Args, ErrorsNameTheArgument) {
  {
    Args a = make_args();
    EXPECT_THROW(a.parse(std::vector<std::string>{"m", "--bogus"}), InputError);
  }
  {
    Args a = make_args();
    EXPECT_THROW(a.parse(std::vector<std::string>{}), InputError);
  }
  {
    Args a = make_args();
    EXPECT_THROW(a.parse(std::vector<std::string>{"m", "--seed"}), InputError);
  }
  {
    Args a = make_args();
    a.parse(std::vector<std::string>{"m", "--max-tokens", "x"});
    try {
      a.get_int("--max-tokens");
      FAIL();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--max-tokens"), std::string::npos);
    }
  }
}

TEST(Args, IntList) {
  EXPECT_EQ(parse_int_list("1, 2,3", "--ids"), (std::vector<long long>{1, 2, 3}));
  EXPECT_THROW(parse_int_list("1,,2", "--ids"), InputError);
  EXPECT_THROW(parse_int_list("a", "--ids"), InputError);
}

}  // namespace plexus
