// Calls into driver libraries (NVML, ROCm SMI) with a time limit: each job runs on a helper
// thread; a job that overruns the limit is abandoned with its thread (never joined: it may stay
// stuck inside the driver for good) and every later job fails at once, so a hung driver never
// blocks a run, a monitor or the process's exit.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace plexus {

class DeadlineRunner {
 public:
  explicit DeadlineRunner(std::chrono::milliseconds limit);
  ~DeadlineRunner();  // ends and joins an idle helper; a stuck one was left behind, detached
  DeadlineRunner(const DeadlineRunner&) = delete;
  DeadlineRunner& operator=(const DeadlineRunner&) = delete;

  // Runs `job` on the helper and waits at most the limit. False when it did not finish in time
  // (the runner is then abandoned) or the runner was abandoned before. The job may outlive this
  // call and this object: it must own (capture by value, shared_ptr) everything it touches.
  bool run(std::function<void()> job);
  bool abandoned() const { return abandoned_; }
  std::chrono::milliseconds limit() const { return limit_; }

 private:
  struct Shared;
  static void helper_loop(std::shared_ptr<Shared> s);
  std::chrono::milliseconds limit_;
  std::shared_ptr<Shared> shared_;
  std::thread helper_;
  bool abandoned_ = false;
  bool started_ = false;
};

// The time limit of driver calls: PLEXUS_DRIVER_TIMEOUT_MS (tests), else 5000 ms.
std::chrono::milliseconds driver_call_limit();

}  // namespace plexus
