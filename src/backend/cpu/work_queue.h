// An in-order work queue run by one thread: the stream behind each CPU or virtual device.
// Tasks run one at a time in the order enqueued; errors are kept until synchronize().
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace plexus {

class WorkQueue {
 public:
  explicit WorkQueue(std::string name);
  ~WorkQueue();  // runs what is queued, then stops the thread
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // `always_run` tasks (event markers and waits) run even after an earlier task failed.
  void enqueue(std::function<void()> task, bool always_run = false);
  // Waits until every enqueued task has run; rethrows the first failure since the last call.
  void synchronize();

 private:
  struct Task {
    std::function<void()> run;
    bool always_run;
  };
  void loop();

  std::string name_;
  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<Task> tasks_;
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace plexus
