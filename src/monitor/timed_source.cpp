// open/sample/close of another source on a DeadlineRunner; results come back through buffers
// the jobs own, so an abandoned job writes only into memory it keeps alive itself.
#include "monitor/timed_source.h"

#include <time.h>

#include <cstdio>

namespace plexus {

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

TimedSource::TimedSource(std::unique_ptr<MetricSource> inner, std::chrono::milliseconds limit)
    : inner_(std::move(inner)), name_(inner_->name()), runner_(limit) {}

void TimedSource::note_overrun(const char* call) {
  if (!problem_.empty()) return;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count();
  char when[32];
  std::snprintf(when, sizeof when, "%.1f", t);
  problem_ = name_ + ": " + call + " gave no answer within " + std::to_string(runner_.limit().count()) +
             " ms; the source was abandoned " + when + " s after it was created (its devices count as lost from then)";
}

bool TimedSource::open(std::string* why) {
  struct Result {
    bool ok = false;
    std::string why;
  };
  auto result = std::make_shared<Result>();
  auto inner = inner_;
  if (!runner_.run([inner, result] { result->ok = inner->open(&result->why); })) {
    note_overrun("opening");
    if (why) *why = problem_.substr(name_.size() + 2);  // the session prefixes the name
    return false;
  }
  if (why) *why = result->why;
  return result->ok;
}

void TimedSource::sample(std::vector<DeviceReading>& out) {
  auto readings = std::make_shared<std::vector<DeviceReading>>();
  auto inner = inner_;
  auto cpu = cpu_s_;
  if (!runner_.run([inner, readings, cpu] {
        const double t0 = thread_cpu_s();
        inner->sample(*readings);
        cpu->fetch_add(thread_cpu_s() - t0);
      })) {
    note_overrun("a reading");
    return;
  }
  out.insert(out.end(), readings->begin(), readings->end());
}

void TimedSource::close() {
  auto inner = inner_;
  if (!runner_.run([inner] { inner->close(); })) note_overrun("closing");
}

}  // namespace plexus
