// In-process collectives: post, meet, read each other's buffers, meet again.
#include "comm/in_process_group.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "core/timer.h"

namespace plexus {

class InProcessGroup::Rank : public Collective {
 public:
  Rank(InProcessGroup& g, int r) : g_(g), r_(r) {}
  int rank() const override { return r_; }
  int size() const override { return g_.size_; }
  std::string kind() const override { return "in-process"; }

  void all_reduce_sum(float* data, std::int64_t count) override {
    Timer t;
    {
      RankBarrier::Reading reading(g_.barrier_);
      post(reading, data, [&] {
        if (g_.scratch_.size() < static_cast<std::size_t>(count)) g_.scratch_.resize(static_cast<std::size_t>(count));
      });
      // This rank's chunk of the sum, over the ranks in order.
      const std::int64_t lo = count * r_ / g_.size_, hi = count * (r_ + 1) / g_.size_;
      float* sum = g_.scratch_.data();
      const float* first = static_cast<const float*>(g_.posted_[0]);
      std::copy(first + lo, first + hi, sum + lo);
      for (int k = 1; k < g_.size_; ++k) {
        const float* other = static_cast<const float*>(g_.posted_[static_cast<std::size_t>(k)]);
        for (std::int64_t i = lo; i < hi; ++i) sum[i] += other[i];
      }
    }
    g_.barrier_.arrive();  // every chunk summed
    const float* sum = g_.scratch_.data();
    std::copy(sum, sum + count, data);
    g_.barrier_.arrive();  // every rank has its copy: the scratch and the buffers are free again
    count_op(stats_.all_reduce, count * static_cast<std::int64_t>(sizeof(float)), t);
  }

  void all_gather(const float* in, std::int64_t count, float* out) override {
    Timer t;
    {
      RankBarrier::Reading reading(g_.barrier_);
      post(reading, in, [] {});
      for (int k = 0; k < g_.size_; ++k) {
        const float* from = static_cast<const float*>(g_.posted_[static_cast<std::size_t>(k)]);
        std::copy(from, from + count, out + k * count);
      }
    }
    g_.barrier_.arrive();
    count_op(stats_.all_gather, count * static_cast<std::int64_t>(sizeof(float)), t);
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    assert(root >= 0 && root < g_.size_);
    Timer t;
    {
      RankBarrier::Reading reading(g_.barrier_);
      post(reading, data, [] {});
      if (r_ != root) std::memcpy(data, g_.posted_[static_cast<std::size_t>(root)], bytes);
    }
    g_.barrier_.arrive();
    count_op(stats_.broadcast, static_cast<std::int64_t>(bytes), t);
  }

  void barrier() override { g_.barrier_.arrive(); }
  void abort(const std::string& why) override { g_.abort(why); }

 private:
  // Posts this rank's buffer (and runs `prepare` under the group's lock, before anyone reads),
  // then waits for every rank's: the ranks read each other's buffers until `reading` ends.
  template <class F>
  void post(RankBarrier::Reading& reading, const void* buffer, F prepare) {
    g_.barrier_.locked([&] {
      g_.posted_[static_cast<std::size_t>(r_)] = buffer;
      prepare();
    });
    reading.arrive();
  }
  static void count_op(CommStats::Op& op, std::int64_t bytes, const Timer& t) {
    ++op.calls;
    op.bytes += bytes;
    op.seconds += t.seconds();
  }

  InProcessGroup& g_;
  const int r_;
};

InProcessGroup::InProcessGroup(int size) : size_(size), barrier_(size), posted_(static_cast<std::size_t>(size)) {
  assert(size >= 1);
  for (int r = 0; r < size; ++r) ranks_.push_back(std::make_unique<Rank>(*this, r));
}

InProcessGroup::~InProcessGroup() = default;

Collective& InProcessGroup::rank(int r) {
  assert(r >= 0 && r < size_);
  return *ranks_[static_cast<std::size_t>(r)];
}

void InProcessGroup::abort(const std::string& why) { barrier_.abort(why); }

}  // namespace plexus
