// The fork-join pool covers every index exactly once, many times in a row.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace plexus
