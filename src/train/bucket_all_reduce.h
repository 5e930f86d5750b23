// All-reduces of gradient buckets on a communication thread, so that they overlap the rest of the
// backward: the backward posts a bucket as soon as its gradients are final, the thread sums it
// over the ranks (Collective::all_reduce_sum) while the compute goes on, and the step waits for
// the last one. Buckets are reduced in the order they were posted, which is the same on every rank.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "comm/collective.h"

namespace plexus {

class BucketAllReduce {
 public:
  // The thread calls `comm` only between a post() and the wait() that follows it: the caller must
  // not use `comm` itself in between (a Collective serves one thread of its rank at a time).
  explicit BucketAllReduce(Collective& comm);
  ~BucketAllReduce();
  BucketAllReduce(const BucketAllReduce&) = delete;
  BucketAllReduce& operator=(const BucketAllReduce&) = delete;

  // Queues data (count) for an all-reduce (sum over the ranks, in place).
  void post(float* data, std::int64_t count);
  // Returns once every posted bucket is reduced; rethrows what a reduce threw (the group was
  // aborted), after which the queue is empty.
  void wait();

 private:
  struct Bucket {
    float* data;
    std::int64_t count;
  };
  void run();

  Collective& comm_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Bucket> queue_;
  bool busy_ = false;  // the thread is reducing a bucket it took off the queue
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace plexus
