// `plexus train --checkpoint-activations` as a process: the same losses, gradient norms, final
// weights and optimizer state bit for bit as the run without it (one replica with accumulation,
// and two in-process replicas whose all-reduce runs during the backward); `--resume` takes a
// checkpoint of either kind and ends bit-identical; the flag is in --json.
#include <gtest/gtest.h>

#include <string>

#include "train_cli_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using train_test::file_bytes;
using train_test::train_args;

class TrainCheckpointActivations : public ::testing::Test {
 protected:
  void SetUp() override { train_test::make_inputs(dir_, 12, 33); }
  testing::TempDir dir_{"train_checkpoint_activations"};
};

struct RunOutput {
  Json json;
  std::string err, model, exp_avg, exp_avg_sq;  // stderr, the trained weights, the last checkpoint's moments
};

RunOutput train(const testing::TempDir& dir, const std::string& out, int steps, const std::string& flags) {
  const testing::ProcessResult r = run_plexus(train_args(dir, out, steps, 4, "--json " + flags));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  RunOutput o;
  if (r.exit_code != 0) return o;
  o.json = Json::parse(r.out);
  o.err = r.err;
  o.model = file_bytes(out + "/model.safetensors");
  const std::string last = o.json["checkpoint"].get<std::string>();
  o.exp_avg = file_bytes(last + "/exp_avg.safetensors");
  o.exp_avg_sq = file_bytes(last + "/exp_avg_sq.safetensors");
  return o;
}

void expect_same_bits(const RunOutput& got, const RunOutput& want, const std::string& what) {
  ASSERT_EQ(got.json["steps"].size(), want.json["steps"].size()) << what;
  for (std::size_t i = 0; i < want.json["steps"].size(); ++i) {
    for (const char* key : {"loss", "grad_norm"}) {  // JSON doubles round-trip: equal numbers are equal bits
      EXPECT_EQ(got.json["steps"][i][key].get<double>(), want.json["steps"][i][key].get<double>())
          << what << " step " << i + 1 << " " << key;
    }
  }
  EXPECT_FALSE(want.model.empty());
  EXPECT_TRUE(got.model == want.model) << what << ": the trained weights differ";
  EXPECT_TRUE(got.exp_avg == want.exp_avg && got.exp_avg_sq == want.exp_avg_sq) << what << ": the AdamW moments differ";
}

TEST_F(TrainCheckpointActivations, SameLossesAndWeightsBitForBit) {
  for (const std::string layout : {"--micro-batch 2 --threads 2", "--replicas 2 --micro-batch 1 --threads 2"}) {
    const std::string tag = layout.find("replicas") != std::string::npos ? "r2" : "r1";
    const RunOutput kept = train(dir_, dir_ / ("kept-" + tag), 3, layout);
    const RunOutput checkpointed = train(dir_, dir_ / ("ckpt-" + tag), 3, layout + " --checkpoint-activations");
    expect_same_bits(checkpointed, kept, layout);
    EXPECT_FALSE(kept.json["checkpoint_activations"].get<bool>());
    EXPECT_TRUE(checkpointed.json["checkpoint_activations"].get<bool>());
    EXPECT_NE(checkpointed.err.find("; activations checkpointed"), std::string::npos) << checkpointed.err;
    EXPECT_EQ(kept.err.find("activations checkpointed"), std::string::npos) << kept.err;
  }
}

// Checkpointing changes no bit, so it is no part of the options a resumed run must repeat: a run
// begun with it resumes without it and the other way round, ending as the uninterrupted run.
TEST_F(TrainCheckpointActivations, ResumeAcceptsEitherWay) {
  const RunOutput full = train(dir_, dir_ / "full", 4, "--checkpoint-every 2");
  for (const bool first : {true, false}) {
    const std::string out = dir_ / (first ? "on-then-off" : "off-then-on");
    const std::string on = " --checkpoint-activations";
    train(dir_, out, 2, std::string("--checkpoint-every 2") + (first ? on : ""));
    const RunOutput resumed = train(dir_, out, 4, std::string("--checkpoint-every 2 --resume") + (first ? "" : on));
    if (resumed.json.is_null()) continue;  // refused: train() said so
    EXPECT_EQ(resumed.json["resumed_from"].get<std::string>(), out + "/checkpoints/step-000002") << resumed.json.dump();
    EXPECT_EQ(resumed.json["checkpoint_activations"].get<bool>(), !first);
    EXPECT_TRUE(resumed.model == full.model) << out;
    EXPECT_TRUE(resumed.exp_avg_sq == full.exp_avg_sq) << out;
  }
}

}  // namespace
}  // namespace plexus
