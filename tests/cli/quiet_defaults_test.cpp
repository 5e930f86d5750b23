// What plexus says when the user said nothing: a default clamps silently, a value the user gave
// is noted when plexus changes it.
#include <gtest/gtest.h>

#include "cli_run.h"

namespace plexus::testing {
namespace {

class QuietDefaults : public ::testing::Test {
 protected:
  void SetUp() override { model_ = shell_quote(tiny_model(dir_)); }  // max_position_embeddings 2048
  TempDir dir_{"quiet_defaults"};
  std::string model_;
};

TEST_F(QuietDefaults, TheDefaultContextClampsSilentlyToTheModelsPositions) {
  const std::string note = "is beyond the model's 2048 positions";
  for (const std::string& c : {"plan " + model_, "plan " + model_ + " --json", "generate " + model_ + " --ids 1 --max-tokens 1 --virtual-devices 2",
                               "perplexity " + model_ + " --ids 1,2 --max-memory 0=1GiB,1=1GiB"}) {
    const ProcessResult r = run_no_gpu(c);
    EXPECT_EQ(r.exit_code, 0) << c << "\n" << r.err;
    EXPECT_EQ(r.err.find(note), std::string::npos) << c << "\n" << r.err;
    EXPECT_EQ(r.out.find(note), std::string::npos) << c << "\n" << r.out;
  }
  // plan says what it planned for: the model's 2048 positions.
  EXPECT_NE(run_no_gpu("plan " + model_).out.find("run buffers for 2048 tokens"), std::string::npos);
  // Asked for, it is noted.
  const ProcessResult asked = run_no_gpu("plan " + model_ + " --context 4096");
  EXPECT_NE((asked.out + asked.err).find("--context 4096 " + note), std::string::npos) << asked.out << asked.err;
}

TEST_F(QuietDefaults, MakeModelShowsProgressOnATerminalAndOneLineOtherwise) {
  TempDir out("make_model_progress");
  // Not a terminal: stderr stays empty, stdout has the final line.
  const ProcessResult plain = run_no_gpu("make-model " + shell_quote(out / "a") + " --preset tiny");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err, "");
  EXPECT_EQ(plain.out.rfind("wrote " + out / "a" + ": tiny llama bf16", 0), 0u) << plain.out;
  // On a terminal (script(1) gives it one): a progress line that reaches 100 %, then cleared.
  const ProcessResult tty = run_command("script -qefc " + shell_quote(shell_quote(PLEXUS_BINARY) + " make-model " + shell_quote(out / "b") +
                                                                       " --preset tiny") + " /dev/null");
  ASSERT_EQ(tty.exit_code, 0) << tty.out << tty.err;
  EXPECT_NE(tty.out.find("make-model: 100% ("), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("M parameters, "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("wrote " + out / "b"), std::string::npos) << tty.out;
}

}  // namespace
}  // namespace plexus::testing
