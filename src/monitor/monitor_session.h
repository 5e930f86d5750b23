// Wraps any run in a monitoring session: a sampler thread reads every source at a fixed
// interval, keeps timestamped samples in memory (optionally streaming them to CSV), and stop()
// returns the summary.
//
//   MonitorSession session(make_sources(source_options_from(device_options_from(args))));
//   session.start({.interval_ms = 100});
//   ... the run ...
//   MonitorSummary summary = session.stop();   // to_json(summary) for reports
#pragma once
#include <functional>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/device_options.h"
#include "monitor/metric_source.h"
#include "monitor/sample_csv.h"
#include "monitor/summary.h"
#include "monitor/timed_source.h"

namespace plexus {

struct MonitorOptions {
  double interval_ms = 100;
  double idle_baseline_s = 0;  // > 0: sample this long before start() returns, as the idle level
  std::string csv_path;        // "": no CSV
  // Polled while the idle baseline is measured (Ctrl-C ends it early); null: never.
  std::function<bool()> stop_requested;
};

struct SourceOptions {
  std::string nvml_library;      // "" = the system's
  std::string rocm_smi_library;  // "" = the system's
  std::vector<int> devices;      // GPU indices as in `plexus detect`; empty = all
  bool host = true;              // include the host (CPU, RSS, RAPL)
  int process_root = 0;          // > 0: per-GPU memory and utilisation of this process tree (NVML)
};

// NVML, then ROCm SMI (numbered after the NVIDIA GPUs), then the host.
std::vector<std::unique_ptr<MetricSource>> make_sources(const SourceOptions& options);
// Library paths from a command's DeviceOptions (PLEXUS_NVML_LIBRARY, PLEXUS_ROCM_SMI_LIBRARY).
SourceOptions source_options_from(const DeviceOptions& devices);
// The same, watching only the GPUs a run computes on: `cuda_gpus` as the CUDA runtime numbers
// them (ModelRun::cuda_gpus), matched to the monitor's numbering through detection; every GPU
// when the list is empty or a GPU is not found.
SourceOptions source_options_for_run(const DeviceOptions& devices, const std::vector<int>& cuda_gpus);

// One sample of `sources` (their readings with implausible values dropped), timed from `t0`.
Sample read_sample(const std::vector<MetricSource*>& sources, std::chrono::steady_clock::time_point t0);

class MonitorSession {
 public:
  // Every source's calls run with `call_limit` (TimedSource): a hung driver is abandoned, its
  // devices count as lost, and problems() says so.
  explicit MonitorSession(std::vector<std::unique_ptr<MetricSource>> sources,
                          std::chrono::milliseconds call_limit = driver_call_limit());
  ~MonitorSession();  // stops the thread if still running
  MonitorSession(const MonitorSession&) = delete;
  MonitorSession& operator=(const MonitorSession&) = delete;

  // Opens the sources (unavailable ones are dropped, see unavailable()), measures the idle
  // baseline when asked, takes the first sample and starts the sampler thread. Throws
  // InputError for a bad interval, RuntimeError when the CSV cannot be written.
  void start(const MonitorOptions& options);
  // Takes a last sample, stops the thread, closes the sources and summarises.
  MonitorSummary stop();

  bool running() const { return running_; }
  // Seconds on the samples' clock (Sample::t_s) now; meaningful once start() returned.
  double now_s() const;
  std::optional<Sample> latest() const;
  // Every sample so far (a copy), e.g. for custom reports after stop().
  std::vector<Sample> samples() const;
  // Set once writing the CSV failed (the sampling goes on; the CSV keeps its complete rows).
  std::optional<std::string> csv_error() const;
  // "nvml: libnvidia-ml.so.1: cannot open shared object file" per source that could not open.
  const std::vector<std::string>& unavailable() const { return unavailable_; }
  // Sources abandoned because a call overran its time limit, one line each.
  std::vector<std::string> problems() const;

 private:
  Sample take_sample();
  void record(Sample sample);
  void loop();

  std::vector<std::unique_ptr<MetricSource>> sources_;  // TimedSource each
  std::vector<const TimedSource*> timed_;
  std::vector<MetricSource*> open_;
  std::vector<std::string> unavailable_;
  MonitorOptions options_;
  IdleBaseline idle_;
  std::unique_ptr<SampleCsv> csv_;
  std::optional<std::string> csv_error_;  // guarded by mutex_
  std::chrono::steady_clock::time_point t0_;

  mutable std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;
  bool running_ = false;
  std::vector<Sample> samples_;
  double sampler_cpu_s_ = 0;
  std::thread thread_;
};

}  // namespace plexus
