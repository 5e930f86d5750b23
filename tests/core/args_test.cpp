// Command-line parsing: values, defaults, flags and the errors people see.
#include "core/args.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/nearest_name.h"

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

std::string usage_error(Args a, const std::vector<std::string>& argv) {
  try {
    a.parse(argv);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Args, OptionGivenTwiceIsAnErrorUnlessRepeatable) {
  const std::string twice = usage_error(make_args(), {"m", "--seed", "1", "--seed=3"});
  EXPECT_NE(twice.find("'--seed' given twice ('1', then '3')"), std::string::npos) << twice;
  Args a("demo", "");
  a.repeatable_option("--set", "K=V", "override");
  ASSERT_TRUE(a.parse(std::vector<std::string>{"--set", "a=1", "--set", "b=2"}));
  EXPECT_EQ(a.get_all("--set"), (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_NE(a.help().find("(repeatable)"), std::string::npos);
}

// An old spelling is the option itself, read under its name, never shown in --help nor suggested.
TEST(Args, OldSpellingsAreSilentAliases) {
  auto make = [] {
    Args a("demo", "");
    a.option("--max-sequences", "N", "sequences in flight", "1").old_name("--batch").old_name("--batch-size");
    a.option("--legacy", "X", "an old flag the command translates").hidden();
    return a;
  };
  Args a = make();
  ASSERT_TRUE(a.parse(std::vector<std::string>{"--batch-size", "4", "--legacy", "y"}));
  EXPECT_EQ(a.get_int("--max-sequences"), 4);
  EXPECT_TRUE(a.given("--max-sequences"));
  EXPECT_EQ(a.get("--legacy"), "y");
  const std::string help = a.help();
  EXPECT_NE(help.find("--max-sequences N"), std::string::npos) << help;
  for (const char* absent : {"--batch", "--legacy"}) EXPECT_EQ(help.find(absent), std::string::npos) << absent << "\n" << help;
  const std::string twice = usage_error(make(), {"--batch", "2", "--max-sequences", "3"});
  EXPECT_NE(twice.find("'--max-sequences' (as --batch, then as --max-sequences) given twice ('2', then '3')"), std::string::npos) << twice;
  EXPECT_EQ(usage_error(make(), {"--legaci", "1"}).find("did you mean"), std::string::npos);
}

TEST(WrapText, BreaksLongLinesAtSpacesWithAHangingIndent) {
  EXPECT_EQ(wrap_text("short line", 20), "short line");
  EXPECT_EQ(wrap_text("      one two three four five six", 20), "      one two three\n      four five six");
  // A table row continues under its text; a word longer than the width stays whole.
  EXPECT_EQ(wrap_text("  name    alpha beta gamma delta", 24), "  name    alpha beta\n          gamma delta");
  EXPECT_EQ(wrap_text("abcdefghijklmnopqrstuvwxyz end", 10), "abcdefghijklmnopqrstuvwxyz\nend");
  // Columns are characters, not bytes; explicit line breaks stay.
  EXPECT_EQ(wrap_text("×××× ×××× ××××\nnext", 10), "×××× ××××\n××××\nnext");
  EXPECT_EQ(wrap_text("a b c d e", 5, 2), "a b c\n  d e");
}

TEST(Args, UnknownOptionSuggestsTheNearest) {
  const std::string typo = usage_error(make_args(), {"m", "--max-tokns", "3"});
  EXPECT_NE(typo.find("did you mean '--max-tokens'?"), std::string::npos) << typo;
  const std::string far = usage_error(make_args(), {"m", "--frobnicate"});
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
}

TEST(Args, NumbersAreFiniteAndInRange) {
  Args a("demo", "");
  a.option("--t", "T", "").option("--k", "K", "").option("--s", "S", "");
  ASSERT_TRUE(a.parse(std::vector<std::string>{"--t", "inf", "--k", "-5", "--s", "bogus"}));
  EXPECT_THROW(a.get_double("--t"), InputError);
  try {
    a.get_int_in("--k", 0, 10);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--k must be between 0 and 10, got -5");
  }
  try {
    a.get_choice("--s", {"stages", "balanced", "auto"});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--s must be stages, balanced or auto, got 'bogus'");
  }
  Args b("demo", "");
  b.option("--t", "T", "");
  ASSERT_TRUE(b.parse(std::vector<std::string>{"--t=nan"}));
  EXPECT_THROW(b.get_double_in("--t", 0, 100), InputError);
}

TEST(Args, GivenIgnoresDefaults) {
  Args a = make_args();
  ASSERT_TRUE(a.parse(std::vector<std::string>{"m", "--seed", "2"}));
  EXPECT_TRUE(a.has("--max-tokens"));
  EXPECT_FALSE(a.given("--max-tokens"));
  EXPECT_TRUE(a.given("--seed"));
}

TEST(Args, DeviceListsHaveNoRepeats) {
  EXPECT_EQ(parse_device_list("0, 2,1", "--devices"), (std::vector<long long>{0, 2, 1}));
  try {
    parse_device_list("0,1,0", "--devices");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--devices: device 0 is listed twice"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_device_list("-1", "--devices"), InputError);
  EXPECT_THROW(parse_device_list("1024", "--devices"), InputError);
}

TEST(NearestName, EditDistanceAndSuggestions) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(nearest_name("genrate", {"generate", "batch", "plan"}), "generate");
  EXPECT_EQ(nearest_name("scenario.batch", {"scenario.batch_size", "scenario.seed"}), "scenario.batch_size");
  EXPECT_EQ(nearest_name("xyz", {"generate", "batch"}), "");
  EXPECT_EQ(did_you_mean("bech", {"bench"}), " (did you mean 'bench'?)");
  EXPECT_EQ(did_you_mean("zzzzzz", {"bench"}), "");
}

}  // namespace plexus
