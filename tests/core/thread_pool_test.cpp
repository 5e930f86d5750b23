// The fork-join pool covers every index exactly once, many times in a row.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

TEST(ThreadPool, RunsEveryThreadManyTimes) {
  ThreadPool pool(3);
  std::atomic<long> total{0};
  for (int rep = 0; rep < 2000; ++rep) {
    auto task = [&](int t, int n) {
      EXPECT_EQ(n, 3);
      total += t + 1;
    };
    pool.run(TaskRef(task));
  }
  EXPECT_EQ(total.load(), 2000L * 6);
}

}  // namespace plexus
