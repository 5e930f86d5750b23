// The quoting every generated file relies on, read back by independent readers: shell words by
// real bash, YAML double-quoted scalars by yaml-cpp, one-line comment text; and the image
// reference grammar on accepted and refused references.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "deploy/escape.h"
#include "deploy/image_reference.h"
#include "deploy/yaml_text.h"
#include "test_util.h"

namespace plexus::deploy {
namespace {

const std::vector<std::string> kHostile = {
    "plain", "", "a b", "it's", "\"q\"", "\\", "$(touch x)", "`x`", "${HOME}", "$HOME", "#c", "a\nb", "\r\n", "\t",
    "x\x7fy", "\x01\x1b[31m", "\xc2\x85", "\xc2\x9b", "\u2028\u2029", "\ufeff", "é✓🙂", "-rf", "*", "{a,b}", "~", "!x",
    "'\\''", "\\x41", "$'x'", std::string(300, 'a')};

// deploy::shell_quote named in full: other deploy test files bring plexus::testing::shell_quote
// into this namespace, and the unity build puts them in one translation unit with this one.
TEST(ShellQuote, BashReadsEveryWordBackExactly) {
  plexus::testing::TempDir dir("deploy_escape");
  std::string script = "printf '%s\\0'";
  for (const std::string& w : kHostile) script += " " + deploy::shell_quote(w);
  std::ofstream(dir / "words.sh") << script << "\n";
  const auto r = plexus::testing::run_command("bash " + plexus::testing::shell_quote(dir / "words.sh"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string expected;
  for (const std::string& w : kHostile) expected += w + std::string(1, '\0');
  EXPECT_EQ(r.out, expected);
  // The script is printable text: controls, C1 and U+2028 went into $'...' as \xHH.
  EXPECT_EQ(deploy::shell_quote("a\nb"), "$'a\\x0Ab'");
  EXPECT_EQ(deploy::shell_quote("x\x7fy'"), "$'x\\x7Fy\\''");
  EXPECT_EQ(deploy::shell_quote("a\u2028"), "$'a\\xE2\\x80\\xA8'");
  EXPECT_EQ(deploy::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(deploy::shell_quote("/models/tiny-llama"), "/models/tiny-llama");
}

TEST(YamlDoubleQuoted, YamlCppReadsEveryStringBackExactly) {
  for (const std::string& s : kHostile) {
    SCOPED_TRACE(one_line(s));
    const std::string text = to_yaml(YamlDoc{{"v", s}, {"list", YamlDoc::array({s})}});
    for (char c : text) EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << text;
    const YAML::Node n = YAML::Load(text);
    EXPECT_EQ(n["v"].as<std::string>(), s);
    EXPECT_EQ(n["list"][0].as<std::string>(), s);
  }
  EXPECT_EQ(yaml_double_quoted("a\u2028b\xc2\x85\x7f\n\"\\🙂"), "\"a\\u2028b\\x85\\x7F\\n\\\"\\\\🙂\"");
  EXPECT_THROW(yaml_double_quoted("\xff"), InputError);
}

TEST(OneLine, EscapesWhatWouldBreakALine) {
  EXPECT_EQ(one_line("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(one_line("x\x7f\xc2\x85\u2028\ufeffé"), "x\\x7F\\x85\\u2028\\uFEFFé");
  EXPECT_EQ(one_line("bad\xff"), "bad\\xFF");
  EXPECT_EQ(one_line("× ✓ 🙂"), "× ✓ 🙂");
}

TEST(CheckText, RefusesInvalidUtf8AndNul) {
  EXPECT_NO_THROW(check_text("é\n\x7f", "MODEL"));
  EXPECT_THROW(check_text("\xc0\x80", "MODEL"), InputError);
  EXPECT_THROW(check_text(std::string("a\0b", 3), "--env A"), InputError);
  try {
    check_text("m\xff", "--env A");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--env A 'm\\xFF' is not valid UTF-8"), std::string::npos) << e.what();
  }
}

TEST(ImageReference, TheGrammarsAcceptedAndRefusedReferences) {
  for (const char* ok : {"plexus", "plexus:latest", "vllm/vllm-openai:v0.8.5", "ghcr.io/huggingface/text-generation-inference:3.0",
                         "localhost:5000/a/b", "registry.example.com:443/team/x_y__z.w-v---u:Tag_1.0-rc",
                         "[::1]:5000/x", "x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                         "x:1@sha512+b64.v-x_y:0123456789abcdef0123456789abcdef", "Upper.Example.COM/x", "a/b/c/d/e"}) {
    EXPECT_EQ(image_reference_problem(ok), "") << ok;
  }
  for (const char* bad : {"", "my model", "Upper", "team/Model", "a:b:c", "-x", "x-", "a//b", "/a", "a/", "x:", ":t", "x:-t",
                          "a__-b", "a..b", "x@sha256:abc", "x@256:0123456789abcdef0123456789abcdef", "x@sha256",
                          "[::1/x", "host:port/x", "a\nb", "$(x)", "a b"}) {
    EXPECT_NE(image_reference_problem(bad), "") << bad;
  }
  EXPECT_NE(image_reference_problem("x:" + std::string(129, 't')), "");
  EXPECT_EQ(image_reference_problem("x:" + std::string(128, 't')), "");
  EXPECT_NE(image_reference_problem(std::string(256, 'a')), "");
  EXPECT_EQ(image_reference_problem(std::string(255, 'a')), "");
  try {
    check_image_reference("my model");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--image 'my model' is not an image reference"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("' ' at offset 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace plexus::deploy
