// --batch-size auto and --parallel auto: the largest micro-batch under a budget (with activation
// checkpointing when that fits a larger one), the trial step that shrinks it, the accumulation
// reaching a global batch, and the errors with their numbers.
#include "train/batch_choice.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "model/make_model.h"

namespace plexus {
namespace {

ModelConfig tiny() { return preset_config("tiny", Arch::kLlama, 300); }

std::int64_t need(std::int64_t m, std::int64_t T = 32, int replicas = 1, bool zero1 = false, bool checkpoint = true) {
  return training_memory(tiny(), {m, T, replicas, zero1, 1, checkpoint}).device_total();
}
std::int64_t need_kept(std::int64_t m) { return need(m, 32, 1, false, false); }

TEST(BatchChoice, LargestFittingMicroBatchIsExact) {
  const ModelConfig c = tiny();
  const TrainingShape shape{1, 32, 1, false, 1, true};
  for (std::int64_t m : {1, 2, 3, 7, 16, 33}) {
    // A budget exactly at m's need fits m and not m + 1; one byte less fits m − 1.
    EXPECT_EQ(largest_fitting_micro_batch(c, shape, need(m), 1000), m);
    EXPECT_EQ(largest_fitting_micro_batch(c, shape, need(m) - 1, 1000), m - 1);
  }
  EXPECT_EQ(largest_fitting_micro_batch(c, shape, need(50), 12), 12);  // the limit
  EXPECT_EQ(largest_fitting_micro_batch(c, shape, need(1) - 1, 1000), 0);
}

TEST(BatchChoice, AutoWithoutGlobalBatchTakesTheLargestFit) {
  AutoBatchRequest req;
  req.seq_len = 32;
  req.replicas = 2;
  req.budget = need(5, 32, 2);
  req.budget_source = "--max-memory";
  const AutoBatchChoice c = choose_auto_batch(tiny(), req, {});
  EXPECT_EQ(c.batch.micro_batch, 5);
  EXPECT_EQ(c.batch.accumulation, 1);
  EXPECT_EQ(c.batch.global_batch, 10);
  EXPECT_EQ(c.batch.replicas, 2);
  EXPECT_EQ(c.trials, 0);
  EXPECT_TRUE(c.batch.checkpoint_activations);  // checkpointed, 5 fit: fewer would without
  EXPECT_NE(c.batch.why.find("micro-batch 5"), std::string::npos) << c.batch.why;
  EXPECT_NE(c.batch.why.find("global batch 10"), std::string::npos) << c.batch.why;
  // No micro-batch beyond the data's sequences per replica.
  req.max_micro_batch = 3;
  EXPECT_EQ(choose_auto_batch(tiny(), req, {}).batch.micro_batch, 3);
}

TEST(BatchChoice, GlobalBatchByAccumulationOfADivisor) {
  AutoBatchRequest req;
  req.seq_len = 32;
  req.replicas = 2;
  req.global_batch = 28;  // 14 per replica; 5 fits: the largest divisor of 14 not above 5 is 2
  req.budget = need(5, 32, 2);
  req.checkpoint_activations = true;  // given: without it fewer would fit
  const AutoBatchChoice c = choose_auto_batch(tiny(), req, {});
  EXPECT_EQ(c.largest_fit, 5);
  EXPECT_EQ(c.batch.micro_batch, 2);
  EXPECT_EQ(c.batch.accumulation, 7);
  EXPECT_EQ(c.batch.global_batch, 28);
  EXPECT_EQ(c.batch.replicas * c.batch.accumulation * c.batch.micro_batch, 28);
  // A share smaller than what fits: one micro-batch of the whole share.
  req.global_batch = 6;
  const AutoBatchChoice small = choose_auto_batch(tiny(), req, {});
  EXPECT_EQ(small.batch.micro_batch, 3);
  EXPECT_EQ(small.batch.accumulation, 1);
  req.global_batch = 7;
  EXPECT_THROW(choose_auto_batch(tiny(), req, {}), InputError);  // not a multiple of 2 replicas
}

TEST(BatchChoice, TrialStepShrinksUntilItFits) {
  AutoBatchRequest req;
  req.seq_len = 32;
  req.budget = need(8);
  req.budget_source = "host available memory";
  // The trial measures 1.5 × the estimate's activations: 8 does not fit, something smaller does.
  std::vector<std::int64_t> tried;
  const TrialStep trial = [&](std::int64_t m, bool checkpoint) {
    tried.push_back(m);
    EXPECT_TRUE(checkpoint);  // the trial runs as the estimate chose
    const TrainingMemory e = training_memory(tiny(), {m, 32, 1, false, 1, true});
    return e.device_total() + e.activations / 2;
  };
  const AutoBatchChoice c = choose_auto_batch(tiny(), req, trial);
  ASSERT_GE(tried.size(), 2u);
  EXPECT_EQ(tried.front(), 8);
  EXPECT_LT(c.batch.micro_batch, 8);
  EXPECT_GE(c.batch.micro_batch, 1);
  EXPECT_LE(c.measured, req.budget);
  EXPECT_EQ(c.trials, static_cast<int>(tried.size()));
  for (std::size_t i = 1; i < tried.size(); ++i) EXPECT_LT(tried[i], tried[i - 1]);
  EXPECT_NE(c.batch.why.find("trial step measured"), std::string::npos) << c.batch.why;
  // A trial that never fits ends in an InputError, not a loop.
  EXPECT_THROW(choose_auto_batch(tiny(), req, [&](std::int64_t, bool) { return req.budget + 1; }), InputError);
}

TEST(BatchChoice, OneSequenceThatDoesNotFitSaysTheNumbers) {
  AutoBatchRequest req;
  req.seq_len = 32;
  req.budget = need(1) - 1;
  req.budget_source = "--max-memory";
  try {
    choose_auto_batch(tiny(), req, {});
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--max-memory allows"), std::string::npos) << what;
    EXPECT_NE(what.find("weights"), std::string::npos) << what;
    EXPECT_NE(what.find("with activation checkpointing"), std::string::npos) << what;  // the least it takes
  }
}

// Checkpointing fits more sequences: auto turns it on and says so, with the micro-batch that fits
// without it; where it would fit no larger micro-batch (the data's limit, or the global batch's
// divisors) auto leaves it off; given, auto uses it.
TEST(BatchChoice, AutoTurnsOnCheckpointingWhenALargerMicroBatchFits) {
  const ModelConfig c = tiny();
  AutoBatchRequest req;
  req.seq_len = 32;
  req.budget = need(6);
  req.budget_source = "--max-memory";
  const std::int64_t without = largest_fitting_micro_batch(c, {1, 32, 1, false, 1, false}, req.budget, 1000);
  ASSERT_LT(without, 6);
  ASSERT_GE(without, 1);
  std::vector<bool> trial_flags;
  const AutoBatchChoice on = choose_auto_batch(c, req, [&](std::int64_t m, bool checkpoint) {
    trial_flags.push_back(checkpoint);
    return training_memory(c, {m, 32, 1, false, 1, checkpoint}).device_total();
  });
  EXPECT_EQ(on.batch.micro_batch, 6);
  EXPECT_TRUE(on.batch.checkpoint_activations);
  EXPECT_EQ(trial_flags, std::vector<bool>{true});
  EXPECT_EQ(on.estimate.activations, on.estimate.activations_checkpointed);
  EXPECT_NE(on.batch.why.find("activation checkpointing turned on (without it micro-batch " + std::to_string(without) +
                              " fits)"),
            std::string::npos)
      << on.batch.why;

  // The data holds no more sequences than fit without it: off.
  req.max_micro_batch = without;
  const AutoBatchChoice limited = choose_auto_batch(c, req, {});
  EXPECT_EQ(limited.batch.micro_batch, without);
  EXPECT_FALSE(limited.batch.checkpoint_activations);
  EXPECT_EQ(limited.batch.why.find("checkpoint"), std::string::npos) << limited.batch.why;

  // Given: on even so.
  req.checkpoint_activations = true;
  const AutoBatchChoice given = choose_auto_batch(c, req, {});
  EXPECT_EQ(given.batch.micro_batch, without);
  EXPECT_TRUE(given.batch.checkpoint_activations);
  EXPECT_NE(given.batch.why.find("with --checkpoint-activations"), std::string::npos) << given.batch.why;

  // A global batch of 14 per replica: 3 fit without (micro-batch 2), and checkpointing fits
  // fewer than 7, so its divisor is 2 as well: off.
  AutoBatchRequest g;
  g.seq_len = 32;
  g.global_batch = 14;
  g.budget = need_kept(3);
  ASSERT_LT(largest_fitting_micro_batch(c, {1, 32, 1, false, 1, true}, g.budget, 14), 7);
  const AutoBatchChoice divisor = choose_auto_batch(c, g, {});
  EXPECT_EQ(divisor.batch.micro_batch, 2);
  EXPECT_FALSE(divisor.batch.checkpoint_activations);

  // One sequence fits only checkpointed: on.
  AutoBatchRequest one;
  one.seq_len = 32;
  one.budget = need_kept(1) - 1;
  ASSERT_GE(one.budget, need(1));
  const AutoBatchChoice only = choose_auto_batch(c, one, {});
  EXPECT_TRUE(only.batch.checkpoint_activations);
  EXPECT_NE(only.batch.why.find("without it not one sequence fits"), std::string::npos) << only.batch.why;
}

TEST(BatchChoice, ParallelAutoReplicasOrStages) {
  EXPECT_EQ(parse_parallel_mode("auto"), ParallelMode::kAuto);
  EXPECT_EQ(parse_parallel_mode("replicas"), ParallelMode::kReplicas);
  EXPECT_EQ(parse_parallel_mode("stages"), ParallelMode::kStages);
  EXPECT_THROW(parse_parallel_mode("tensor"), InputError);
  EXPECT_EQ(choose_parallel(ParallelMode::kAuto, 100, 100, "x"), ParallelMode::kReplicas);
  EXPECT_EQ(choose_parallel(ParallelMode::kReplicas, 1000, 100, "x"), ParallelMode::kReplicas);
  for (ParallelMode m : {ParallelMode::kAuto, ParallelMode::kStages}) {
    try {
      choose_parallel(m, 1000, m == ParallelMode::kAuto ? 100 : 10000, "--max-memory");
      FAIL() << "no InputError";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("pipeline training of layer stages is not built yet"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace plexus

namespace plexus {
namespace {

// A given batch: micro-batches default to B / R; B not a multiple of R, or B / R of M, is refused.
TEST(FixedBatchLayout, SplitsTheGlobalBatchOrRefuses) {
  const BatchLayout a = fixed_batch_layout(8, 2, 0);
  EXPECT_EQ(a.micro_batch, 4);
  EXPECT_EQ(a.accumulation, 1);
  const BatchLayout b = fixed_batch_layout(12, 3, 2, "mpirun ranks");
  EXPECT_EQ(b.micro_batch, 2);
  EXPECT_EQ(b.accumulation, 2);
  EXPECT_EQ(b.replicas, 3);
  EXPECT_NE(b.why.find("3 mpirun ranks"), std::string::npos) << b.why;
  EXPECT_THROW(fixed_batch_layout(7, 2, 0), InputError);
  EXPECT_THROW(fixed_batch_layout(8, 2, 3), InputError);
}

}  // namespace
}  // namespace plexus
