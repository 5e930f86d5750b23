// Data parallelism and the optimizer step on a tiny model: 1, 2 and 4 in-process replicas give
// the same losses and weights, ZeRO-1 the same bits as without, gradient accumulation the same
// as one large micro-batch; a non-finite gradient skips the step leaving weights and optimizer
// state bit for bit; the last layer's all-reduce starts while the backward still runs; a failing
// rank ends the group with its own error.
#include "train/replica_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/in_process_group.h"
#include "core/error.h"
#include "replica_run.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::RunResult;
using testing::RunSpec;

// A tiny f32 Llama (hidden 64, 4 layers, vocab 300), made once for the whole file.
const std::string& tiny_model() {
  static testing::TempDir dir("replica_trainer");
  static const std::string model = [] {
    const std::string m = dir.path() + "/m";
    const testing::ProcessResult r = testing::run_plexus("make-model " + m + " --preset tiny --vocab 300 --dtype f32");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return m;
  }();
  return model;
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, static_cast<double>(std::abs(a[i] - b[i])));
  return d;
}

void expect_ranks_agree(const RunResult& r) {
  for (std::size_t k = 1; k < r.params.size(); ++k)
    EXPECT_TRUE(testing::same_bits(r.params[0], r.params[k])) << "rank " << k << "'s weights differ from rank 0's";
}

TEST(ReplicaTrainer, OneTwoAndFourReplicasGiveTheSameLosses) {
  RunSpec spec;
  const RunResult one = testing::run_replicas(tiny_model(), spec);
  ASSERT_EQ(one.steps.size(), 3u);
  EXPECT_GT(one.steps[0].loss, 4.0);  // ~ log(300) from a random model
  EXPECT_LT(one.steps[2].loss, one.steps[0].loss);
  EXPECT_EQ(one.steps[0].tokens, spec.B * spec.T);
  EXPECT_EQ(one.state.step, 3);
  for (int replicas : {2, 4}) {
    spec.replicas = replicas;
    const RunResult many = testing::run_replicas(tiny_model(), spec);
    for (std::size_t s = 0; s < 3; ++s) {
      EXPECT_NEAR(many.steps[s].loss, one.steps[s].loss, 1e-5) << replicas << " replicas, step " << s;
      EXPECT_NEAR(many.steps[s].grad_norm, one.steps[s].grad_norm, 1e-5 * one.steps[s].grad_norm);
      EXPECT_FALSE(many.steps[s].skipped);
    }
    // The gradients differ only in the order of float sums; AdamW's steps are ~lr each.
    EXPECT_LT(max_abs_diff(many.params[0], one.params[0]), 1e-5) << replicas << " replicas";
    expect_ranks_agree(many);
    EXPECT_EQ(many.state.step, 3);
  }
}

// The launcher's default TrainOps (CpuTrainOps, whose results do not depend on its threads): one
// replica on 2 threads and 2 replicas on one thread each agree as with the oracle, and with it.
TEST(ReplicaTrainer, CpuTrainOpsReplicasAgreeWithEachOtherAndTheOracle) {
  RunSpec spec;
  const RunResult oracle = testing::run_replicas(tiny_model(), spec);
  spec.make_ops = nullptr;
  spec.threads = 2;
  const RunResult one = testing::run_replicas(tiny_model(), spec);
  spec.replicas = 2;
  spec.zero1 = true;
  const RunResult two = testing::run_replicas(tiny_model(), spec);
  for (std::size_t s = 0; s < 3; ++s) {
    EXPECT_NEAR(two.steps[s].loss, one.steps[s].loss, 1e-5) << "step " << s;
    EXPECT_NEAR(one.steps[s].loss, oracle.steps[s].loss, 1e-5) << "step " << s;
  }
  EXPECT_LT(max_abs_diff(two.params[0], one.params[0]), 1e-5);
  expect_ranks_agree(two);
}

TEST(ReplicaTrainer, ZeroOneGivesTheSameBitsAsWithout) {
  for (int replicas : {2, 3}) {
    RunSpec spec;
    spec.replicas = replicas;
    spec.B = 6;
    const RunResult plain = testing::run_replicas(tiny_model(), spec);
    spec.zero1 = true;
    const RunResult zero = testing::run_replicas(tiny_model(), spec);
    for (std::size_t s = 0; s < 3; ++s) EXPECT_EQ(zero.steps[s].loss, plain.steps[s].loss);
    EXPECT_TRUE(testing::same_bits(zero.params[0], plain.params[0])) << replicas << " replicas";
    expect_ranks_agree(zero);
    // The gathered optimizer state is the whole state, as without sharding.
    EXPECT_EQ(zero.state.step, plain.state.step);
    EXPECT_TRUE(testing::same_bits(zero.state.exp_avg, plain.state.exp_avg));
    EXPECT_TRUE(testing::same_bits(zero.state.exp_avg_sq, plain.state.exp_avg_sq));
  }
}

TEST(ReplicaTrainer, AccumulatedMicroBatchesMatchOneBatch) {
  RunSpec spec;
  spec.micro = 4;
  const RunResult whole = testing::run_replicas(tiny_model(), spec);
  spec.micro = 1;  // 4 micro-batches of 1
  const RunResult accumulated = testing::run_replicas(tiny_model(), spec);
  spec.replicas = 2;  // 2 ranks × 2 micro-batches of 1
  const RunResult both = testing::run_replicas(tiny_model(), spec);
  for (std::size_t s = 0; s < 3; ++s) {
    EXPECT_NEAR(accumulated.steps[s].loss, whole.steps[s].loss, 1e-5) << "step " << s;
    EXPECT_NEAR(both.steps[s].loss, whole.steps[s].loss, 1e-5) << "step " << s;
  }
  EXPECT_LT(max_abs_diff(accumulated.params[0], whole.params[0]), 1e-5);
  EXPECT_LT(max_abs_diff(both.params[0], whole.params[0]), 1e-5);
}

// optimizer_state() then restore() into a fresh trainer (a resumed run) continues bit for bit.
TEST(ReplicaTrainer, RestoredStateContinuesTheRunBitForBit) {
  const ModelConfig config = load_model_config(tiny_model());
  const LlamaTrainModel model(config);
  const std::vector<float> start = testing::initial_params(tiny_model(), model.layout());
  const std::int64_t B = 4, T = 9;
  for (const bool zero1 : {false, true}) {
    std::vector<float> straight, resumed;
    std::mutex mutex;
    run_in_process_replicas(
        2, 2,
        [&](ReplicaRank& r) {
          auto make = [&] {
            return std::make_unique<ReplicaTrainer>(model, start, testing::test_optimizer(),
                                                    testing::batch_layout(B, 2, 2), zero1, r.comm, r.ops, &r.pool);
          };
          auto step = [&](ReplicaTrainer& t, int s) {
            const std::vector<std::int32_t> batch = testing::global_batch(s, B, T, config.vocab_size);
            t.step(testing::rank_slice(batch, B, T, r.rank, 2), T);
          };
          std::unique_ptr<ReplicaTrainer> a = make();
          for (int s = 0; s < 3; ++s) step(*a, s);
          std::unique_ptr<ReplicaTrainer> b = make();
          for (int s = 0; s < 2; ++s) step(*b, s);
          const std::vector<float> params(b->params().begin(), b->params().end());
          const OptimizerState state = b->optimizer_state();
          b = make();  // a new process: starting weights, no state
          b->restore(params, state);
          step(*b, 2);
          if (r.rank != 0) return;
          std::lock_guard lock(mutex);
          straight.assign(a->params().begin(), a->params().end());
          resumed.assign(b->params().begin(), b->params().end());
        },
        [](int, ThreadPool&) -> std::unique_ptr<TrainOps> { return std::make_unique<RefTrainOps>(); });
    EXPECT_TRUE(testing::same_bits(straight, resumed)) << "zero1 " << zero1;
  }
}

// RefTrainOps whose weight gradients get a poisoned element while `poison` is set.
class PoisonOps : public RefTrainOps {
 public:
  explicit PoisonOps(const bool& poison, float value) : poison_(poison), value_(value) {}
  void linear_backward_weight(const float* dy, const float* x, std::int64_t n, std::int64_t in, std::int64_t out,
                              float* dw, float* dbias) override {
    RefTrainOps::linear_backward_weight(dy, x, n, in, out, dw, dbias);
    if (poison_) dw[0] = value_;
  }

 private:
  const bool& poison_;
  float value_;
};

TEST(ReplicaTrainer, NonFiniteGradientSkipsTheStepLeavingEverythingAsItWas) {
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    for (const bool zero1 : {false, true}) {
      const ModelConfig config = load_model_config(tiny_model());
      const LlamaTrainModel model(config);
      const std::vector<float> start = testing::initial_params(tiny_model(), model.layout());
      const std::int64_t B = 4, T = 9;
      std::mutex mutex;
      std::vector<std::string> failures;
      bool poison[2] = {false, false};
      run_in_process_replicas(
          2, 2,
          [&](ReplicaRank& r) {
            ReplicaTrainer trainer(model, start, testing::test_optimizer(), testing::batch_layout(B, 2, 2), zero1,
                                   r.comm, r.ops, &r.pool);
            auto step = [&](int s) {
              const std::vector<std::int32_t> batch = testing::global_batch(s, B, T, config.vocab_size);
              return trainer.step(testing::rank_slice(batch, B, T, r.rank, 2), T);
            };
            auto check = [&](bool ok, const std::string& what) {
              if (ok) return;
              std::lock_guard lock(mutex);
              failures.push_back("rank " + std::to_string(r.rank) + ": " + what);
            };
            check(!step(0).skipped, "step 0 skipped");
            const std::vector<float> after_one(trainer.params().begin(), trainer.params().end());
            const OptimizerState state_one = trainer.optimizer_state();
            // Only rank 1 computes a bad gradient: the all-reduce carries it to both.
            poison[r.rank] = r.rank == 1;
            const StepResult bad_step = step(1);
            poison[r.rank] = false;
            check(bad_step.skipped, "the non-finite step was not skipped");
            check(!std::isfinite(bad_step.grad_norm), "the skipped step's norm is finite");
            check(testing::same_bits(trainer.params(), after_one), "weights changed by a skipped step");
            const OptimizerState state_two = trainer.optimizer_state();
            check(state_two.step == 1, "the step count moved: " + std::to_string(state_two.step));
            check(testing::same_bits(state_two.exp_avg, state_one.exp_avg), "exp_avg changed by a skipped step");
            check(testing::same_bits(state_two.exp_avg_sq, state_one.exp_avg_sq), "exp_avg_sq changed");
            // The next step is a normal one again, AdamW's second.
            check(!step(2).skipped, "the step after a skip was skipped");
            check(trainer.optimizer_state().step == 2, "step count after the next step");
            check(!testing::same_bits(trainer.params(), after_one), "the next step did not move the weights");
          },
          [&](int rank, ThreadPool&) -> std::unique_ptr<TrainOps> {
            return std::make_unique<PoisonOps>(poison[rank], bad);
          });
      for (const std::string& f : failures) ADD_FAILURE() << f << " (bad value " << bad << ", zero1 " << zero1 << ")";
    }
  }
}

// Issue 32 item 15: finite gradients whose update would overflow a weight (here a first moment
// near f32's maximum over a zero second moment, divided by eps) skip the step like a non-finite
// gradient: weights, moments and AdamW's step count stay bit for bit, every rank agreeing even
// when only rank 0's ZeRO-1 shard overflows.
TEST(ReplicaTrainer, AnUpdateThatWouldOverflowSkipsTheStep) {
  for (const bool zero1 : {false, true}) {
    const ModelConfig config = load_model_config(tiny_model());
    const LlamaTrainModel model(config);
    const std::vector<float> start = testing::initial_params(tiny_model(), model.layout());
    const std::int64_t B = 4, T = 9;
    std::mutex mutex;
    std::vector<std::string> failures;
    run_in_process_replicas(2, 2, [&](ReplicaRank& r) {
      ReplicaTrainer trainer(model, start, testing::test_optimizer(), testing::batch_layout(B, 2, 2), zero1, r.comm, r.ops, &r.pool);
      auto step = [&](int s) {
        const std::vector<std::int32_t> batch = testing::global_batch(s, B, T, config.vocab_size);
        return trainer.step(testing::rank_slice(batch, B, T, r.rank, 2), T);
      };
      auto check = [&](bool ok, const std::string& what) {
        if (ok) return;
        std::lock_guard lock(mutex);
        failures.push_back("rank " + std::to_string(r.rank) + ": " + what);
      };
      check(!step(0).skipped, "step 0 skipped");
      // Token 0's embedding row (in rank 0's ZeRO-1 shard; token 0 is not in step 1's batch, so its
      // gradient is exactly 0): m = FLT_MAX, v = 0, so the update m / eps overflows.
      const auto at = static_cast<std::size_t>(model.layout().at("model.embed_tokens.weight").offset);
      OptimizerState bad = trainer.optimizer_state();
      bad.exp_avg[at] = std::numeric_limits<float>::max();
      bad.exp_avg_sq[at] = 0;
      const std::vector<float> weights(trainer.params().begin(), trainer.params().end());
      trainer.restore(weights, bad);
      const StepResult s = step(1);
      check(s.skipped, "the overflowing update was applied");
      check(std::isfinite(s.grad_norm), "the gradient itself was not finite");
      check(testing::same_bits(trainer.params(), weights), "weights changed by a skipped step");
      const OptimizerState after = trainer.optimizer_state();
      check(after.step == 1, "the step count moved: " + std::to_string(after.step));
      check(testing::same_bits(after.exp_avg, bad.exp_avg) && testing::same_bits(after.exp_avg_sq, bad.exp_avg_sq),
            "moments changed by a skipped step");
      for (float w : trainer.params()) {
        if (!std::isfinite(w)) {
          check(false, "a weight is not finite");
          break;
        }
      }
    });
    for (const std::string& f : failures) ADD_FAILURE() << f << " (zero1 " << zero1 << ")";
  }
}

// What the ranks did, in the order they did it.
struct EventLog {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> events;
  void add(const std::string& e) {
    {
      std::lock_guard lock(mutex);
      events.push_back(e);
    }
    changed.notify_all();
  }
};

// A rank's collectives, each all-reduce recorded as it starts.
class RecordingCollective : public Collective {
 public:
  RecordingCollective(Collective& inner, EventLog& log) : inner_(inner), log_(log) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string kind() const override { return inner_.kind(); }
  void all_reduce_sum(float* data, std::int64_t count) override {
    log_.add("r" + std::to_string(rank()) + " all_reduce " + std::to_string(count));
    inner_.all_reduce_sum(data, count);
  }
  void all_gather(const float* in, std::int64_t count, float* out) override { inner_.all_gather(in, count, out); }
  void broadcast(void* data, std::size_t bytes, int root) override { inner_.broadcast(data, bytes, root); }
  void barrier() override { inner_.barrier(); }
  void abort(const std::string& why) override { inner_.abort(why); }

 private:
  Collective& inner_;
  EventLog& log_;
};

// The embedding's backward comes after layer 0's (it needs the gradient of layer 0's input): it
// waits (at most 20 s) until the rank has started an all-reduce, and records that it ran. A step
// that reduced only after the backward would wait out the 20 s and record no all-reduce before it.
class WaitingOps : public RefTrainOps {
 public:
  WaitingOps(EventLog& log, int rank) : log_(log), rank_(rank) {}
  void embed_backward(const float* dx, std::span<const std::int32_t> ids, std::int64_t d, float* dtable) override {
    {
      std::unique_lock lock(log_.mutex);
      const std::string reduce = "r" + std::to_string(rank_) + " all_reduce";
      log_.changed.wait_for(lock, std::chrono::seconds(20), [&] {
        return std::any_of(log_.events.begin(), log_.events.end(),
                           [&](const std::string& e) { return e.rfind(reduce, 0) == 0; });
      });
    }
    log_.add("r" + std::to_string(rank_) + " embed_backward");
    RefTrainOps::embed_backward(dx, ids, d, dtable);
  }

 private:
  EventLog& log_;
  int rank_;
};

TEST(ReplicaTrainer, LastLayersAllReduceStartsBeforeTheBackwardOfLayerZeroEnds) {
  const ModelConfig config = load_model_config(tiny_model());
  const LlamaTrainModel model(config);
  const std::vector<float> start = testing::initial_params(tiny_model(), model.layout());
  const std::int64_t B = 2, T = 9;
  EventLog log;
  run_in_process_replicas(
      2, 2,
      [&](ReplicaRank& r) {
        RecordingCollective comm(r.comm, log);
        ReplicaTrainer trainer(model, start, testing::test_optimizer(), testing::batch_layout(B, 2, 1), false, comm,
                               r.ops, &r.pool);
        const std::vector<std::int32_t> batch = testing::global_batch(0, B, T, config.vocab_size);
        trainer.step(testing::rank_slice(batch, B, T, r.rank, 2), T);
      },
      [&](int rank, ThreadPool&) -> std::unique_ptr<TrainOps> { return std::make_unique<WaitingOps>(log, rank); });
  const auto [lb, le] = model.layout().layer_range(static_cast<int>(config.num_layers) - 1);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string me = "r" + std::to_string(rank) + " ";
    std::vector<std::string> mine;
    for (const std::string& e : log.events)
      if (e.rfind(me, 0) == 0) mine.push_back(e.substr(me.size()));
    ASSERT_GE(mine.size(), 2u);
    // The first all-reduce is the last layer's bucket, and it started before the embedding's backward.
    EXPECT_EQ(mine[0], "all_reduce " + std::to_string(le - lb)) << "rank " << rank;
    const auto embed = std::find(mine.begin(), mine.end(), "embed_backward");
    ASSERT_NE(embed, mine.end());
    EXPECT_GT(embed - mine.begin(), 0) << "rank " << rank << ": no all-reduce started during the backward";
  }
}

TEST(InProcessReplicas, AFailingRankEndsTheGroupWithItsOwnError) {
  const ModelConfig config = load_model_config(tiny_model());
  const LlamaTrainModel model(config);
  const std::vector<float> start = testing::initial_params(tiny_model(), model.layout());
  const std::int64_t B = 3, T = 9;
  std::vector<int> steps_done(3, 0);
  try {
    run_in_process_replicas(3, 3, [&](ReplicaRank& r) {
      ReplicaTrainer trainer(model, start, testing::test_optimizer(), testing::batch_layout(B, 3, 1), true, r.comm,
                             r.ops, &r.pool);
      for (int s = 0; s < 3; ++s) {
        if (r.rank == 2 && s == 1) throw InputError("data.jsonl:7: rank 2 cannot go on");
        const std::vector<std::int32_t> batch = testing::global_batch(s, B, T, config.vocab_size);
        trainer.step(testing::rank_slice(batch, B, T, r.rank, 3), T);
        ++steps_done[static_cast<std::size_t>(r.rank)];
      }
    }, [](int, ThreadPool&) -> std::unique_ptr<TrainOps> { return std::make_unique<RefTrainOps>(); });
    ADD_FAILURE() << "no exception";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "data.jsonl:7: rank 2 cannot go on");
  }
  EXPECT_EQ(steps_done, (std::vector<int>{1, 1, 1}));  // the others ended in step 2's collectives
}

// Rank 1's backward fails after it has handed its layers' buckets to the communication thread.
class FailingOps : public RefTrainOps {
 public:
  explicit FailingOps(bool fail) : fail_(fail) {}
  void embed_backward(const float* dx, std::span<const std::int32_t> ids, std::int64_t d, float* dtable) override {
    if (fail_) throw RuntimeError("rank 1's backward failed");
    RefTrainOps::embed_backward(dx, ids, d, dtable);
  }

 private:
  bool fail_;
};

TEST(InProcessReplicas, ABackwardFailingWithBucketsInFlightEndsTheGroup) {
  const ModelConfig config = load_model_config(tiny_model());
  const LlamaTrainModel model(config);
  const std::vector<float> start = testing::initial_params(tiny_model(), model.layout());
  const std::int64_t B = 2, T = 9;
  try {
    run_in_process_replicas(
        2, 2,
        [&](ReplicaRank& r) {
          ReplicaTrainer trainer(model, start, testing::test_optimizer(), testing::batch_layout(B, 2, 1), false, r.comm,
                                 r.ops, &r.pool);
          const std::vector<std::int32_t> batch = testing::global_batch(0, B, T, config.vocab_size);
          trainer.step(testing::rank_slice(batch, B, T, r.rank, 2), T);
        },
        [](int rank, ThreadPool&) -> std::unique_ptr<TrainOps> { return std::make_unique<FailingOps>(rank == 1); });
    ADD_FAILURE() << "no exception";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "rank 1's backward failed");
  }
}

TEST(InProcessReplicas, ThreadsAreSplitAcrossRanks) {
  EXPECT_EQ(replica_threads(8, 2, 0), 4);
  EXPECT_EQ(replica_threads(8, 3, 0), 3);
  EXPECT_EQ(replica_threads(8, 3, 1), 3);
  EXPECT_EQ(replica_threads(8, 3, 2), 2);
  EXPECT_EQ(replica_threads(2, 4, 3), 1);
}

}  // namespace
}  // namespace plexus
