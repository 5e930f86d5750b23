// The fork-join pool covers every index exactly once, many times in a row, under every wait
// policy; idle threads of the passive policies do not burn the CPU.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace plexus {

TEST(ThreadPool, ParallelForCoversEachIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (std::int64_t n : {1, 3, 17, 64, 4097}) {
      for (std::int64_t align : {1, 8, 16}) {
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
        pool.parallel_for(n, align, [&](std::int64_t b, std::int64_t e) {
          if (b % align != 0) ADD_FAILURE() << "unaligned chunk start " << b;
          for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
        });
        for (auto& h : hits) ASSERT_EQ(h.load(), 1);
      }
    }
  }
}

TEST(ThreadPool, RunsEveryChunkOnceManyTimes) {
  ThreadPool pool(3);
  std::atomic<long> total{0};
  std::atomic<int> bad_thread{0};
  for (int rep = 0; rep < 2000; ++rep) {
    auto task = [&](std::int64_t c, int t) {
      if (t < 0 || t >= 3) bad_thread++;
      total += c + 1;
    };
    pool.run_chunks(5, ChunkFn(task));
  }
  EXPECT_EQ(total.load(), 2000L * 15);
  EXPECT_EQ(bad_thread.load(), 0);
}

TEST(ThreadPool, FinishesWhenWorkersAreBusyElsewhere) {
  // More pools than cores: each launch must still complete (callers take unclaimed chunks).
  std::vector<std::thread> threads;
  std::atomic<long> total{0};
  for (int p = 0; p < 4; ++p) {
    threads.emplace_back([&] {
      ThreadPool pool(4);
      for (int rep = 0; rep < 300; ++rep) {
        pool.parallel_for(1000, 1, [&](std::int64_t b, std::int64_t e) { total += e - b; });
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(total.load(), 4L * 300 * 1000);
}

TEST(ThreadPool, RunsEveryChunkOnceWhenJobSizesChange) {
  // A job larger than the one before: a worker still looking at the finished job must not claim
  // a chunk of the new one (that chunk would run twice and the caller never see the end).
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int p = 0; p < 3; ++p) {
    threads.emplace_back([&, p] {
      ThreadPool pool(3);
      for (int rep = 0; rep < 3000; ++rep) {
        const std::int64_t n = 2 + (rep + p) % 8;
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
        auto task = [&](std::int64_t c, int) { hits[static_cast<std::size_t>(c)]++; };
        pool.run_chunks(n, ChunkFn(task));
        for (auto& h : hits) wrong += h.load() != 1;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

constexpr WaitPolicy kPolicies[] = {WaitPolicy::kSpin, WaitPolicy::kPassive, WaitPolicy::kAuto};

TEST(ThreadPool, WaitPolicyNamesRoundTrip) {
  for (WaitPolicy p : kPolicies) EXPECT_EQ(parse_wait_policy(wait_policy_name(p)), p);
  EXPECT_EQ(parse_wait_policy("spin"), WaitPolicy::kSpin);
  EXPECT_EQ(parse_wait_policy("passive"), WaitPolicy::kPassive);
  EXPECT_EQ(parse_wait_policy("auto"), WaitPolicy::kAuto);
  EXPECT_FALSE(parse_wait_policy("Spin").has_value());
  EXPECT_FALSE(parse_wait_policy("").has_value());
  EXPECT_EQ(ThreadPool(2, WaitPolicy::kPassive).wait_policy(), WaitPolicy::kPassive);
  EXPECT_EQ(ThreadPool(2).wait_policy(), WaitPolicy::kAuto);
}

TEST(ThreadPool, EveryPolicyRunsEveryChunkOnceUnderStress) {
  // Back-to-back launches of tiny and large jobs, some after a pause long enough for workers to
  // sleep, with more threads than this machine has cores (they are preempted mid-chunk).
  const int many = static_cast<int>(std::thread::hardware_concurrency()) * 2 + 1;
  for (WaitPolicy policy : kPolicies) {
    for (int threads : {2, 3, many}) {
      ThreadPool pool(threads, policy);
      int wrong = 0;
      for (int rep = 0; rep < 600; ++rep) {
        const std::int64_t n = rep % 3 == 0 ? 1 + rep % 7 : rep % 3 == 1 ? 1000 + rep : 2 + rep % 5;
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
        if (rep % 2 == 0) {
          auto task = [&](std::int64_t c, int t) {
            if (t >= 0 && t < threads) hits[static_cast<std::size_t>(c)]++;
          };
          pool.run_chunks(n, ChunkFn(task));
        } else {
          const std::int64_t align = rep % 4 == 1 ? 1 : 16;
          pool.parallel_for(n, align, [&](std::int64_t b, std::int64_t e) {
            if (b % align != 0 || e > n) return;
            for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
          });
        }
        for (auto& h : hits) wrong += h.load() != 1;
        if (rep % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      EXPECT_EQ(wrong, 0) << wait_policy_name(policy) << ", " << threads << " threads";
    }
  }
}

TEST(ThreadPool, ParallelForRangesShrinkAsWorkRunsOut) {
  // Guided self-scheduling: more ranges than two per thread, the first longer than the last.
  for (WaitPolicy policy : kPolicies) {
    ThreadPool pool(2, policy);
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    std::atomic_flag lock = ATOMIC_FLAG_INIT;
    pool.parallel_for(16 * 1024, 16, [&](std::int64_t b, std::int64_t e) {
      while (lock.test_and_set(std::memory_order_acquire)) {
      }
      ranges.emplace_back(b, e);
      lock.clear(std::memory_order_release);
    });
    std::sort(ranges.begin(), ranges.end());
    ASSERT_GT(ranges.size(), 4u);
    EXPECT_GT(ranges.front().second - ranges.front().first, ranges.back().second - ranges.back().first);
    for (std::size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i].first, ranges[i - 1].second);
  }
}

TEST(ThreadPool, DestroysWhileIdleUnderEveryPolicy) {
  for (WaitPolicy policy : kPolicies) {
    { ThreadPool never_used(3, policy); }
    ThreadPool pool(3, policy);
    std::atomic<int> ran{0};
    auto task = [&](std::int64_t, int) { ran++; };
    pool.run_chunks(6, ChunkFn(task));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // workers asleep (or spinning)
    EXPECT_EQ(ran.load(), 6) << wait_policy_name(policy);
  }
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

TEST(ThreadPool, CallerSleepsWhileTheLastChunkRunsUnlessSpinning) {
  // The caller finishes its chunk while a worker's chunk takes 200 ms: passive and auto callers
  // sleep (a few milliseconds of CPU at most), they do not busy-wait the 200 ms.
  for (WaitPolicy policy : {WaitPolicy::kPassive, WaitPolicy::kAuto}) {
    ThreadPool pool(2, policy);
    std::atomic<bool> worker_started{false};
    auto task = [&](std::int64_t, int thread) {
      if (thread == 0) {
        while (!worker_started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      } else {
        worker_started.store(true);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    };
    const double cpu = thread_cpu_seconds();
    const auto wall = std::chrono::steady_clock::now();
    pool.run_chunks(2, ChunkFn(task));
    EXPECT_GE(std::chrono::steady_clock::now() - wall, std::chrono::milliseconds(200));
    EXPECT_LT(thread_cpu_seconds() - cpu, 0.05) << wait_policy_name(policy);
  }
}

}  // namespace plexus
