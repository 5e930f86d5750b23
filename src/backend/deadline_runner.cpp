// One helper thread per runner, fed one job at a time; abandoned (detached) when a job overruns.
#include "backend/deadline_runner.h"

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace plexus {

struct DeadlineRunner::Shared {
  std::mutex mutex;
  std::condition_variable cv;
  std::function<void()> job;
  bool has_job = false, done = false, quit = false;
};

DeadlineRunner::DeadlineRunner(std::chrono::milliseconds limit) : limit_(limit), shared_(std::make_shared<Shared>()) {}

DeadlineRunner::~DeadlineRunner() {
  if (!started_ || abandoned_) return;  // a stuck helper was detached and keeps its own reference to the state
  {
    std::lock_guard lock(shared_->mutex);
    shared_->quit = true;
  }
  shared_->cv.notify_all();
  // An idle helper ends at once: join it, so that nothing of it (its thread-local state, e.g. a
  // failed dlopen's dlerror buffer) outlives the runner or races the process's exit.
  helper_.join();
}

bool DeadlineRunner::run(std::function<void()> job) {
  if (abandoned_) return false;
  if (!started_) {
    helper_ = std::thread(helper_loop, shared_);  // joined when the runner ends, detached if abandoned
    started_ = true;
  }
  std::unique_lock lock(shared_->mutex);
  shared_->job = std::move(job);
  shared_->has_job = true;
  shared_->done = false;
  shared_->cv.notify_all();
  if (shared_->cv.wait_for(lock, limit_, [&] { return shared_->done; })) return true;
  abandoned_ = true;
  shared_->quit = true;  // if it ever comes back, it ends
  helper_.detach();      // stuck inside the driver, maybe for good: never joined
  return false;
}

void DeadlineRunner::helper_loop(std::shared_ptr<Shared> s) {
  std::unique_lock lock(s->mutex);
  for (;;) {
    s->cv.wait(lock, [&] { return s->has_job || s->quit; });
    if (!s->has_job) return;
    std::function<void()> job = std::move(s->job);
    s->has_job = false;
    lock.unlock();
    try {
      job();
    } catch (...) {  // a job reports through what it owns; nothing may escape the thread
    }
    job = nullptr;  // release what the job owns before reporting
    lock.lock();
    s->done = true;
    s->cv.notify_all();
    if (s->quit) return;
  }
}

std::chrono::milliseconds driver_call_limit() {
  if (const char* env = std::getenv("PLEXUS_DRIVER_TIMEOUT_MS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) return std::chrono::milliseconds(v);
  }
  return std::chrono::milliseconds(5000);
}

}  // namespace plexus
