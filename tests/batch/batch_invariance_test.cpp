// A request's output depends only on itself: the same tokens alone or batched with others, in any
// position, greedy or seeded sampling, with any thread count (the forward is bitwise
// batch-invariant; each sequence samples with its own seed).
#include <gtest/gtest.h>

#include "model/make_model.h"
#include "runtime/engine.h"
#include "runtime/engine_runner.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

SequenceRequest request(std::vector<std::int32_t> prompt, std::int64_t max_tokens, bool greedy, std::uint64_t seed) {
  SequenceRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.greedy = greedy;
  r.sampling.temperature = 1.5;
  r.sampling.seed = seed;
  return r;
}

TEST(BatchInvariance, SameTokensAloneOrBatchedAnywhere) {
  testing::TempDir dir("batch_invariance");
  MakeModelOptions mo;
  mo.seed = 11;
  mo.std = 0.08;
  mo.vocab_size = 300;
  write_random_model(dir.path(), mo);
  std::vector<SequenceRequest> reqs = {
      request(testing::some_ids(5, 300, 1), 6, true, 0),  request(testing::some_ids(9, 300, 2), 4, false, 42),
      request(testing::some_ids(3, 300, 3), 7, false, 7), request(testing::some_ids(12, 300, 4), 5, true, 0),
      request(testing::some_ids(3, 300, 3), 7, false, 8),  // same prompt, other seed
  };
  EngineOptions eo;
  eo.threads = 1;
  eo.max_batch_tokens = 8;  // prefill of the batch spans several forwards, cutting prompts
  Engine engine(dir.path(), eo);
  EngineRunner runner(engine);
  std::vector<std::vector<std::int32_t>> alone;
  for (const SequenceRequest& r : reqs) alone.push_back(generate_batch(runner, {r}, {}).sequences[0].ids);
  EXPECT_NE(alone[2], alone[4]);  // the seed matters

  const BatchGenerateResult together = generate_batch(runner, reqs, {});
  std::vector<SequenceRequest> reversed(reqs.rbegin(), reqs.rend());
  const BatchGenerateResult backwards = generate_batch(runner, reversed, {});
  EngineOptions eo2 = eo;
  eo2.threads = 2;
  eo2.max_batch_tokens = 5;
  Engine engine2(dir.path(), eo2);
  EngineRunner runner2(engine2);
  const BatchGenerateResult other_engine = generate_batch(runner2, reqs, {});
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(together.sequences[i].ids, alone[i]) << i;
    EXPECT_EQ(backwards.sequences[reqs.size() - 1 - i].ids, alone[i]) << i;
    EXPECT_EQ(other_engine.sequences[i].ids, alone[i]) << i;
    EXPECT_EQ(static_cast<std::int64_t>(alone[i].size()), reqs[i].max_tokens);
    EXPECT_GT(together.sequences[i].e2e_ms, 0);
  }
}

TEST(BatchInvariance, OldBatchApiKeepsSeedPerPosition) {
  // generate --batch N: copies of one prompt sample with seed + i, so they differ.
  testing::TempDir dir("batch_invariance");
  MakeModelOptions mo;
  mo.vocab_size = 300;
  mo.std = 0.08;
  write_random_model(dir.path(), mo);
  EngineOptions eo;
  eo.threads = 1;
  Engine engine(dir.path(), eo);
  EngineRunner runner(engine);
  GenerateOptions o;
  o.max_tokens = 6;
  o.sampling.greedy = false;
  o.sampling.temperature = 2.0;
  o.sampling.seed = 5;
  const std::vector<std::int32_t> p = testing::some_ids(4, 300, 9);
  const BatchGenerateResult r = generate_batch(runner, {p, p}, o);
  SequenceRequest second = request(p, 6, false, 6);
  second.sampling.temperature = 2.0;
  EXPECT_EQ(r.sequences[1].ids, generate_batch(runner, {second}, {}).sequences[0].ids);
}

}  // namespace
}  // namespace plexus
