// The in-process collectives on real threads: sums in rank order on every rank (the same bits
// whatever the timing), gathers, broadcasts, a failed rank releasing the others, and no rank
// leaving an aborted group while another still reads its memory.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "comm/in_process_group.h"
#include "comm/rank_barrier.h"
#include "core/error.h"

namespace plexus {
namespace {

// Runs fn(rank) on one thread per rank.
template <class F>
void on_ranks(int n, F fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&fn, r] { fn(r); });
  for (auto& t : threads) t.join();
}

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g) * static_cast<float>(1 << (g() % 12));  // magnitudes apart: order matters
  return v;
}

TEST(InProcessGroup, AllReduceIsTheRankOrderedSumOnEveryRank) {
  for (int n : {1, 2, 3, 4}) {
    for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{4097}}) {
      std::vector<std::vector<float>> data;
      for (int r = 0; r < n; ++r) data.push_back(random_floats(count, static_cast<unsigned>(100 * n + r)));
      std::vector<float> want(count);
      for (std::size_t i = 0; i < count; ++i) {
        float s = data[0][i];
        for (int r = 1; r < n; ++r) s += data[static_cast<std::size_t>(r)][i];
        want[i] = s;
      }
      InProcessGroup g(n);
      for (int repeat = 0; repeat < 3; ++repeat) {  // the scratch is reused between calls
        auto bufs = data;
        on_ranks(n, [&](int r) { g.rank(r).all_reduce_sum(bufs[static_cast<std::size_t>(r)].data(), static_cast<std::int64_t>(count)); });
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(std::memcmp(bufs[static_cast<std::size_t>(r)].data(), want.data(), count * sizeof(float)), 0)
              << "n " << n << " count " << count << " rank " << r;
        }
      }
      EXPECT_EQ(g.rank(0).stats().all_reduce.calls, 3);
      EXPECT_EQ(g.rank(0).stats().all_reduce.bytes, static_cast<std::int64_t>(3 * count * sizeof(float)));
    }
  }
}

TEST(InProcessGroup, AllGatherPutsRankRAtRowR) {
  const int n = 3;
  const std::int64_t count = 5;
  InProcessGroup g(n);
  std::vector<std::vector<float>> out(n, std::vector<float>(n * count));
  on_ranks(n, [&](int r) {
    std::vector<float> in(count);
    for (std::int64_t i = 0; i < count; ++i) in[static_cast<std::size_t>(i)] = static_cast<float>(10 * r + i);
    g.rank(r).all_gather(in.data(), count, out[static_cast<std::size_t>(r)].data());
  });
  for (int r = 0; r < n; ++r) {
    for (int k = 0; k < n; ++k) {
      for (std::int64_t i = 0; i < count; ++i) EXPECT_EQ(out[static_cast<std::size_t>(r)][static_cast<std::size_t>(k * count + i)], 10 * k + i);
    }
  }
}

TEST(InProcessGroup, BroadcastCopiesTheRootsBytes) {
  const int n = 4;
  InProcessGroup g(n);
  std::vector<std::array<int, 3>> v(n);
  for (int r = 0; r < n; ++r) v[static_cast<std::size_t>(r)] = {r, r * 2, r * 3};
  on_ranks(n, [&](int r) {
    g.rank(r).broadcast(v[static_cast<std::size_t>(r)].data(), sizeof(int) * 3, 2);
    g.rank(r).barrier();
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(v[static_cast<std::size_t>(r)], (std::array<int, 3>{2, 4, 6}));
}

TEST(InProcessGroup, AFailedRankReleasesTheOthersWithItsReason) {
  const int n = 3;
  InProcessGroup g(n);
  std::atomic<int> released{0};
  on_ranks(n, [&](int r) {
    if (r == 1) {
      g.rank(r).abort("tensor-parallel rank 1 failed: out of memory");
      return;
    }
    float x = 1;
    try {
      g.rank(r).all_reduce_sum(&x, 1);
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("rank 1 failed: out of memory"), std::string::npos) << e.what();
      ++released;
    }
  });
  EXPECT_EQ(released.load(), 2);
}

// Rank 0 reads rank 1's buffer slowly; rank 1 aborts meanwhile and arrives at the next meeting.
// Its arrival throws, but only once rank 0 has finished reading: a rank that left earlier would
// free the buffer under the reader (the segfault of a training replica failing mid-all-reduce).
TEST(RankBarrier, AnAbortedRankLeavesOnlyOnceNoRankReadsItsMemory) {
  RankBarrier barrier(2);
  std::atomic<bool> read_done{false};
  std::atomic<bool> left_before_the_read{false};
  on_ranks(2, [&](int r) {
    {
      RankBarrier::Reading reading(barrier);
      reading.arrive();
      if (r == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        read_done = true;
      }
    }
    if (r == 1) barrier.abort("rank 1 failed");
    try {
      barrier.arrive();
      ADD_FAILURE() << "rank " << r << ": arrive() after abort() returned";
    } catch (const RuntimeError& e) {
      EXPECT_STREQ(e.what(), "rank 1 failed");
      if (r == 1 && !read_done) left_before_the_read = true;
    }
  });
  EXPECT_FALSE(left_before_the_read.load());
}

}  // namespace
}  // namespace plexus
