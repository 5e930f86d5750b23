// The cost model's prediction of a tensor-parallel run (predict_run, what bench reports as
// `predicted`): one rank's shard and its collectives, the all-reduce bytes per token the run
// then measures; a run without --tp predicts without them.
#include <gtest/gtest.h>

#include "exec/model_run.h"
#include "model/make_model.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::some_ids;
using testing::TempDir;

std::unique_ptr<ModelRun> open(const std::string& dir, int tp, int pp) {
  RunInputs in;
  in.engine.threads = 2;
  in.engine.max_batch_tokens = 16;
  in.engine.max_context = 64;
  in.plan.context = 64;
  in.plan.tensor_parallel = tp;
  in.plan.pipeline_parallel = pp;
  in.plan.virtual_devices = tp * pp;  // CPU devices, on a machine with a GPU too
  return open_model_run(in, dir);
}

TEST(TensorParallelPrediction, PredictsTheCollectivesTheRunMeasures) {
  TempDir dir("tp_predict");
  MakeModelOptions o;  // tiny: 4 layers, hidden 64, 4 heads, 2 kv heads
  o.dtype = DType::kF32;
  o.vocab_size = 300;
  write_random_model(dir.path(), o);

  const auto run = open(dir.path(), 2, 1);
  const Json p = predict_run(*run, dir.path(), 16, 24, 1);
  ASSERT_TRUE(p.is_object()) << p.dump();
  EXPECT_EQ(p["tensor_parallel"], 2);
  const double share = p["communication_share"].get<double>();
  EXPECT_GT(share, 0);
  EXPECT_LT(share, 1);
  // Two all-reduces of the hidden state (64 float32) per layer and token.
  EXPECT_EQ(p["all_reduce_bytes_per_token"].get<double>(), 2.0 * 4 * 64 * 4);
  const std::vector<std::int32_t> ids = some_ids(17, 300, 3);
  perplexity(*run->runner, ids);
  EXPECT_DOUBLE_EQ(comm_bytes_per_token(run->stats()), p["all_reduce_bytes_per_token"].get<double>());

  // The same model on two pipeline stages: no collectives predicted.
  const auto staged = open(dir.path(), 1, 2);
  const Json q = predict_run(*staged, dir.path(), 16, 24, 1);
  ASSERT_TRUE(q.is_object()) << q.dump();
  EXPECT_FALSE(q.contains("tensor_parallel"));
  EXPECT_FALSE(q.contains("communication_share"));
}

}  // namespace
}  // namespace plexus
