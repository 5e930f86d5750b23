// The sampler thread: sleep until the next tick (woken early by stop()), sample, record.
#include "monitor/monitor_session.h"

#include <time.h>

#include "backend/detect.h"
#include "core/error.h"
#include "monitor/host_source.h"
#include "monitor/nvml_source.h"
#include "monitor/plausibility.h"
#include "monitor/rocm_source.h"
#include "monitor/timed_source.h"

namespace plexus {

std::vector<std::unique_ptr<MetricSource>> make_sources(const SourceOptions& options) {
  std::vector<std::unique_ptr<MetricSource>> sources;
  auto nvml = std::make_unique<NvmlSource>(options.nvml_library, options.devices, options.process_root);
  const NvmlSource* nvml_ptr = nvml.get();
  sources.push_back(std::move(nvml));
  sources.push_back(std::make_unique<RocmSource>(options.rocm_smi_library, nvml_ptr, options.devices));
  if (options.host) sources.push_back(std::make_unique<HostSource>());
  return sources;
}

SourceOptions source_options_from(const DeviceOptions& devices) {
  SourceOptions options;
  options.nvml_library = devices.nvml_library;
  options.rocm_smi_library = devices.rocm_smi_library;
  return options;
}

SourceOptions source_options_for_run(const DeviceOptions& devices, const std::vector<int>& cuda_gpus) {
  SourceOptions o = source_options_from(devices);
  if (!cuda_gpus.empty()) o.devices = monitor_indices_of_cuda_gpus(detect_devices(devices), cuda_gpus);
  return o;
}

MonitorSession::MonitorSession(std::vector<std::unique_ptr<MetricSource>> sources, std::chrono::milliseconds call_limit) {
  for (auto& source : sources) {
    auto timed = std::make_unique<TimedSource>(std::move(source), call_limit);
    timed_.push_back(timed.get());
    sources_.push_back(std::move(timed));
  }
}

std::vector<std::string> MonitorSession::problems() const {
  std::vector<std::string> out;
  for (const TimedSource* t : timed_) {
    if (!t->problem().empty()) out.push_back(t->problem());
  }
  return out;
}

MonitorSession::~MonitorSession() {
  if (running_) stop();
}

Sample read_sample(const std::vector<MetricSource*>& sources, std::chrono::steady_clock::time_point t0) {
  Sample s;
  s.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (MetricSource* source : sources) source->sample(s.readings);
  for (DeviceReading& r : s.readings) drop_implausible(r);
  s.t_end_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

Sample MonitorSession::take_sample() { return read_sample(open_, t0_); }

void MonitorSession::record(Sample sample) {
  const bool csv_failed = csv_ && !csv_->write(sample);
  std::lock_guard<std::mutex> lock(mutex_);
  if (csv_failed && !csv_error_) csv_error_ = csv_->error();
  samples_.push_back(std::move(sample));
}

std::optional<std::string> MonitorSession::csv_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return csv_error_;
}

void MonitorSession::start(const MonitorOptions& options) {
  if (running_) throw RuntimeError("monitoring session already running: call stop() before start()");
  if (!(options.interval_ms >= 1 && options.interval_ms <= 3.6e6))
    throw InputError("monitor interval must be between 1 ms and 1 hour, got " + std::to_string(options.interval_ms) +
                     " ms");
  if (options.idle_baseline_s < 0) throw InputError("idle baseline must be 0 or more seconds");
  options_ = options;
  open_.clear();
  unavailable_.clear();
  samples_.clear();
  csv_error_.reset();
  idle_.clear();
  for (auto& source : sources_) {
    std::string why;
    if (source->open(&why)) open_.push_back(source.get());
    else unavailable_.push_back(source->name() + ": " + why);
  }
  t0_ = std::chrono::steady_clock::now();
  if (options.idle_baseline_s > 0) {
    std::vector<Sample> idle_samples;
    const auto end = t0_ + std::chrono::duration<double>(options.idle_baseline_s);
    const auto interval = std::chrono::duration<double, std::milli>(options.interval_ms);
    const auto stopping = [&] { return options.stop_requested && options.stop_requested(); };
    for (auto next = t0_; next <= end && !stopping();
         next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval)) {
      while (!stopping() && std::chrono::steady_clock::now() < next) {  // short steps: a stop answers quickly
        std::this_thread::sleep_until(std::min(next, std::chrono::steady_clock::now() + std::chrono::milliseconds(20)));
      }
      if (stopping()) break;
      idle_samples.push_back(take_sample());
    }
    idle_ = measure_baseline(idle_samples);
    t0_ = std::chrono::steady_clock::now();
  }
  if (!options.csv_path.empty()) csv_ = std::make_unique<SampleCsv>(options.csv_path);
  record(take_sample());
  stop_requested_ = false;
  running_ = true;
  thread_ = std::thread([this] { loop(); });
}

void MonitorSession::loop() {
  const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double, std::milli>(options_.interval_ms));
  auto next = t0_ + interval;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (stop_cv_.wait_until(lock, next, [&] { return stop_requested_; })) break;
    }
    record(take_sample());
    next += interval;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + interval;  // fell behind (slow source): skip, don't burst
  }
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  sampler_cpu_s_ = cpu.tv_sec + cpu.tv_nsec * 1e-9;
}

MonitorSummary MonitorSession::stop() {
  if (!running_) throw RuntimeError("monitoring session is not running: call start() first");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
  running_ = false;
  record(take_sample());
  for (MetricSource* source : open_) source->close();
  csv_.reset();
  MonitorSummary summary = summarize(samples_, idle_);
  double source_cpu_s = 0;  // the readings themselves run on the sources' helper threads
  for (const TimedSource* t : timed_) source_cpu_s += t->cpu_seconds();
  summary.sampler_cpu_s = sampler_cpu_s_ + source_cpu_s;
  summary.interval_ms = options_.interval_ms;  // as configured (summarize() gives the mean spacing)
  if (options_.idle_baseline_s > 0) summary.idle_baseline_s = options_.idle_baseline_s;
  const std::vector<std::string> late = problems();
  summary.problems.insert(summary.problems.end(), late.begin(), late.end());
  return summary;
}

double MonitorSession::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

std::vector<Sample> MonitorSession::samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_;
}

std::optional<Sample> MonitorSession::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (samples_.empty()) return std::nullopt;
  return samples_.back();
}

}  // namespace plexus
