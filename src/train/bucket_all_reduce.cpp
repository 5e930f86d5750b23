// The communication thread: take a bucket, all-reduce it, repeat; after a failure the rest of the
// queue is dropped and the error kept for wait().
#include "train/bucket_all_reduce.h"

namespace plexus {

BucketAllReduce::BucketAllReduce(Collective& comm) : comm_(comm), thread_([this] { run(); }) {}

BucketAllReduce::~BucketAllReduce() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BucketAllReduce::post(float* data, std::int64_t count) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({data, count});
  }
  changed_.notify_all();
}

void BucketAllReduce::wait() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void BucketAllReduce::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, nothing left
    const Bucket b = queue_.front();
    queue_.pop_front();
    if (error_) {  // a reduce failed: the group is gone, drop the rest
      if (queue_.empty()) changed_.notify_all();
      continue;
    }
    busy_ = true;
    lock.unlock();
    std::exception_ptr failed;
    try {
      comm_.all_reduce_sum(b.data, b.count);
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (failed) error_ = failed;
    if (queue_.empty()) changed_.notify_all();
  }
}

}  // namespace plexus
