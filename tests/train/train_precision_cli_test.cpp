// `plexus train --precision` as a process: a value other than f32 or bf16 exits 2 naming the
// choices; the precision is in the run's JSON and its checkpoints' state.json; --resume with
// another precision exits 2 naming both, with the same one it ends bit-identical to an
// uninterrupted bf16 run; a checkpoint written before --precision existed resumes as f32.
#include <gtest/gtest.h>

#include <filesystem>

#include "train_cli_util.h"

namespace plexus {
namespace {

namespace fs = std::filesystem;
using testing::run_plexus;
using train_test::file_bytes;
using train_test::train_args;

class TrainPrecisionCli : public ::testing::Test {
 protected:
  void SetUp() override { train_test::make_inputs(dir_, 8); }
  testing::TempDir dir_{"train_precision_cli"};
};

TEST_F(TrainPrecisionCli, AnUnknownPrecisionExitsTwoNamingTheChoices) {
  const std::string out = dir_ / "out";
  for (const char* bad : {"fp8", "bfloat16", "F32", "''"}) {
    const testing::ProcessResult r = run_plexus(train_args(dir_, out, 1, 4, std::string("--precision ") + bad));
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--precision must be"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("f32"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("bf16"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << bad;
  }
}

TEST_F(TrainPrecisionCli, PrecisionIsInTheJsonAndTheCheckpointAndResumeKeepsIt) {
  // Uninterrupted: 4 bf16 steps.
  const std::string whole = dir_ / "whole";
  const testing::ProcessResult w = run_plexus(train_args(dir_, whole, 4, 4, "--precision bf16 --json"));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_EQ(Json::parse(w.out)["precision"], Json("bf16"));
  // 2 steps, then --resume to 4.
  const std::string out = dir_ / "out";
  ASSERT_EQ(run_plexus(train_args(dir_, out, 2, 4, "--precision bf16")).exit_code, 0);
  const std::string ckpt = out + "/checkpoints/step-000002";
  EXPECT_EQ(read_json_file(ckpt + "/state.json")["options"]["precision"], Json("bf16"));
  const std::string model = file_bytes(ckpt + "/model.safetensors");
  // Another precision: refused, naming both and the flag; nothing changed.
  for (const char* other : {"--precision f32", ""}) {
    const testing::ProcessResult r = run_plexus(train_args(dir_, out, 4, 4, std::string("--resume ") + other));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(ckpt + " was written with precision \"bf16\", this run has \"f32\""), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("resume with the same --precision"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out + "/checkpoints/step-000004"));
  }
  EXPECT_EQ(file_bytes(ckpt + "/model.safetensors"), model);
  const testing::ProcessResult resumed = run_plexus(train_args(dir_, out, 4, 4, "--precision bf16 --resume --json"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Json::parse(resumed.out)["precision"], Json("bf16"));
  EXPECT_EQ(file_bytes(out + "/model.safetensors"), file_bytes(whole + "/model.safetensors"));
  // bf16 is not f32: the f32 run ends elsewhere.
  const std::string f32 = dir_ / "f32";
  const testing::ProcessResult f = run_plexus(train_args(dir_, f32, 4, 4, "--json"));
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(Json::parse(f.out)["precision"], Json("f32"));
  EXPECT_NE(file_bytes(f32 + "/model.safetensors"), file_bytes(whole + "/model.safetensors"));
}

// state.json from before --precision has no "precision": it was f32.
TEST_F(TrainPrecisionCli, ACheckpointWithoutPrecisionResumesAsF32) {
  const std::string out = dir_ / "out";
  ASSERT_EQ(run_plexus(train_args(dir_, out, 2, 4)).exit_code, 0);
  const std::string state = out + "/checkpoints/step-000002/state.json";
  Json j = read_json_file(state);
  ASSERT_EQ(j["options"]["precision"], Json("f32"));
  j["options"].erase("precision");
  std::ofstream(state) << j.dump(2) << "\n";
  const testing::ProcessResult bf16 = run_plexus(train_args(dir_, out, 3, 4, "--resume --precision bf16"));
  EXPECT_EQ(bf16.exit_code, 2) << bf16.err;
  EXPECT_NE(bf16.err.find("was written with precision \"f32\", this run has \"bf16\""), std::string::npos) << bf16.err;
  const testing::ProcessResult f32 = run_plexus(train_args(dir_, out, 3, 4, "--resume"));
  EXPECT_EQ(f32.exit_code, 0) << f32.err;
}

}  // namespace
}  // namespace plexus
