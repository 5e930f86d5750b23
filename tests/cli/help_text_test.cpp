// `plexus --help` and every command's --help as a newcomer reads them: lines wrapped at 100
// columns, the command list in one column, and only choices that the command accepts.
#include <gtest/gtest.h>

#include <sstream>

#include "cli_run.h"

namespace plexus::testing {
namespace {

const char* const kCommands[] = {"generate", "batch",    "serve",     "deploy",        "train",  "perplexity",
                                 "quantize", "make-model", "version", "estimate",      "plan",   "calibrate",
                                 "tokenize", "chat-template", "detect", "doctor", "monitor", "bench"};

std::size_t columns(const std::string& line) {
  std::size_t n = 0;
  for (char c : line) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The option's help text: the lines after "  NAME ..." up to the next option.
std::string option_help(const std::string& help, const std::string& name) {
  const std::size_t at = help.find("\n  " + name + " ");
  if (at == std::string::npos) return "";
  const std::size_t text = help.find('\n', at + 1);
  const std::size_t next = help.find("\n  --", text);
  return help.substr(text, next - text);
}

TEST(HelpText, EveryLineFitsIn100Columns) {
  std::vector<std::string> pages{"--help"};
  for (const char* c : kCommands) pages.push_back(std::string(c) + " --help");
  pages.push_back("bench compare --help");
  for (const std::string& page : pages) {
    const ProcessResult r = run_no_gpu(page);
    ASSERT_EQ(r.exit_code, 0) << page << ": " << r.err;
    for (const std::string& line : lines_of(r.out)) EXPECT_LE(columns(line), 100u) << "plexus " << page << ":\n" << line;
  }
}

TEST(HelpText, AWrappedOptionHelpHangsUnderItsFirstLine) {
  const ProcessResult r = run_no_gpu("generate --help");
  const std::string wait = option_help(r.out, "--wait");
  ASSERT_NE(wait.find("passive"), std::string::npos) << r.out;
  const std::vector<std::string> lines = lines_of(wait.substr(1));
  ASSERT_GE(lines.size(), 2u) << wait;  // long enough to be wrapped
  for (const std::string& line : lines) EXPECT_EQ(line.rfind("      ", 0), 0u) << line;
}

TEST(HelpText, TheCommandListIsOneColumn) {
  const ProcessResult r = run_no_gpu("--help");
  ASSERT_EQ(r.exit_code, 0);
  std::size_t summary_column = 0;
  for (const char* c : kCommands) {
    const std::size_t at = r.out.find("\n  " + std::string(c) + " ");
    ASSERT_NE(at, std::string::npos) << c << " missing from\n" << r.out;
    const std::size_t text = r.out.find_first_not_of(' ', at + 3 + std::string(c).size());
    const std::size_t column = text - (at + 1);
    if (summary_column == 0) summary_column = column;
    EXPECT_EQ(column, summary_column) << c << " in\n" << r.out;
  }
}

TEST(HelpText, RunCommandsOfferOnlyTheDtypesARunTakes) {
  for (const char* c : {"generate", "serve", "perplexity", "batch"}) {
    const std::string dtype = option_help(run_no_gpu(std::string(c) + " --help").out, "--dtype");
    ASSERT_FALSE(dtype.empty()) << c;
    EXPECT_EQ(dtype.find("int8 (q8_0"), std::string::npos) << c << ":" << dtype;
    EXPECT_EQ(dtype.find("int4 (q4_k"), std::string::npos) << c << ":" << dtype;
    EXPECT_NE(dtype.find("checkpoint's own dtype"), std::string::npos) << c << ":" << dtype;
  }
  // plan sizes quantised projections without running: it offers them.
  EXPECT_NE(option_help(run_no_gpu("plan --help").out, "--dtype").find("int8 (q8_0 projections)"), std::string::npos);
}

TEST(HelpText, StrategyOffersFastest) {
  for (const char* c : {"plan", "generate", "serve"}) {
    const std::string strategy = option_help(run_no_gpu(std::string(c) + " --help").out, "--strategy");
    EXPECT_NE(strategy.find("fastest"), std::string::npos) << c << ":" << strategy;
  }
}

}  // namespace
}  // namespace plexus::testing
