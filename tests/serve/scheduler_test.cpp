// The continuous-batching scheduler on a tiny random model: each request's tokens are those it
// gets alone, whatever arrives beside it; forwards mix prompt chunks with decode tokens under the
// step budget; cancellation, queue and KV limits, bad input, drain, logprobs and failed forwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <thread>

#include "model/make_model.h"
#include "runtime/generate.h"
#include "scripted_source.h"
#include "serve/energy_ledger.h"
#include "serve/prefix_cache.h"
#include "serve/logprobs.h"
#include "serve_test_util.h"

namespace plexus {
namespace {

using testing::Finished;
using testing::Gate;
using testing::kVocab;
using testing::read_all;
using testing::RecordingRunner;
using testing::TinyModel;
using testing::wait_for_stats;

ServeRequest request(std::vector<std::int32_t> prompt, std::int64_t max_tokens, bool greedy = true,
                     std::uint64_t seed = 0) {
  ServeRequest r;
  r.sampling.greedy = greedy;
  r.sampling.temperature = 1.5;
  r.sampling.seed = seed;
  r.max_tokens = max_tokens;
  r.prompt = std::move(prompt);
  return r;
}

std::vector<std::int32_t> alone(Runner& runner, const ServeRequest& r) {
  SequenceRequest s;
  s.prompt = r.prompt;
  s.max_tokens = r.max_tokens;
  s.sampling = r.sampling;
  return generate_batch(runner, {s}, r.stop_ids).sequences[0].ids;
}

TEST(Scheduler, EachRequestGetsItsOwnTokensWhateverArrivesBeside) {
  TinyModel model;
  std::vector<ServeRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    reqs.push_back(request(testing::some_ids(2 + (i * 5) % 19, kVocab, i + 1), 3 + (i * 7) % 9, i % 3 == 0,
                           static_cast<std::uint64_t>(100 + i)));
  }
  reqs.push_back(reqs[1]);  // the same request twice: the same tokens
  reqs.back().sampling.seed = 999;  // ... and another seed: others
  std::vector<std::vector<std::int32_t>> expected;
  for (const ServeRequest& r : reqs) expected.push_back(alone(*model.runner, r));

  for (const int max_sequences : {1, 4}) {
    SchedulerOptions o;
    o.max_sequences = max_sequences;
    o.step_tokens = 8;
    Scheduler scheduler(*model.runner, o, nullptr);
    std::vector<Finished> got(reqs.size());
    std::vector<std::thread> clients;
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      clients.emplace_back([&, i] {
        std::this_thread::sleep_for(std::chrono::milliseconds((i * 37) % 50));
        got[i] = read_all(*scheduler.submit(reqs[i]));
      });
    }
    for (std::thread& t : clients) t.join();
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(got[i].ids(), expected[i]) << "request " << i << ", max_sequences " << max_sequences;
      EXPECT_EQ(got[i].finish.reason, FinishReason::kLength);
      EXPECT_EQ(got[i].finish.completion_tokens, reqs[i].max_tokens);
      EXPECT_EQ(got[i].finish.prompt_tokens, static_cast<std::int64_t>(reqs[i].prompt.size()));
      EXPECT_GT(got[i].finish.ttft_s, 0);
      EXPECT_GE(got[i].finish.time_s, got[i].finish.ttft_s);
      EXPECT_GE(got[i].finish.ttft_s, got[i].finish.queue_s);
      EXPECT_FALSE(got[i].finish.energy_j.has_value());
      EXPECT_FALSE(got[i].tokens[0].logprob.has_value());
    }
    const SchedulerStats s = scheduler.stats();
    EXPECT_EQ(s.finished, static_cast<std::int64_t>(reqs.size()));
    EXPECT_EQ(s.running, 0);
    EXPECT_EQ(s.kv_used_tokens, 0);
  }
  EXPECT_NE(expected[1], expected.back());
}

TEST(Scheduler, StopIdEndsTheRequestCountedButNotSent) {
  TinyModel model;
  ServeRequest r = request(testing::some_ids(6, kVocab, 3), 8);
  const std::vector<std::int32_t> free_run = alone(*model.runner, r);
  r.stop_ids = {free_run[2]};
  const auto first = std::find(free_run.begin(), free_run.end(), free_run[2]) - free_run.begin();
  Scheduler scheduler(*model.runner, {}, nullptr);
  const Finished f = read_all(*scheduler.submit(r));
  EXPECT_EQ(f.finish.reason, FinishReason::kStop);
  EXPECT_EQ(f.ids(), std::vector<std::int32_t>(free_run.begin(), free_run.begin() + first));
  EXPECT_EQ(f.finish.completion_tokens, first + 1);  // the stop id counts, as vLLM counts the eos token
}

TEST(Scheduler, ContinuousBatchingMixesPrefillAndDecodeUnderTheStepBudget) {
  TinyModel model;
  RecordingRunner recording(*model.runner);
  Gate gate;
  recording.before_forward = [&](int index) {
    if (index == 3) gate.wait();
  };
  SchedulerOptions o;
  o.max_sequences = 4;
  o.step_tokens = 6;
  constexpr std::int64_t kMaxTokens = 12;
  Scheduler scheduler(recording, o, nullptr);
  std::vector<std::shared_ptr<RequestStream>> streams;
  streams.push_back(scheduler.submit(request(testing::some_ids(9, kVocab, 1), kMaxTokens)));
  // The others arrive while the first decodes (its prompt took two forwards, then one decode).
  ASSERT_TRUE(streams[0]->next(std::chrono::seconds(60)).has_value());
  ASSERT_TRUE(streams[0]->next(std::chrono::seconds(60)).has_value());
  for (int i = 0; i < 3; ++i) streams.push_back(scheduler.submit(request(testing::some_ids(7 + i, kVocab, 2 + i), kMaxTokens)));
  gate.open();
  for (auto& s : streams) EXPECT_EQ(read_all(*s).finish.reason, FinishReason::kLength);

  bool mixed = false, joined_while_decoding = false;
  std::set<int> decoded_slots;  // slots seen decoding so far
  for (const auto& fwd : recording.forwards()) {
    EXPECT_LE(static_cast<std::int64_t>(fwd.size()), o.step_tokens);
    bool prefill = false, decode = false, fresh = false;
    for (const testing::ForwardToken& t : fwd) {
      const std::int64_t prompt = t.capacity - kMaxTokens;
      if (t.pos < prompt) prefill = true;
      else decode = true;
      if (t.pos == 0) fresh = true;
    }
    mixed = mixed || (prefill && decode);
    if (fresh && decode) joined_while_decoding = true;
  }
  EXPECT_TRUE(mixed) << "no forward carried prompt chunks and decode tokens together";
  EXPECT_TRUE(joined_while_decoding) << "no request started its prompt while another decoded";
  EXPECT_EQ(recording.max_open(), 4);
}

TEST(Scheduler, CancelFreesTheSlotForAWaitingRequest) {
  TinyModel model;
  RecordingRunner recording(*model.runner);
  Gate decode;
  recording.before_forward = [&](int index) {
    if (index == 1) decode.wait();  // a's first decode step
  };
  SchedulerOptions o;
  o.max_sequences = 1;
  Scheduler scheduler(recording, o, nullptr);
  auto a = scheduler.submit(request(testing::some_ids(5, kVocab, 1), 200));
  ASSERT_TRUE(a->next(std::chrono::seconds(60)).has_value());  // a runs
  for (int i = 0; i < 6000 && recording.forwards().size() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(recording.forwards().size(), 2u);  // a's first decode step is under way (held)
  auto b = scheduler.submit(request(testing::some_ids(6, kVocab, 2), 3));
  EXPECT_EQ(scheduler.stats().waiting, 1);
  a->cancel();
  decode.open();
  const Finished fb = read_all(*b);
  EXPECT_EQ(fb.finish.reason, FinishReason::kLength);
  const Finished fa = read_all(*a);
  EXPECT_EQ(fa.finish.reason, FinishReason::kCancelled);
  EXPECT_EQ(fa.finish.completion_tokens, 2);  // the step under way when it was cancelled, no more
  const auto forwards = recording.forwards();
  ASSERT_GE(forwards.size(), 3u);
  EXPECT_EQ(forwards[2].size(), 6u);  // the next step: b's prompt alone, in a's freed place
  for (const testing::ForwardToken& t : forwards[2]) EXPECT_EQ(t.capacity, 9);
  const SchedulerStats s = scheduler.stats();
  EXPECT_EQ(s.cancelled, 1);
  EXPECT_EQ(s.finished, 1);
  EXPECT_EQ(s.running, 0);
  a->cancel();  // harmless after the finish

  // A waiting request cancelled before it runs.
  Gate gate;
  RecordingRunner held(*model.runner);
  held.before_forward = [&](int) { gate.wait(); };
  Scheduler second(held, o, nullptr);
  auto c = second.submit(request(testing::some_ids(5, kVocab, 3), 2));
  ASSERT_TRUE(wait_for_stats(second, [](const SchedulerStats& s) { return s.running == 1; }));
  auto d = second.submit(request(testing::some_ids(5, kVocab, 4), 2));
  d->cancel();  // ends at the next step
  EXPECT_FALSE(d->next(std::chrono::milliseconds(50)).has_value());
  gate.open();
  EXPECT_EQ(read_all(*d).finish.reason, FinishReason::kCancelled);
  EXPECT_EQ(read_all(*c).finish.reason, FinishReason::kLength);
  EXPECT_EQ(second.stats().cancelled, 1);
}

TEST(Scheduler, QueueLimitKvBudgetAndBadInput) {
  TinyModel model(16, 64);
  Gate gate;
  RecordingRunner held(*model.runner);
  held.before_forward = [&](int) { gate.wait(); };
  SchedulerOptions o;
  o.max_sequences = 4;
  o.max_queue = 2;
  o.kv_budget_tokens = 40;
  Scheduler scheduler(held, o, nullptr);
  EXPECT_EQ(scheduler.options().step_tokens, 16);
  std::vector<std::shared_ptr<RequestStream>> streams;
  // 20 KV tokens each: two fit the budget of 40 although four sequences may run. The first runs
  // (held in its forward), the next two wait, the fourth finds the queue full.
  streams.push_back(scheduler.submit(request(testing::some_ids(5, kVocab, 1), 15)));
  ASSERT_TRUE(wait_for_stats(scheduler, [](const SchedulerStats& s) { return s.running == 1; }));
  EXPECT_EQ(scheduler.stats().kv_used_tokens, 20);
  streams.push_back(scheduler.submit(request(testing::some_ids(5, kVocab, 2), 15)));
  streams.push_back(scheduler.submit(request(testing::some_ids(5, kVocab, 3), 15)));
  EXPECT_THROW(scheduler.submit(request(testing::some_ids(5, kVocab, 4), 15)), QueueFull);
  EXPECT_EQ(scheduler.stats().waiting, 2);

  const auto input_error = [&](ServeRequest r, const std::string& needle) {
    try {
      scheduler.submit(std::move(r));
      ADD_FAILURE() << "no InputError for " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  input_error(request({}, 4), "empty");
  input_error(request({1, static_cast<std::int32_t>(kVocab), 2}, 4), "prompt token 1 is id 300");
  input_error(request({1, -1}, 4), "id -1");
  input_error(request({1, 2}, -1), "max_tokens must be at least 0");
  input_error(request({1, 2}, 39), "budget of 40 tokens");
  o.kv_budget_tokens = 1000;
  Scheduler roomy(*model.runner, o, nullptr);
  try {
    roomy.submit(request({1, 2, 3}, 62));
    ADD_FAILURE() << "no InputError beyond the context";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("prompt (3 tokens) + max_tokens (62) exceeds the model's context of 64"),
              std::string::npos)
        << e.what();
  }
  gate.open();
  for (auto& s : streams) EXPECT_EQ(read_all(*s).finish.reason, FinishReason::kLength);
  EXPECT_EQ(held.max_open(), 2);  // the third waited for the budget, not for a sequence
  SchedulerOptions too_many;
  too_many.max_sequences = 17;  // more than the 16 tokens per forward
  EXPECT_THROW(Scheduler(*model.runner, too_many, nullptr), InputError);
}

TEST(Scheduler, OutOfMemoryWaitsForRunningRequestsOrFailsAlone) {
  TinyModel model;
  RecordingRunner tight(*model.runner);
  tight.max_slots = 2;
  SchedulerOptions o;
  o.max_sequences = 4;
  Scheduler scheduler(tight, o, nullptr);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 5; ++i) streams.push_back(scheduler.submit(request(testing::some_ids(5, kVocab, i), 6)));
  for (auto& s : streams) EXPECT_EQ(read_all(*s).finish.reason, FinishReason::kLength);
  EXPECT_EQ(tight.max_open(), 2);

  RecordingRunner none(*model.runner);
  none.max_slots = 0;
  Scheduler hopeless(none, o, nullptr);
  const Finished f = read_all(*hopeless.submit(request(testing::some_ids(5, kVocab, 1), 6)));
  EXPECT_EQ(f.finish.reason, FinishReason::kError);
  EXPECT_NE(f.finish.error.find("out of memory"), std::string::npos) << f.finish.error;
  EXPECT_EQ(hopeless.stats().failed, 1);
}

TEST(Scheduler, DrainFinishesRunningCancelsWaitingThenRefuses) {
  TinyModel model;
  Gate gate;
  RecordingRunner held(*model.runner);
  held.before_forward = [&](int) { gate.wait(); };
  SchedulerOptions o;
  o.max_sequences = 1;
  Scheduler scheduler(held, o, nullptr);
  auto a = scheduler.submit(request(testing::some_ids(5, kVocab, 1), 5));
  ASSERT_TRUE(wait_for_stats(scheduler, [](const SchedulerStats& s) { return s.running == 1; }));
  auto b = scheduler.submit(request(testing::some_ids(5, kVocab, 2), 5));
  std::thread drainer([&] { scheduler.drain(std::chrono::seconds(60)); });
  EXPECT_EQ(read_all(*b).finish.reason, FinishReason::kCancelled);
  gate.open();
  const Finished fa = read_all(*a);
  EXPECT_EQ(fa.finish.reason, FinishReason::kLength);
  EXPECT_EQ(fa.tokens.size(), 5u);
  drainer.join();
  EXPECT_THROW(scheduler.submit(request(testing::some_ids(5, kVocab, 3), 5)), ShuttingDown);

  // With no time left, running requests end cancelled.
  RecordingRunner slow(*model.runner);
  Gate second_step;
  slow.before_forward = [&](int index) {
    if (index == 1) second_step.wait();
  };
  Scheduler quick(slow, o, nullptr);
  auto c = quick.submit(request(testing::some_ids(5, kVocab, 4), 240));
  ASSERT_TRUE(c->next(std::chrono::seconds(60)).has_value());
  std::thread quick_drainer([&] { quick.drain(std::chrono::milliseconds(0)); });
  for (bool refused = false; !refused;) {  // until the drain began
    try {
      quick.submit(request({1}, 1))->cancel();
    } catch (const ShuttingDown&) {
      refused = true;
    } catch (const QueueFull&) {
    }
  }
  second_step.open();
  quick_drainer.join();
  const Finished fc = read_all(*c);
  EXPECT_EQ(fc.finish.reason, FinishReason::kCancelled);
  EXPECT_LE(fc.finish.completion_tokens, 2);  // the step under way, if any, and no more
}

TEST(Scheduler, LogprobsAreTheLogSoftmaxOfTheRawLogits) {
  TinyModel model;
  ServeRequest r = request(testing::some_ids(7, kVocab, 5), 2, /*greedy=*/true);
  r.top_logprobs = 3;
  ServeRequest sampled = request(testing::some_ids(7, kVocab, 5), 1, /*greedy=*/false, 3);
  sampled.sampling.temperature = 5;  // logprobs stay those of the raw logits
  sampled.top_logprobs = 0;
  // The logits of the prompt's last token, alone.
  const int slot = model.runner->open_sequence(16);
  std::vector<std::int32_t> pos(r.prompt.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
  std::vector<int> seq(r.prompt.size(), slot);
  const std::int64_t row = static_cast<std::int64_t>(r.prompt.size()) - 1;
  std::vector<float> logits(kVocab);
  model.runner->forward(SlotBatch{r.prompt, pos, seq}, std::span<const std::int64_t>(&row, 1), logits.data());
  model.runner->close_sequence(slot);
  double max = -1e30, sum = 0;
  for (float v : logits) max = std::max(max, static_cast<double>(v));
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  const auto logprob = [&](std::int32_t id) { return static_cast<double>(logits[id]) - max - std::log(sum); };

  Scheduler scheduler(*model.runner, {}, nullptr);
  auto s1 = scheduler.submit(r);
  auto s2 = scheduler.submit(sampled);
  const Finished f = read_all(*s1);
  const Finished g = read_all(*s2);
  ASSERT_EQ(f.tokens.size(), 2u);
  const TokenEvent& t = f.tokens[0];
  EXPECT_EQ(t.id, argmax(logits.data(), kVocab));
  ASSERT_TRUE(t.logprob.has_value());
  EXPECT_NEAR(*t.logprob, -std::log(sum), 1e-5);  // the greedy token's logit is the max
  ASSERT_EQ(t.top.size(), 3u);
  EXPECT_EQ(t.top[0].first, t.id);
  EXPECT_FLOAT_EQ(t.top[0].second, *t.logprob);
  EXPECT_GE(t.top[0].second, t.top[1].second);
  EXPECT_GE(t.top[1].second, t.top[2].second);
  EXPECT_NEAR(t.top[2].second, logprob(t.top[2].first), 1e-5);
  ASSERT_EQ(g.tokens.size(), 1u);
  ASSERT_TRUE(g.tokens[0].logprob.has_value());
  EXPECT_NEAR(*g.tokens[0].logprob, logprob(g.tokens[0].id), 1e-5);
  EXPECT_TRUE(g.tokens[0].top.empty());
}

TEST(Scheduler, AFailedForwardFailsItsRequestsAndTheServerGoesOn) {
  TinyModel model;
  RecordingRunner failing(*model.runner);
  failing.before_forward = [](int index) {
    if (index == 2) throw RuntimeError("device lost");
  };
  Scheduler scheduler(failing, {}, nullptr);
  const Finished f = read_all(*scheduler.submit(request(testing::some_ids(5, kVocab, 1), 10)));
  EXPECT_EQ(f.finish.reason, FinishReason::kError);
  EXPECT_NE(f.finish.error.find("device lost"), std::string::npos) << f.finish.error;
  EXPECT_EQ(f.tokens.size(), 2u);
  const Finished g = read_all(*scheduler.submit(request(testing::some_ids(5, kVocab, 2), 3)));
  EXPECT_EQ(g.finish.reason, FinishReason::kLength);
  EXPECT_EQ(scheduler.stats().failed, 1);
  EXPECT_EQ(scheduler.stats().running, 0);
}

TEST(Scheduler, RequestsEnergyAddsUpToTheStepsEnergy) {
  TinyModel model;
  EnergyLedger ledger(testing::scripted({{80, false, false}}), 2);
  SchedulerOptions o;
  o.max_sequences = 3;
  o.step_tokens = 8;
  Scheduler scheduler(*model.runner, o, &ledger);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 3; ++i) streams.push_back(scheduler.submit(request(testing::some_ids(4 + 3 * i, kVocab, i), 4 + i)));
  double sum = 0;
  for (auto& s : streams) {
    const Finished f = read_all(*s);
    EXPECT_EQ(f.finish.reason, FinishReason::kLength);
    ASSERT_TRUE(f.finish.energy_j.has_value());
    EXPECT_GT(*f.finish.energy_j, 0);
    sum += *f.finish.energy_j;
  }
  // Every step's energy is 80 W × its duration, all of it shared out.
  EXPECT_NEAR(sum, 80 * scheduler.stats().busy_s, 1e-6);
  EXPECT_NEAR(*ledger.attributed_j(), sum, 1e-9);
}

// n choices: the prompt runs through the model once (for the first choice's slot), its KV cache
// is copied into the others' slots, and each choice's tokens are those of a request alone with
// the choice's seed — distinct choices, the same ones again for the same seed. Greedy choices
// are all the greedy completion; more choices than --max-sequences is a 400.
TEST(Scheduler, ChoicesShareThePromptsPrefillAndEachIsItsOwnSeededGeneration) {
  TinyModel model;
  RecordingRunner rec(*model.runner);
  SchedulerOptions o;
  o.max_sequences = 4;
  o.step_tokens = 8;  // the 13-token prompt takes two steps
  Scheduler scheduler(rec, o, nullptr);
  ServeRequest r = request(testing::some_ids(13, kVocab, 5), 6, /*greedy=*/false, 7);
  r.choices = 3;
  std::vector<std::vector<std::int32_t>> expected;
  for (int i = 0; i < r.choices; ++i) {
    ServeRequest one = r;
    one.choices = 1;
    one.sampling.seed = choice_seed(r.sampling.seed, i);
    expected.push_back(alone(*model.runner, one));
  }
  EXPECT_EQ(choice_seed(7, 0), 7u);
  EXPECT_TRUE(expected[0] != expected[1] || expected[1] != expected[2]) << "the choices' seeds gave the same tokens";
  const std::vector<Finished> got = testing::read_choices(*scheduler.submit(r), r.choices);
  for (int i = 0; i < r.choices; ++i) {
    EXPECT_EQ(got[static_cast<std::size_t>(i)].ids(), expected[static_cast<std::size_t>(i)]) << "choice " << i;
    EXPECT_EQ(got[static_cast<std::size_t>(i)].finish.reason, FinishReason::kLength);
    EXPECT_EQ(got[static_cast<std::size_t>(i)].finish.completion_tokens, 6);
  }
  std::int64_t prompt_positions = 0;  // prompt tokens run, over every slot
  for (const auto& f : rec.forwards()) {
    for (const testing::ForwardToken& t : f) prompt_positions += t.pos < 13;
  }
  EXPECT_EQ(prompt_positions, 13) << "the prompt should run once, for all the choices";
  const auto copies = rec.copies();
  ASSERT_EQ(copies.size(), 2u);
  for (const auto& c : copies) EXPECT_EQ(c.tokens, 13);
  // The same seed again: the same choices.
  const std::vector<Finished> again = testing::read_choices(*scheduler.submit(r), r.choices);
  for (int i = 0; i < r.choices; ++i) EXPECT_EQ(again[static_cast<std::size_t>(i)].ids(), expected[static_cast<std::size_t>(i)]);

  ServeRequest g = request(testing::some_ids(5, kVocab, 9), 5);
  const std::vector<std::int32_t> greedy = alone(*model.runner, g);
  g.choices = 2;
  for (const Finished& f : testing::read_choices(*scheduler.submit(g), 2)) EXPECT_EQ(f.ids(), greedy);

  r.choices = 5;
  EXPECT_THROW(scheduler.submit(r), InputError);
}

// A stop string matched in one choice (the API cancels that choice mid-generation) ends it
// alone; the others run to max_tokens. The 4th forward waits until the test has cancelled, so
// the cancel always comes mid-generation, however fast the tiny model runs.
TEST(Scheduler, CancellingOneChoiceLeavesTheOthersRunning) {
  TinyModel model;
  RecordingRunner rec(*model.runner);
  Gate gate;
  rec.before_forward = [&](int index) {
    if (index == 3) gate.wait();
  };
  SchedulerOptions o;
  o.max_sequences = 4;
  Scheduler scheduler(rec, o, nullptr);
  ServeRequest r = request(testing::some_ids(4, kVocab, 3), 40);
  r.choices = 3;
  auto stream = scheduler.submit(r);
  std::vector<Finished> got(3);
  int finished = 0;
  bool cancelled = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (finished < 3 && std::chrono::steady_clock::now() < deadline) {
    auto event = stream->next(std::chrono::milliseconds(100));
    if (!event) continue;
    if (auto* t = std::get_if<TokenEvent>(&*event)) {
      got[static_cast<std::size_t>(t->index)].tokens.push_back(*t);
      if (t->index == 1 && !cancelled) {  // choice 1's first token (forward 0): cancel it, then let forward 3 run
        stream->cancel_choice(1);
        cancelled = true;
        gate.open();
      }
      continue;
    }
    const FinishEvent& f = std::get<FinishEvent>(*event);
    got[static_cast<std::size_t>(f.index)].finish = f;
    ++finished;
  }
  gate.open();
  ASSERT_EQ(finished, 3);
  EXPECT_EQ(got[1].finish.reason, FinishReason::kCancelled);
  EXPECT_LT(got[1].ids().size(), 40u);
  EXPECT_EQ(got[0].finish.reason, FinishReason::kLength);
  EXPECT_EQ(got[2].finish.reason, FinishReason::kLength);
  EXPECT_EQ(got[0].ids().size(), 40u);
  EXPECT_EQ(got[2].ids().size(), 40u);
  EXPECT_TRUE(wait_for_stats(scheduler, [](const SchedulerStats& s) { return s.running == 0; }));
}

// Penalties and logit_bias reach the sampler: a request with them gives the tokens of a request
// alone with the same options (generate's sampler), not those of plain greedy decoding.
TEST(Scheduler, PenaltiesAndLogitBiasApplyToServedRequests) {
  TinyModel model;
  Scheduler scheduler(*model.runner, SchedulerOptions{}, nullptr);
  ServeRequest plain = request(testing::some_ids(6, kVocab, 4), 12);
  ServeRequest penalized = plain;
  penalized.sampling.frequency_penalty = 1.5;
  penalized.sampling.repetition_penalty = 1.3;
  penalized.sampling.logit_bias = {{3, 4.0f}};
  const std::vector<std::int32_t> want = alone(*model.runner, penalized);
  EXPECT_NE(want, alone(*model.runner, plain));
  EXPECT_EQ(read_all(*scheduler.submit(penalized)).ids(), want);
  ServeRequest banned = plain;
  for (std::int32_t id = 0; id < kVocab; id += 2) banned.sampling.logit_bias.emplace_back(id, -100.0f);
  for (std::int32_t id : read_all(*scheduler.submit(banned)).ids()) EXPECT_EQ(id % 2, 1) << "a token biased by -100";
}

// A shared start (a system prompt) followed by each request's own tokens.
std::vector<std::int32_t> with_prefix(const std::vector<std::int32_t>& prefix, int own, int salt) {
  std::vector<std::int32_t> p = prefix;
  const std::vector<std::int32_t> tail = testing::some_ids(own, kVocab, salt);
  p.insert(p.end(), tail.begin(), tail.end());
  return p;
}

TEST(Scheduler, CachedPrefixesGiveTheSameTokensWithoutRunningThePrefixAgain) {
  TinyModel model;
  const std::vector<std::int32_t> system = testing::some_ids(70, kVocab, 41);
  std::vector<ServeRequest> reqs;
  for (int i = 0; i < 6; ++i) {
    reqs.push_back(request(with_prefix(system, 3 + i, 50 + i), 5, i % 2 == 0, static_cast<std::uint64_t>(7 + i)));
  }
  reqs.push_back(reqs[0]);  // the same prompt again: all but its last block comes from the cache
  std::vector<std::vector<std::int32_t>> expected;
  for (const ServeRequest& r : reqs) expected.push_back(alone(*model.runner, r));

  RecordingRunner recording(*model.runner);
  SchedulerOptions o;
  o.max_sequences = 2;
  o.step_tokens = 16;
  Scheduler scheduler(recording, o, nullptr);
  // One at a time: each finds the ones before it finished and cached.
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const Finished f = read_all(*scheduler.submit(reqs[i]));
    EXPECT_EQ(f.ids(), expected[i]) << "request " << i;
    EXPECT_EQ(f.finish.prompt_tokens, static_cast<std::int64_t>(reqs[i].prompt.size()));
  }
  const std::int64_t B = PrefixCache::kBlockTokens;
  const SchedulerStats st = scheduler.stats();
  EXPECT_EQ(st.prefix_misses, 1);
  EXPECT_EQ(st.prefix_hits, 6);
  // Requests 1-5 reuse the system prompt's 4 whole blocks; request 6 (request 0's 73 tokens again) 4 as well.
  EXPECT_EQ(st.prefix_hit_tokens, 6 * (70 / B) * B);
  // Only the first request ran the shared positions; each later one starts at the cached prefix.
  std::int64_t run_prompt_positions = 0;
  for (const auto& fwd : recording.forwards()) {
    for (const testing::ForwardToken& t : fwd) {
      if (t.pos < (70 / B) * B) ++run_prompt_positions;
    }
  }
  EXPECT_EQ(run_prompt_positions, (70 / B) * B);
  EXPECT_EQ(recording.copies().size(), 6u);
  for (const auto& c : recording.copies()) EXPECT_EQ(c.tokens, (70 / B) * B);
  // Scoring the prompt (prompt_logprobs) needs every prompt position's logits: no cached prefix.
  ServeRequest scored = reqs[0];
  scored.prompt_logprobs = 0;
  const Finished f = read_all(*scheduler.submit(scored));
  EXPECT_EQ(f.finish.reason, FinishReason::kLength);
  EXPECT_EQ(scheduler.stats().prefix_hits, 6);
  EXPECT_EQ(recording.copies().size(), 6u);

  // Without the cache: the same tokens, every prompt run whole.
  o.prefix_cache = false;
  RecordingRunner plain(*model.runner);
  Scheduler uncached(plain, o, nullptr);
  for (std::size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(read_all(*uncached.submit(reqs[i])).ids(), expected[i]);
  EXPECT_EQ(uncached.stats().prefix_hits + uncached.stats().prefix_misses, 0);
  EXPECT_TRUE(plain.copies().empty());
}

TEST(Scheduler, CachedPrefixesMakeRoomUnderTheKvBudgetAndMemory) {
  TinyModel model;
  // Room for two running requests of 60 + 4 tokens: every cached prefix beyond that is evicted,
  // and a runner out of slots gets its room from the cache first.
  RecordingRunner tight(*model.runner);
  tight.max_slots = 3;
  SchedulerOptions o;
  o.max_sequences = 2;
  o.kv_budget_tokens = 2 * 64;
  Scheduler scheduler(tight, o, nullptr);
  std::vector<ServeRequest> reqs;
  for (int i = 0; i < 8; ++i) reqs.push_back(request(testing::some_ids(60, kVocab, 100 + i % 4), 4));
  std::vector<std::vector<std::int32_t>> expected;
  for (const ServeRequest& r : reqs) expected.push_back(alone(*model.runner, r));
  std::vector<Finished> got(reqs.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    clients.emplace_back([&, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds((i * 13) % 40));
      got[i] = read_all(*scheduler.submit(reqs[i]));
    });
  }
  for (std::thread& t : clients) t.join();
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(got[i].finish.reason, FinishReason::kLength) << got[i].finish.error;
    EXPECT_EQ(got[i].ids(), expected[i]) << "request " << i;
  }
  ASSERT_TRUE(wait_for_stats(scheduler, [](const SchedulerStats& s) { return s.running == 0; }));
  const SchedulerStats st = scheduler.stats();
  EXPECT_EQ(st.prefix_hits + st.prefix_misses, 8);
  EXPECT_GT(st.prefix_evictions, 0);
  EXPECT_LE(st.kv_used_tokens + st.prefix_cached_tokens, o.kv_budget_tokens);
  EXPECT_LE(tight.max_open(), 3);
}

// prompt_logprobs: one event per prompt position from the second, before the first generated
// token, each the log-softmax of that position's logits row as a plain forward of the prompt
// alone gives it (all rows asked for); a 100-token prompt goes through in chunks of
// kPromptLogprobRows, the tokens generated after it are those of the request without
// prompt_logprobs, and a plain request beside it is unchanged.
TEST(Scheduler, PromptLogprobsAreThePrefillsRowsInOrder) {
  TinyModel model(/*max_batch_tokens=*/128);
  constexpr int kTop = 3;
  const std::vector<std::int32_t> prompt = testing::some_ids(100, kVocab, 21);
  // The reference: the prompt alone, 16-token chunks, a logits row for every position.
  std::vector<TokenEvent> want;
  {
    Runner& r = *model.runner;
    const int slot = r.open_sequence(static_cast<std::int64_t>(prompt.size()));
    std::vector<float> logits(16 * static_cast<std::size_t>(kVocab));
    for (std::size_t off = 0; off < prompt.size(); off += 16) {
      const std::size_t n = std::min<std::size_t>(16, prompt.size() - off);
      std::vector<std::int32_t> pos(n);
      std::vector<int> seq(n, slot);
      std::vector<std::int64_t> rows(n);
      for (std::size_t i = 0; i < n; ++i) pos[i] = static_cast<std::int32_t>(off + i), rows[i] = static_cast<std::int64_t>(i);
      r.forward(SlotBatch{std::span(prompt).subspan(off, n), pos, seq}, rows, logits.data());
      for (std::size_t i = 0; i < n && off + i + 1 < prompt.size(); ++i) {
        want.push_back(token_event(logits.data() + i * kVocab, kVocab, prompt[off + i + 1], kTop));
      }
    }
    r.close_sequence(slot);
  }
  ServeRequest plain = request(testing::some_ids(7, kVocab, 2), 5);
  const std::vector<std::int32_t> plain_ids = alone(*model.runner, plain);
  ServeRequest scored = request(prompt, 4);
  const std::vector<std::int32_t> scored_ids = alone(*model.runner, scored);
  scored.prompt_logprobs = kTop;
  scored.choices = 2;

  RecordingRunner rec(*model.runner);
  SchedulerOptions o;
  o.max_sequences = 4;
  Scheduler scheduler(rec, o, nullptr);
  auto s1 = scheduler.submit(scored);
  auto s2 = scheduler.submit(plain);
  const std::vector<Finished> got = testing::read_choices(*s1, 2);
  EXPECT_EQ(read_all(*s2).ids(), plain_ids);
  std::vector<TokenEvent> prompt_events;
  for (const TokenEvent& t : got[0].tokens) {
    if (t.prompt_position >= 0) {
      EXPECT_EQ(t.prompt_position, static_cast<std::int64_t>(prompt_events.size()) + 1) << "prompt positions out of order";
      EXPECT_EQ(&t - got[0].tokens.data(), static_cast<std::ptrdiff_t>(prompt_events.size())) << "a prompt event after a generated token";
      prompt_events.push_back(t);
    }
  }
  for (const TokenEvent& t : got[1].tokens) EXPECT_LT(t.prompt_position, 0) << "the prompt is scored once, by the first choice";
  ASSERT_EQ(prompt_events.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(prompt_events[i].prompt_position, static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(prompt_events[i].id, prompt[i + 1]);
    ASSERT_TRUE(prompt_events[i].logprob.has_value());
    EXPECT_NEAR(*prompt_events[i].logprob, *want[i].logprob, 1e-4) << "position " << i + 1;
    ASSERT_EQ(prompt_events[i].top.size(), static_cast<std::size_t>(kTop));
    for (int k = 0; k < kTop; ++k) EXPECT_EQ(prompt_events[i].top[static_cast<std::size_t>(k)].first, want[i].top[static_cast<std::size_t>(k)].first);
  }
  EXPECT_EQ(got[0].ids(), scored_ids);
  EXPECT_EQ(got[1].ids(), scored_ids) << "greedy choices";
  // The scored prompt's prefill chunks: none longer than kPromptLogprobRows.
  std::int64_t longest = 0;
  for (const auto& f : rec.forwards()) {
    std::int64_t prompt_tokens = 0;
    for (const testing::ForwardToken& t : f) prompt_tokens += t.capacity == 104 && t.pos < 100;
    longest = std::max(longest, prompt_tokens);
  }
  EXPECT_EQ(longest, kPromptLogprobRows);

  // max_tokens 0: the prompt scored and nothing generated, for each choice (kLength); two scored
  // prompts prefilling together share the kPromptLogprobRows rows of a step.
  ServeRequest only = request(prompt, 0);
  only.prompt_logprobs = kTop;
  only.choices = 2;
  ServeRequest other = request(testing::some_ids(90, kVocab, 8), 2);
  other.prompt_logprobs = 0;
  const std::size_t forwards_before = rec.forwards().size();
  auto so = scheduler.submit(only);
  auto sp = scheduler.submit(other);
  const std::vector<Finished> scored_only = testing::read_choices(*so, 2);
  const Finished other_done = read_all(*sp);
  for (const Finished& f : scored_only) {
    EXPECT_EQ(f.finish.reason, FinishReason::kLength);
    EXPECT_EQ(f.finish.completion_tokens, 0);
    EXPECT_TRUE(f.ids().empty());
  }
  std::size_t scored_events = 0;
  for (const TokenEvent& t : scored_only[0].tokens) {
    ASSERT_GE(t.prompt_position, 1);
    EXPECT_NEAR(*t.logprob, *want[static_cast<std::size_t>(t.prompt_position - 1)].logprob, 1e-4);
    ++scored_events;
  }
  EXPECT_EQ(scored_events, prompt.size() - 1);
  EXPECT_EQ(other_done.ids().size(), 2u);
  EXPECT_EQ(other_done.tokens.size(), 89u + 2u) << "89 prompt positions scored, then 2 tokens";
  const auto all = rec.forwards();
  for (std::size_t f = forwards_before; f < all.size(); ++f) {
    std::int64_t scored_tokens = 0;
    for (const testing::ForwardToken& t : all[f]) scored_tokens += (t.capacity == 100 && t.pos < 100) || (t.capacity == 92 && t.pos < 90);
    EXPECT_LE(scored_tokens, kPromptLogprobRows) << "forward " << f;
  }
}

// Not a check: prints the aggregate rate of 16 concurrent requests with 16 sequences in the
// running batch against 1, on the tiny and the small random model (run with
// --gtest_also_run_disabled_tests --gtest_filter=*Throughput*).
// Allows only ids divisible by `step`, and records what it accepted.
class EveryNth : public TokenConstraint {
 public:
  EveryNth(std::int64_t vocab, int step, std::vector<std::int32_t>* accepted) : vocab_(vocab), step_(step), accepted_(accepted) {}
  bool mask(float* logits) override {
    for (std::int64_t i = 0; i < vocab_; ++i) {
      if (i % step_ != 0) logits[i] = -std::numeric_limits<float>::infinity();
    }
    return true;
  }
  void accept(std::int32_t id) override { accepted_->push_back(id); }

 private:
  std::int64_t vocab_;
  int step_;
  std::vector<std::int32_t>* accepted_;
};

TEST(Scheduler, AConstraintMasksEveryChoicesRowsAndFollowsItsTokens) {
  TinyModel model;
  SchedulerOptions o;
  o.max_sequences = 4;
  Scheduler scheduler(*model.runner, o, nullptr);
  std::vector<std::vector<std::int32_t>> accepted(3);
  int made = 0;
  ServeRequest r = request(testing::some_ids(9, kVocab, 5), 12, /*greedy=*/false, 77);
  r.choices = 3;
  r.constraint = [&] { return std::make_unique<EveryNth>(kVocab, 7, &accepted[static_cast<std::size_t>(made++)]); };
  ServeRequest plain = request(testing::some_ids(9, kVocab, 5), 12, false, 77);  // beside it, unconstrained
  auto constrained_stream = scheduler.submit(r);
  auto plain_stream = scheduler.submit(plain);
  const std::vector<Finished> got = testing::read_choices(*constrained_stream, 3);
  const Finished free = read_all(*plain_stream);
  EXPECT_EQ(made, 3);
  for (std::size_t c = 0; c < 3; ++c) {
    ASSERT_EQ(got[c].ids().size(), 12u);
    for (std::int32_t id : got[c].ids()) EXPECT_EQ(id % 7, 0) << "choice " << c;
    EXPECT_EQ(accepted[c], got[c].ids()) << "choice " << c;  // each choice's own state followed its own tokens
  }
  bool any_other = false;
  for (std::int32_t id : free.ids()) any_other = any_other || id % 7 != 0;
  EXPECT_TRUE(any_other) << "the unconstrained request beside it was masked too";
  EXPECT_EQ(free.ids(), alone(*model.runner, plain));
}

TEST(Scheduler, DISABLED_ThroughputOfSixteenConcurrentRequests) {
  for (const std::string preset : {"tiny", "small"}) {
    testing::TempDir dir("serve_throughput");
    MakeModelOptions mo;
    mo.preset = preset;
    mo.vocab_size = kVocab;
    write_random_model(dir.path(), mo);
    EngineOptions eo;
    eo.threads = 1;
    eo.max_context = 256;
    Engine engine(dir.path(), eo);
    EngineRunner runner(engine);
    const std::int64_t max_tokens = preset == "tiny" ? 64 : 16;
    for (const int max_sequences : {1, 16}) {
      SchedulerOptions o;
      o.max_sequences = max_sequences;
      Scheduler scheduler(runner, o, nullptr);
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::shared_ptr<RequestStream>> streams;
      for (int i = 0; i < 16; ++i) streams.push_back(scheduler.submit(request(testing::some_ids(16, kVocab, i), max_tokens)));
      std::int64_t tokens = 0;
      for (auto& s : streams) tokens += read_all(*s).finish.completion_tokens;
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("%s, max_sequences %2d: %lld tokens in %.3f s = %.1f tokens/s (%lld steps)\n", preset.c_str(),
                  max_sequences, static_cast<long long>(tokens), wall, static_cast<double>(tokens) / wall,
                  static_cast<long long>(scheduler.stats().steps));
    }
  }
}

}  // namespace
}  // namespace plexus
