// Monitoring sessions against the project's fake NVML with scripted power: energy by counter and
// by integration agree with the script within a bounded sampling error; averages are exact.
#include "monitor/monitor_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "core/error.h"
#include "monitor/host_source.h"
#include "monitor/nvml_source.h"

namespace plexus {

namespace {

std::vector<std::unique_ptr<MetricSource>> fake_sources(const char* library) {
  ::setenv("PLEXUS_FAKE_NVML_SCRIPT", (std::string(PLEXUS_SOURCE_DIR) + "/tests/monitor/data/two_gpus_ramp.json").c_str(), 1);
  SourceOptions options;
  options.nvml_library = library;
  options.rocm_smi_library = "/nonexistent/librocm_smi64.so";
  return make_sources(options);
}

// Runs a session for `seconds`, sampling every `interval_ms`.
MonitorSummary run_session(const char* library, double seconds, MonitorOptions options, std::vector<Sample>* samples = nullptr) {
  MonitorSession session(fake_sources(library));
  session.start(options);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  MonitorSummary s = session.stop();
  if (samples) *samples = session.samples();
  return s;
}

// Each reading was taken somewhere in [t_s, t_end_s] of its sample, not exactly at t_s: these
// windows bound the sampling error (the fake's counter is exact, its readings rounded to mJ/mW).
double window(const Sample& s) { return s.t_end_s - s.t_s; }
double ends_window(const std::vector<Sample>& samples) { return window(samples.front()) + window(samples.back()); }
double max_window(const std::vector<Sample>& samples) {
  double m = 0;
  for (const Sample& s : samples) m = std::max(m, window(s));
  return m;
}
constexpr double kRoundingJ = 0.002;

}  // namespace

TEST(MonitorSession, CounterEnergyMatchesTheScript) {
  MonitorOptions options;
  options.interval_ms = 10;
  std::vector<Sample> samples;
  const MonitorSummary s = run_session(FAKE_NVML_LIBRARY, 0.3, options, &samples);
  ASSERT_EQ(s.devices.size(), 3u);  // 2 GPUs + host
  const DeviceSummary& steady = s.devices[0];
  const DeviceSummary& ramp = s.devices[1];
  EXPECT_EQ(steady.energy_method, EnergyMethod::kCounter);
  EXPECT_EQ(ramp.energy_method, EnergyMethod::kCounter);
  EXPECT_GE(s.samples, 5);
  // 150 W steady: energy = 150 W x duration.
  EXPECT_NEAR(*steady.energy_j, 150.0 * s.duration_s, 150.0 * ends_window(samples) + kRoundingJ);
  EXPECT_DOUBLE_EQ(*steady.avg_power_w, 150.0);
  // The ramp: the counter (exact integral) agrees with the trapezoid of the power readings.
  std::vector<Sample> without_counter = samples;
  for (Sample& sample : without_counter)
    for (DeviceReading& r : sample.readings) r.energy_counter_j.reset();
  const MonitorSummary integrated = summarize(without_counter);
  EXPECT_EQ(integrated.devices[1].energy_method, EnergyMethod::kPowerIntegration);
  const double p_max = *ramp.max_power_w;
  // Readings late by d <= window shift the trapezoid by at most 400 W/s x d x duration, and the
  // integral's ends by p_max x the end windows.
  const double bound = p_max * ends_window(samples) + 400.0 * max_window(samples) * s.duration_s +
                       0.0005 * s.duration_s + kRoundingJ;
  EXPECT_NEAR(*ramp.energy_j, *integrated.devices[1].energy_j, bound);
  // Linear power: the time-weighted average is the mean of the end points.
  double p_first = 0, p_last = 0;
  for (const DeviceReading& r : samples.front().readings) if (r.index == 1) p_first = *r.power_w;
  for (const DeviceReading& r : samples.back().readings) if (r.index == 1) p_last = *r.power_w;
  EXPECT_NEAR(*ramp.avg_power_w, (p_first + p_last) / 2, 400.0 * max_window(samples) + 0.001);
  EXPECT_GT(p_last, p_first + 400 * s.duration_s * 0.5);  // it did ramp (400 W/s)

  // Scripted constants come out exactly.
  EXPECT_DOUBLE_EQ(*steady.avg_utilization_percent, 30.0);
  EXPECT_DOUBLE_EQ(*ramp.max_utilization_percent, 70.0);
  EXPECT_DOUBLE_EQ(*steady.avg_memory_used_mb, 1024.0);
  EXPECT_DOUBLE_EQ(*ramp.max_temperature_c, 65.0);
  EXPECT_DOUBLE_EQ(*steady.avg_sm_clock_mhz, 1500.0);
  EXPECT_EQ(*steady.throttle_reasons_seen, 4u);
  EXPECT_DOUBLE_EQ(s.aggregate.total_avg_utilization, 50.0);
  EXPECT_DOUBLE_EQ(s.aggregate.total_max_utilization, 70.0);
  EXPECT_DOUBLE_EQ(s.aggregate.total_avg_memory_mb, 3072.0);
  EXPECT_EQ(s.aggregate.avg_utilization_per_gpu, (std::vector<double>{30.0, 70.0}));
  EXPECT_EQ(s.aggregate.avg_memory_per_gpu_mb, (std::vector<double>{1024.0, 2048.0}));
  EXPECT_TRUE(s.aggregate.any_gpu_active);
  ASSERT_TRUE(s.sampler_cpu_s.has_value());
}

TEST(MonitorSession, AmdGpusThroughRocmSmi) {
  ::setenv("PLEXUS_FAKE_NVML_SCRIPT", (std::string(PLEXUS_SOURCE_DIR) + "/tests/monitor/data/two_gpus_ramp.json").c_str(), 1);
  SourceOptions sources;
  sources.nvml_library = FAKE_NVML_LIBRARY;
  sources.rocm_smi_library = FAKE_ROCM_SMI_LIBRARY;
  sources.devices = {0, 3};  // one NVIDIA, one AMD (numbered after the 2 NVIDIA GPUs)
  sources.host = false;
  MonitorSession session(make_sources(sources));
  MonitorOptions options;
  options.interval_ms = 10;
  session.start(options);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  const MonitorSummary s = session.stop();
  const std::vector<Sample> samples = session.samples();
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0].index, 0);
  const DeviceSummary& amd = s.devices[1];
  EXPECT_EQ(amd.index, 3);
  EXPECT_EQ(amd.kind, DeviceKind::kRocm);
  EXPECT_EQ(amd.energy_method, EnergyMethod::kCounter);
  // 300 W steady; the counter ticks in 15.3 uJ steps.
  EXPECT_NEAR(*amd.energy_j, 300.0 * s.duration_s, 300.0 * ends_window(samples) + 1e-4);
  EXPECT_DOUBLE_EQ(*amd.avg_utilization_percent, 40.0);
  EXPECT_DOUBLE_EQ(*amd.avg_memory_used_mb, 8192.0);
  EXPECT_DOUBLE_EQ(*amd.max_temperature_c, 45.0);
  EXPECT_EQ(s.aggregate.avg_utilization_per_gpu, (std::vector<double>{30.0, 40.0}));
}

TEST(MonitorSession, WithoutTheEnergySymbolPowerIsIntegrated) {
  MonitorOptions options;
  options.interval_ms = 10;
  const MonitorSummary s = run_session(FAKE_NVML_MINIMAL_LIBRARY, 0.2, options);
  ASSERT_EQ(s.devices.size(), 3u);
  EXPECT_EQ(s.devices[0].energy_method, EnergyMethod::kPowerIntegration);
  EXPECT_EQ(s.devices[1].energy_method, EnergyMethod::kPowerIntegration);
  // Constant power integrates exactly, whatever the sample times.
  EXPECT_NEAR(*s.devices[0].energy_j, 150.0 * s.duration_s, 1e-9);
  EXPECT_FALSE(s.devices[0].max_temperature_c.has_value());  // the minimal library has no temperature
  EXPECT_FALSE(s.devices[0].throttle_reasons_seen.has_value());
}

TEST(MonitorSession, IdleBaselineAndCsv) {
  const std::string csv = ::testing::TempDir() + "/plexus_monitor_test.csv";
  MonitorOptions options;
  options.interval_ms = 10;
  options.idle_baseline_s = 0.05;
  options.csv_path = csv;
  std::vector<Sample> samples;
  const MonitorSummary s = run_session(FAKE_NVML_LIBRARY, 0.1, options, &samples);
  EXPECT_DOUBLE_EQ(*s.devices[0].idle_power_w, 150.0);
  EXPECT_NEAR(*s.devices[0].energy_above_idle_j, 0.0, 150.0 * ends_window(samples) + kRoundingJ);
  EXPECT_GT(*s.devices[1].idle_power_w, 200.0);
  EXPECT_DOUBLE_EQ(*s.idle_baseline_s, 0.05);
  std::ifstream in(csv);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, SampleCsv::header());
  int rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, static_cast<int>(samples.size()) * 3);
  std::remove(csv.c_str());
}

TEST(MonitorSession, MissingLibraryLeavesTheHost) {
  MonitorSession session(fake_sources("/nonexistent/libnvidia-ml.so.1"));
  session.start(MonitorOptions{});
  const MonitorSummary s = session.stop();
  ASSERT_EQ(session.unavailable().size(), 2u);
  EXPECT_NE(session.unavailable()[0].find("nvml: "), std::string::npos);
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].index, -1);
  EXPECT_FALSE(s.aggregate.any_gpu_active);
}

TEST(MonitorSession, BadUsage) {
  MonitorSession session(fake_sources(FAKE_NVML_LIBRARY));
  MonitorOptions options;
  options.interval_ms = 0;
  EXPECT_THROW(session.start(options), InputError);
  EXPECT_THROW(session.stop(), RuntimeError);
  options.interval_ms = 100;
  options.csv_path = "/nonexistent/dir/samples.csv";
  EXPECT_THROW(session.start(options), RuntimeError);
}

TEST(HostSource, ProcStatAndRaplWrapAround) {
  const auto t = parse_proc_stat("cpu  100 5 50 800 20 1 2 3 0 0\ncpu0 1 2 3 4\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->total, 981u);
  EXPECT_EQ(t->busy, 161u);
  EXPECT_FALSE(parse_proc_stat("intr 1 2 3").has_value());

  const std::string root = ::testing::TempDir() + "/plexus_powercap_" + std::to_string(::getpid());
  const std::string zone = root + "/intel-rapl:0";
  ASSERT_EQ(std::system(("mkdir -p '" + zone + "/intel-rapl:0:0'").c_str()), 0);
  auto write = [](const std::string& path, const std::string& text) { std::ofstream(path) << text; };
  write(zone + "/max_energy_range_uj", "1000000\n");
  write(zone + "/energy_uj", "900000\n");
  HostSource host(root);
  ASSERT_TRUE(host.open(nullptr));
  std::vector<DeviceReading> out;
  host.sample(out);
  write(zone + "/energy_uj", "100000\n");  // wrapped: +0.2 J
  host.sample(out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].index, -1);
  EXPECT_NEAR(*out[0].energy_counter_j, 0.0, 1e-12);
  EXPECT_NEAR(*out[1].energy_counter_j, 0.2, 1e-12);
  EXPECT_TRUE(out[1].memory_total_mb.has_value());
  EXPECT_TRUE(out[1].process_rss_mb.has_value());
  std::system(("rm -rf '" + root + "'").c_str());
}

}  // namespace plexus
