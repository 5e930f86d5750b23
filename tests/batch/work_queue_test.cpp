// The dynamic queue: sharing, retries on another replica, replicas taken out, final failures.
#include <gtest/gtest.h>

#include <thread>

#include "batch/fault_injection.h"
#include "batch/work_queue.h"
#include "core/error.h"

namespace plexus::batch {
namespace {

std::vector<std::size_t> iota(std::size_t n) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(BatchWorkQueue, SpreadsTheRemainingWorkOverLiveReplicas) {
  WorkQueue q(iota(6), QueueOptions{2, 2, 3});
  std::vector<std::size_t> got;
  EXPECT_EQ(q.try_take(0, 8, &got), WorkQueue::Take::kWork);
  EXPECT_EQ(got, (std::vector<std::size_t>{0, 1, 2}));  // half of 6, not all 8 asked for
  EXPECT_EQ(q.try_take(1, 2, &got), WorkQueue::Take::kWork);
  EXPECT_EQ(got, (std::vector<std::size_t>{3, 4}));
  EXPECT_EQ(q.try_take(1, 2, &got), WorkQueue::Take::kWork);
  EXPECT_EQ(got, (std::vector<std::size_t>{5}));
  EXPECT_EQ(q.try_take(1, 2, &got), WorkQueue::Take::kWait);  // others still running
  for (std::size_t i = 0; i < 3; ++i) q.succeeded(0, i);
  for (std::size_t i = 3; i < 6; ++i) q.succeeded(1, i);
  EXPECT_TRUE(q.finished());
  EXPECT_EQ(q.try_take(1, 2, &got), WorkQueue::Take::kDone);
}

TEST(BatchWorkQueue, RetriesOnAnotherReplicaThenFailsForGood) {
  WorkQueue q(iota(2), QueueOptions{2, 2, 10});
  std::vector<std::size_t> got;
  ASSERT_EQ(q.try_take(0, 1, &got), WorkQueue::Take::kWork);
  ASSERT_EQ(got[0], 0u);
  EXPECT_TRUE(q.failed(0, 0, "boom", false));
  // Replica 0 is not given request 0 again while replica 1 has not tried it.
  ASSERT_EQ(q.try_take(0, 2, &got), WorkQueue::Take::kWork);
  EXPECT_EQ(got, (std::vector<std::size_t>{1}));
  q.succeeded(0, 1);
  EXPECT_EQ(q.try_take(0, 2, &got), WorkQueue::Take::kWait);
  ASSERT_EQ(q.try_take(1, 2, &got), WorkQueue::Take::kWork);
  EXPECT_EQ(got, (std::vector<std::size_t>{0}));
  EXPECT_TRUE(q.failed(1, 0, "boom again", false));
  // Both have failed it: either may try the last time.
  ASSERT_EQ(q.try_take(0, 2, &got), WorkQueue::Take::kWork);
  EXPECT_FALSE(q.failed(0, 0, "third", false));
  const std::vector<FinalFailure> f = q.drain_failures();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].index, 0u);
  EXPECT_EQ(f[0].attempts, 3);
  EXPECT_EQ(f[0].reason, "third");
  EXPECT_EQ(q.retries(), 2);
  EXPECT_TRUE(q.finished());
}

TEST(BatchWorkQueue, PermanentFailuresAreNotRetried) {
  WorkQueue q(iota(1), QueueOptions{2, 2, 3});
  std::vector<std::size_t> got;
  q.try_take(0, 1, &got);
  EXPECT_FALSE(q.failed(0, 0, "too long", true));
  EXPECT_EQ(q.drain_failures().size(), 1u);
  EXPECT_TRUE(q.live(0));
}

TEST(BatchWorkQueue, AReplicaThatKeepsFailingIsTakenOut) {
  WorkQueue q(iota(4), QueueOptions{2, 5, 2});
  std::vector<std::size_t> got;
  ASSERT_EQ(q.try_take(1, 2, &got), WorkQueue::Take::kWork);
  q.failed(1, got[0], "x", false);
  EXPECT_TRUE(q.live(1));
  q.failed(1, got[1], "x", false);
  EXPECT_FALSE(q.live(1));
  EXPECT_EQ(q.removed(), (std::vector<int>{1}));
  EXPECT_EQ(q.try_take(1, 2, &got), WorkQueue::Take::kDone);
  // The rest goes to replica 0, including what failed on 1.
  std::size_t done = 0;
  while (q.try_take(0, 8, &got) == WorkQueue::Take::kWork) {
    for (std::size_t i : got) q.succeeded(0, i), ++done;
  }
  EXPECT_EQ(done, 4u);
  EXPECT_TRUE(q.drain_failures().empty());
}

TEST(BatchWorkQueue, TheLastReplicaStaysAndRequestsUseTheirOwnTries) {
  WorkQueue q(iota(2), QueueOptions{1, 1, 1});
  std::vector<std::size_t> got;
  int tries = 0;
  while (q.try_take(0, 1, &got) == WorkQueue::Take::kWork) {
    ++tries;
    q.failed(0, got[0], "broken", false);
  }
  EXPECT_TRUE(q.live(0));
  EXPECT_EQ(tries, 4);  // 2 requests x (1 + 1 retry)
  EXPECT_EQ(q.drain_failures().size(), 2u);
  EXPECT_TRUE(q.finished());
}

TEST(BatchWorkQueue, NoReplicaLeftFailsEverythingQueued) {
  WorkQueue none(iota(2), QueueOptions{2, 2, 3});
  none.remove_replica(0, "could not start");
  EXPECT_TRUE(none.drain_failures().empty());
  none.remove_replica(1, "could not start");
  const std::vector<FinalFailure> f = none.drain_failures();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_NE(f[0].reason.find("no replica left (could not start)"), std::string::npos);
  EXPECT_TRUE(none.finished());
}

TEST(BatchWorkQueue, BlockingTakeWakesWhenWorkComesBack) {
  WorkQueue q(iota(1), QueueOptions{2, 2, 3});
  std::vector<std::size_t> got;
  ASSERT_EQ(q.try_take(0, 1, &got), WorkQueue::Take::kWork);
  std::vector<std::size_t> taken;
  std::thread t([&] { taken = q.take(1, 4); });
  q.failed(0, 0, "retry me", false);
  t.join();
  EXPECT_EQ(taken, (std::vector<std::size_t>{0}));
  q.succeeded(1, 0);
  EXPECT_TRUE(q.take(1, 4).empty());
}

TEST(BatchWorkQueue, CancelEndsEveryReplicaAtOnce) {
  WorkQueue q(iota(4), QueueOptions{2, 2, 3});
  std::vector<std::size_t> got;
  ASSERT_EQ(q.try_take(0, 1, &got), WorkQueue::Take::kWork);
  std::vector<std::size_t> taken = {99};
  std::thread t([&] {
    std::vector<std::size_t> mine;
    while (q.try_take(1, 1, &mine) == WorkQueue::Take::kWork) {
    }  // drain the queue, then block below until cancelled
    taken = q.take(1, 1);
  });
  q.cancel();
  t.join();
  EXPECT_TRUE(taken.empty());
  EXPECT_EQ(q.try_take(0, 1, &got), WorkQueue::Take::kDone);
  EXPECT_TRUE(q.drain_failures().empty());
}

TEST(BatchFaultInjection, Parses) {
  const FaultInjection f = parse_fault_injection("replica=1,id=foo,id=7,kill_after=3");
  EXPECT_EQ(f.replicas, (std::set<int>{1}));
  EXPECT_EQ(f.ids, (std::set<std::string>{"foo", "7"}));
  EXPECT_EQ(f.kill_after, 3);
  EXPECT_FALSE(parse_fault_injection("").any());
  EXPECT_THROW(parse_fault_injection("replica=x"), InputError);
  EXPECT_THROW(parse_fault_injection("explode=1"), InputError);
  EXPECT_EQ(fault_id_text("\"foo\""), "foo");
  EXPECT_EQ(fault_id_text("7"), "7");
}

}  // namespace
}  // namespace plexus::batch
