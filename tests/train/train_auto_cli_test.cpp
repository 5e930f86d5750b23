// `plexus train --batch-size auto [--global-batch G]` and `--parallel` as a process: the chosen
// micro-batch from a --max-memory budget sized by the estimate (activation checkpointing turned on
// when it fits more, used when given), accumulation to G, and the exit-2 refusals (stages,
// nothing fits, flags that do not go together).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/json.h"
#include "model/config.h"
#include "test_util.h"
#include "train/training_memory.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;

struct AutoFixture {
  testing::TempDir dir{"train_auto"};
  std::string model = dir / "model", data = dir / "data.jsonl";
  std::int64_t T = 256;  // ~1.6 MiB of checkpointed activations per sequence: the budget's 1 MiB of slack holds no 6th
  AutoFixture() {
    EXPECT_EQ(run_plexus("make-model " + shell_quote(model) + " --preset tiny --dtype f32 --vocab 300").exit_code, 0);
    std::ofstream f(data);
    for (int i = 0; i < 16; ++i) f << Json{{"ids", testing::some_ids(static_cast<int>(T), 300, i)}}.dump() << "\n";
  }
  // A --max-memory that fits m sequences by the estimate with 1 MiB to spare (the trial step
  // measures a little more than the estimate: the code pages its first step touches).
  std::string budget_for(std::int64_t m, bool checkpoint) const {
    const ModelConfig c = load_model_config(model);
    const std::int64_t need = training_memory(c, {m, T, 1, false, 1, checkpoint}).device_total();
    EXPECT_GT(training_memory(c, {m + 1, T, 1, false, 1, checkpoint}).device_total(), need + (1 << 20));
    return "cpu=" + std::to_string(need + (1 << 20));
  }
  testing::ProcessResult train(const std::string& flags, const std::string& out) const {
    return run_plexus("train " + shell_quote(model) + " --data " + shell_quote(data) + " --out " +
                      shell_quote(dir / out) + " --steps 1 --threads 1 " + flags);
  }
};

// 5 sequences fit checkpointed, 2 without: auto turns checkpointing on and says so.
TEST(TrainAuto, LargestMicroBatchUnderTheBudget) {
  AutoFixture fx;
  const testing::ProcessResult r = fx.train("--batch-size auto --max-memory " + fx.budget_for(5, true) + " --json", "a");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_json(r.out, "train --json");
  const Json batch = j["batch"];
  EXPECT_EQ(batch["micro_batch"].get<std::int64_t>(), 5) << batch.dump();
  EXPECT_EQ(batch["accumulation"].get<std::int64_t>(), 1);
  EXPECT_EQ(batch["global"].get<std::int64_t>(), 5);
  EXPECT_NE(batch["why"].get<std::string>().find("trial step measured"), std::string::npos) << batch.dump();
  EXPECT_TRUE(j["checkpoint_activations"].get<bool>());
  EXPECT_NE(batch["why"].get<std::string>().find("activation checkpointing turned on (without it micro-batch 2 fits)"),
            std::string::npos)
      << batch.dump();
  EXPECT_NE(r.err.find("--micro-batch auto: micro-batch 5"), std::string::npos) << r.err;
}

// --checkpoint-activations given: auto sizes the micro-batch with it (5 fit), then the largest
// divisor of 12 not above 5.
TEST(TrainAuto, GlobalBatchByAccumulation) {
  AutoFixture fx;
  const testing::ProcessResult r = fx.train(
      "--batch-size auto --global-batch 12 --checkpoint-activations --max-memory " + fx.budget_for(5, true) + " --json",
      "g");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_json(r.out, "train --json");
  const Json batch = j["batch"];
  EXPECT_EQ(batch["micro_batch"].get<std::int64_t>(), 4) << batch.dump();  // the largest divisor of 12 not above 5
  EXPECT_EQ(batch["accumulation"].get<std::int64_t>(), 3);
  EXPECT_EQ(batch["global"].get<std::int64_t>(), 12);
  EXPECT_TRUE(j["checkpoint_activations"].get<bool>());
  EXPECT_NE(batch["why"].get<std::string>().find("with --checkpoint-activations"), std::string::npos) << batch.dump();
}

// Every one of the data's 16 sequences fits without checkpointing: nothing larger to gain, off.
TEST(TrainAuto, CheckpointingStaysOffWhenItFitsNoLargerMicroBatch) {
  AutoFixture fx;
  const testing::ProcessResult r = fx.train("--batch-size auto --max-memory " + fx.budget_for(16, false) + " --json", "o");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_json(r.out, "train --json");
  EXPECT_EQ(j["batch"]["micro_batch"].get<std::int64_t>(), 16) << j["batch"].dump();
  EXPECT_FALSE(j["checkpoint_activations"].get<bool>());
  EXPECT_EQ(j["batch"]["why"].get<std::string>().find("checkpoint"), std::string::npos) << j["batch"].dump();
}

TEST(TrainAuto, RefusalsExitTwo) {
  AutoFixture fx;
  const testing::ProcessResult stages = fx.train("--batch-size 4 --parallel stages", "s");
  EXPECT_EQ(stages.exit_code, 2);
  EXPECT_NE(stages.err.find("pipeline training of layer stages is not built yet"), std::string::npos) << stages.err;
  const testing::ProcessResult small = fx.train("--batch-size 4 --max-memory cpu=1MiB", "m");
  EXPECT_EQ(small.exit_code, 2);
  EXPECT_NE(small.err.find("not built yet"), std::string::npos) << small.err;
  EXPECT_NE(small.err.find("1.00 MiB"), std::string::npos) << small.err;
  EXPECT_EQ(fx.train("--batch-size 4 --global-batch 8", "x").exit_code, 2);
  EXPECT_EQ(fx.train("--batch-size auto --micro-batch 2", "y").exit_code, 2);
  EXPECT_EQ(fx.train("--batch-size auto --global-batch 12 --replicas 5", "z").exit_code, 2);
  EXPECT_EQ(fx.train("--batch-size 4 --parallel tensor", "w").exit_code, 2);
}

}  // namespace
}  // namespace plexus
