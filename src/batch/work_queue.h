// The shared, dynamic queue of `plexus batch`: replicas take a few requests at a time as they
// become free (no static split), failed requests go back for another replica, a replica that
// keeps failing is taken out, and requests out of tries fail for good. Pure logic: indices in,
// decisions out; the caller owns the requests, the journal and the threads or ranks.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace plexus::batch {

struct QueueOptions {
  int replicas = 1;
  int max_retries = 2;       // tries after the first one
  int replica_strikes = 3;   // consecutive failed requests that take a replica out (never the last one)
};

struct FinalFailure {
  std::size_t index = 0;
  std::string reason;
  int attempts = 0;
};

class WorkQueue {
 public:
  WorkQueue(std::vector<std::size_t> pending, const QueueOptions& options);

  enum class Take { kWork, kWait, kDone };
  // Up to max_n requests for `replica` (fewer when that spreads the remaining work over the live
  // replicas): kWork with `out` filled; kWait when nothing fits this replica now but requests are
  // still running elsewhere (one may come back); kDone when nothing is left for it (all finished,
  // or the replica was taken out). Requests that failed on this replica go to another live
  // replica first.
  Take try_take(int replica, std::size_t max_n, std::vector<std::size_t>* out);
  // Blocking form for threads: empty when done.
  std::vector<std::size_t> take(int replica, std::size_t max_n);

  void succeeded(int replica, std::size_t index);
  // A try of `index` on `replica` failed. `permanent`: retrying cannot help (bad request).
  // Returns true when the request was queued again.
  bool failed(int replica, std::size_t index, const std::string& reason, bool permanent);
  // Takes a replica out (it could not start, or failed too often); its requests must have been
  // reported. When no replica is left, every queued request fails for good.
  void remove_replica(int replica, const std::string& reason);

  // Ends the run at once (the writer failed): every replica is done, nothing is failed.
  void cancel();

  // Requests that failed for good since the last call.
  std::vector<FinalFailure> drain_failures();
  bool live(int replica) const;
  std::vector<int> removed() const;
  std::int64_t retries() const;
  bool finished() const;  // nothing queued, nothing running

 private:
  struct Item {
    std::size_t index;
    int attempts = 0;
    std::set<int> failed_on;
    std::string last_error;
  };
  bool fits(const Item& item, int replica) const;
  Take take_locked(int replica, std::size_t max_n, std::vector<std::size_t>* out);
  void fail_all_queued(const std::string& reason);

  QueueOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> queued_;
  std::map<std::size_t, Item> running_;
  std::vector<int> strikes_;   // by replica
  std::vector<bool> live_;     // by replica
  std::vector<FinalFailure> failures_;
  std::int64_t retries_ = 0;
};

}  // namespace plexus::batch
