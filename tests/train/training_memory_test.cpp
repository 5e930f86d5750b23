// The training memory estimate: each part's arithmetic from the layout, ZeRO-1's shard, the
// activations from TrainActivations, and the process peak around it.
#include "train/training_memory.h"

#include <gtest/gtest.h>

#include "core/units.h"
#include "model/make_model.h"
#include "test_util.h"
#include "train/llama_train.h"
#include "train/param_layout.h"

namespace plexus {
namespace {

TEST(TrainingMemory, PartsFromTheLayout) {
  const ModelConfig c = preset_config("tiny", Arch::kLlama, 300);
  const ParamLayout layout = ParamLayout::of(c);
  const TrainingMemory m = training_memory(c, {2, 16, 1, false, 1});
  EXPECT_EQ(m.parameters, layout.parameters());
  EXPECT_EQ(m.weights, 4 * layout.total());
  EXPECT_EQ(m.gradients, 4 * layout.total());
  EXPECT_EQ(m.optimizer, 8 * layout.total());
  EXPECT_EQ(m.activations, TrainActivations::bytes_for(c, 2, 16));
  EXPECT_EQ(m.checkpoint, 8 * layout.total());  // both moments, gathered for a checkpoint
  EXPECT_EQ(m.device_total(), m.weights + m.gradients + m.optimizer + m.activations + m.scratch + m.checkpoint);
  // Activations grow with the micro-batch and the sequence; the rest does not.
  const TrainingMemory m4 = training_memory(c, {4, 16, 1, false, 1});
  EXPECT_GT(m4.activations, m.activations);
  EXPECT_EQ(m4.weights + m4.gradients + m4.optimizer, m.weights + m.gradients + m.optimizer);
  EXPECT_GT(training_memory(c, {2, 32, 1, false, 1}).activations, m.activations);
}

TEST(TrainingMemory, ZeroOneShardsTheMoments) {
  const ModelConfig c = preset_config("tiny", Arch::kLlama, 300);
  const std::int64_t total = ParamLayout::of(c).total();
  const TrainingMemory plain = training_memory(c, {1, 8, 3, false, 1});
  const TrainingMemory zero = training_memory(c, {1, 8, 3, true, 1});
  // Three shards of whole 16-element lines: the two moments and the all-gather's input.
  const std::int64_t shard = ((total + 2) / 3 + 15) / 16 * 16;
  EXPECT_EQ(zero.optimizer, 3 * 4 * shard);
  EXPECT_EQ(plain.optimizer, 2 * 4 * 3 * shard);
  EXPECT_EQ(plain.weights, 4 * 3 * shard);  // padded to the three shards
  EXPECT_EQ(zero.weights, plain.weights);
  EXPECT_EQ(zero.gradients, plain.gradients);
  // One replica: ZeRO-1 has nothing to shard.
  EXPECT_EQ(training_memory(c, {1, 8, 1, true, 1}).optimizer, 8 * total);
}

TEST(TrainingMemory, ProcessPeakIsTheLargerOfLoadAndSteps) {
  const ModelConfig c = preset_config("tiny", Arch::kLlama, 300);
  const std::int64_t total = ParamLayout::of(c).total();
  const TrainingShape shape{1, 8, 2, false, 1};
  const TrainingMemory m = training_memory(c, shape);
  const ProcessMemory one = process_memory(c, shape, 1, 0);
  EXPECT_EQ(one.devices, m.device_total());
  EXPECT_EQ(one.group_scratch, 0);
  EXPECT_EQ(one.start, 4 * total);  // the starting weights the run keeps
  EXPECT_EQ(one.total(), m.device_total() + 4 * total);
  EXPECT_EQ(process_memory(c, shape, 1, 0, 0, true).start, 12 * total);  // + a resumed AdamW state
  const ProcessMemory two = process_memory(c, shape, 2, 0);
  EXPECT_EQ(two.devices, 2 * m.device_total());
  EXPECT_GT(two.group_scratch, 0);  // the largest gradient bucket, shared by the group
  EXPECT_LE(two.group_scratch, 4 * total);
  // A checkpoint mapping larger than the whole training state makes the load the peak.
  const ProcessMemory load = process_memory(c, shape, 1, 100 * m.device_total());
  EXPECT_EQ(load.total(), 100 * m.device_total() + 4 * total);
  EXPECT_EQ(process_memory(c, shape, 1, 0, 1000).total(), m.device_total() + 4 * total + 1000);  // the data's tokens
}

TEST(TrainingMemory, TableAndJsonNameEveryPart) {
  const ModelConfig c = preset_config("tiny", Arch::kLlama, 300);
  const TrainingShape shape{2, 16, 2, true, 1};
  const TrainingMemory m = training_memory(c, shape);
  const std::string table = training_memory_table(m, shape, 8);
  for (const char* part : {"weights", "gradients", "optimizer", "activations", "checkpoint", "total", "ZeRO-1", "global batch 8"}) {
    EXPECT_NE(table.find(part), std::string::npos) << part << " in\n" << table;
  }
  const Json j = training_memory_json(m, shape, 8);
  EXPECT_EQ(j["per_device"]["weights_bytes"].get<std::int64_t>(), m.weights);
  EXPECT_EQ(j["per_device"]["optimizer_bytes"].get<std::int64_t>(), m.optimizer);
  EXPECT_EQ(j["per_device"]["activations_bytes"].get<std::int64_t>(), m.activations);
  EXPECT_EQ(j["per_device"]["total_bytes"].get<std::int64_t>(), m.device_total());
  EXPECT_EQ(j["zero"].get<int>(), 1);
}

// --checkpoint-activations: the activations are the layer inputs and one layer's; both ways are
// reported, the total of each, and which applies.
TEST(TrainingMemory, CheckpointedActivationsBothWays) {
  const ModelConfig c = preset_config("tiny", Arch::kLlama, 300);
  const TrainingShape off{16, 256, 1, false, 1};
  TrainingShape on = off;
  on.checkpoint_activations = true;
  const TrainingMemory k = training_memory(c, off), m = training_memory(c, on);
  EXPECT_EQ(k.activations, TrainActivations::bytes_for(c, 16, 256, false));
  EXPECT_EQ(m.activations, TrainActivations::bytes_for(c, 16, 256, true));
  EXPECT_LT(m.activations, k.activations / 2);  // 4 layers: about a third kept
  for (const TrainingMemory* t : {&k, &m}) {
    EXPECT_EQ(t->activations_kept, k.activations);
    EXPECT_EQ(t->activations_checkpointed, m.activations);
    EXPECT_EQ(t->device_total_if(false), k.device_total());
    EXPECT_EQ(t->device_total_if(true), m.device_total());
  }
  EXPECT_EQ(k.device_total() - m.device_total(), k.activations - m.activations);  // nothing else changes
  EXPECT_EQ(process_memory(c, off, 1, 0).total() - process_memory(c, on, 1, 0).total(), k.activations - m.activations);

  const std::string table_off = training_memory_table(k, off, 16), table_on = training_memory_table(m, on, 16);
  const auto bytes = [](std::int64_t n) { return format_bytes(static_cast<std::uint64_t>(n)); };
  EXPECT_NE(table_off.find("with --checkpoint-activations: activations " + bytes(m.activations) + ", total " +
                           bytes(m.device_total())),
            std::string::npos)
      << table_off;
  EXPECT_NE(table_on.find("without --checkpoint-activations: activations " + bytes(k.activations) + ", total " +
                          bytes(k.device_total())),
            std::string::npos)
      << table_on;
  EXPECT_NE(table_on.find("checkpointed (--checkpoint-activations)"), std::string::npos) << table_on;
  const Json j = training_memory_json(m, on, 16);
  EXPECT_TRUE(j["checkpoint_activations"].get<bool>());
  EXPECT_EQ(j["per_device"]["activations_bytes"].get<std::int64_t>(), m.activations);
  EXPECT_EQ(j["per_device"]["activations_kept_bytes"].get<std::int64_t>(), k.activations);
  EXPECT_EQ(j["per_device"]["activations_checkpointed_bytes"].get<std::int64_t>(), m.activations);
  EXPECT_EQ(j["per_device"]["total_bytes"].get<std::int64_t>(), m.device_total());
  EXPECT_EQ(j["per_device"]["total_kept_bytes"].get<std::int64_t>(), k.device_total());
  EXPECT_EQ(j["per_device"]["total_checkpointed_bytes"].get<std::int64_t>(), m.device_total());
  EXPECT_FALSE(training_memory_json(k, off, 16)["checkpoint_activations"].get<bool>());
}

TEST(TrainingMemory, EstimateCommandReportsPerDevice) {
  testing::TempDir dir("estimate_training");
  const std::string model = dir / "m";
  ASSERT_EQ(testing::run_plexus("make-model " + model + " --preset tiny --vocab 300 --dtype f32").exit_code, 0);
  const testing::ProcessResult r = testing::run_plexus(
      "estimate " + model + " --training --batch-size 8 --replicas 2 --zero 1 --micro-batch 2 --seq-len 32 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_json(r.out, "estimate --json");
  const TrainingMemory m = training_memory(load_model_config(model), {2, 32, 2, true, 1});
  EXPECT_EQ(j["per_device"]["total_bytes"].get<std::int64_t>(), m.device_total());
  EXPECT_EQ(j["per_device"]["optimizer_bytes"].get<std::int64_t>(), m.optimizer);
  EXPECT_EQ(j["global_batch"].get<std::int64_t>(), 8);
  // --checkpoint-activations: the checkpointed activations apply, both totals are there.
  const testing::ProcessResult ck = testing::run_plexus(
      "estimate " + model + " --training --batch-size 8 --replicas 2 --zero 1 --micro-batch 2 --seq-len 32 --json "
      "--checkpoint-activations");
  ASSERT_EQ(ck.exit_code, 0) << ck.err;
  const Json jc = parse_json(ck.out, "estimate --json");
  TrainingShape on{2, 32, 2, true, 1};
  on.checkpoint_activations = true;
  const TrainingMemory mc = training_memory(load_model_config(model), on);
  EXPECT_TRUE(jc["checkpoint_activations"].get<bool>());
  EXPECT_FALSE(j["checkpoint_activations"].get<bool>());
  EXPECT_EQ(jc["per_device"]["total_bytes"].get<std::int64_t>(), mc.device_total());
  EXPECT_LT(mc.device_total(), m.device_total());
  EXPECT_EQ(jc["per_device"]["total_kept_bytes"].get<std::int64_t>(), m.device_total());
  EXPECT_EQ(j["per_device"]["total_checkpointed_bytes"].get<std::int64_t>(), mc.device_total());
  const testing::ProcessResult text = testing::run_plexus("estimate " + model + " --training --seq-len 32");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("activations"), std::string::npos) << text.out;
  // Bad shapes exit 2 naming the flag; the training flags need --training.
  EXPECT_EQ(testing::run_plexus("estimate " + model + " --training --batch-size 5 --replicas 2").exit_code, 2);
  EXPECT_EQ(testing::run_plexus("estimate " + model + " --training --batch-size 4 --micro-batch 3").exit_code, 2);
  const testing::ProcessResult no_flag = testing::run_plexus("estimate " + model + " --seq-len 32");
  EXPECT_EQ(no_flag.exit_code, 2);
  EXPECT_NE(no_flag.err.find("--training"), std::string::npos) << no_flag.err;
  const testing::ProcessResult no_training = testing::run_plexus("estimate " + model + " --checkpoint-activations");
  EXPECT_EQ(no_training.exit_code, 2);
  EXPECT_NE(no_training.err.find("--checkpoint-activations applies to the training estimate: add --training"),
            std::string::npos)
      << no_training.err;
  const testing::ProcessResult text_on = testing::run_plexus("estimate " + model + " --training --seq-len 32 --checkpoint-activations");
  ASSERT_EQ(text_on.exit_code, 0) << text_on.err;
  EXPECT_NE(text_on.out.find("without --checkpoint-activations: activations"), std::string::npos) << text_on.out;
  // Without --training the estimate is the one it was.
  EXPECT_NE(testing::run_plexus("estimate " + model).out.find("train w/ Adam"), std::string::npos);
}

}  // namespace
}  // namespace plexus
