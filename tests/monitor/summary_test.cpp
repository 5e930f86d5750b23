// summarize() on scripted samples: energy by counter and by trapezoid, averages, aggregates,
// idle baseline, and the JSON key names reports depend on.
#include "monitor/summary.h"

#include <gtest/gtest.h>

#include "monitor/plausibility.h"

namespace plexus {

namespace {

// 11 samples over one second: GPU 0 at a steady 100 W with an energy counter, GPU 1 ramping
// 100 -> 200 W with no counter, and the host without power.
std::vector<Sample> scripted() {
  std::vector<Sample> samples;
  for (int i = 0; i <= 10; ++i) {
    const double t = i * 0.1;
    Sample s;
    s.t_s = t;
    DeviceReading g0;
    g0.index = 0;
    g0.kind = DeviceKind::kCuda;
    g0.name = "gpu0";
    g0.power_w = 100;
    g0.energy_counter_j = 5000 + 100 * t;
    g0.utilization_percent = 30;
    g0.memory_used_mb = 1000 + 10 * i;  // avg 1050, max 1100
    g0.memory_total_mb = 16000;
    g0.temperature_c = 40 + i;  // max 50
    g0.throttle_reasons = i == 5 ? 4u : 0u;
    DeviceReading g1;
    g1.index = 1;
    g1.kind = DeviceKind::kCuda;
    g1.name = "gpu1";
    g1.power_w = 100 + 100 * t;
    g1.utilization_percent = i % 2 == 0 ? 60 : 80;  // avg 70 - (60+... ) computed below
    g1.memory_used_mb = 2000;
    DeviceReading host;
    host.index = -1;
    host.kind = DeviceKind::kCpu;
    host.name = "cpu";
    host.utilization_percent = 12.5;
    host.process_rss_mb = 100 + i;
    s.readings = {host, g1, g0};  // any order: the summary sorts GPUs, host last
    samples.push_back(s);
  }
  return samples;
}

}  // namespace

TEST(Summary, CounterAndTrapezoidEnergyAreExact) {
  const MonitorSummary s = summarize(scripted());
  EXPECT_DOUBLE_EQ(s.duration_s, 1.0);
  EXPECT_EQ(s.samples, 11);
  EXPECT_NEAR(s.interval_ms, 100.0, 1e-9);
  ASSERT_EQ(s.devices.size(), 3u);
  const DeviceSummary& g0 = s.devices[0];
  const DeviceSummary& g1 = s.devices[1];
  const DeviceSummary& host = s.devices[2];
  EXPECT_EQ(g0.index, 0);
  EXPECT_EQ(g1.index, 1);
  EXPECT_EQ(host.index, -1);

  EXPECT_EQ(g0.energy_method, EnergyMethod::kCounter);
  EXPECT_NEAR(*g0.energy_j, 100.0, 1e-9);
  EXPECT_NEAR(*g0.avg_power_w, 100.0, 1e-9);
  EXPECT_EQ(g1.energy_method, EnergyMethod::kPowerIntegration);
  EXPECT_NEAR(*g1.energy_j, 150.0, 1e-9);  // integral of 100 + 100 t over [0, 1]
  EXPECT_NEAR(*g1.avg_power_w, 150.0, 1e-9);
  EXPECT_NEAR(*g1.max_power_w, 200.0, 1e-9);
  EXPECT_EQ(host.energy_method, EnergyMethod::kUnavailable);
  EXPECT_FALSE(host.energy_j.has_value());
  EXPECT_FALSE(host.avg_power_w.has_value());

  EXPECT_DOUBLE_EQ(*g0.avg_utilization_percent, 30.0);
  EXPECT_NEAR(*g0.avg_memory_used_mb, 1050.0, 1e-9);
  EXPECT_DOUBLE_EQ(*g0.max_memory_used_mb, 1100.0);
  EXPECT_DOUBLE_EQ(*g0.max_temperature_c, 50.0);
  EXPECT_EQ(*g0.throttle_reasons_seen, 4u);
  EXPECT_NEAR(*g1.avg_utilization_percent, (6 * 60.0 + 5 * 80.0) / 11, 1e-9);
  EXPECT_DOUBLE_EQ(*g1.max_utilization_percent, 80.0);
  EXPECT_DOUBLE_EQ(*host.max_process_rss_mb, 110.0);

  const AggregateSummary& a = s.aggregate;
  EXPECT_NEAR(a.total_avg_utilization, (30.0 + *g1.avg_utilization_percent) / 2, 1e-9);
  EXPECT_DOUBLE_EQ(a.total_max_utilization, 80.0);
  EXPECT_NEAR(a.total_avg_memory_mb, 1050.0 + 2000.0, 1e-9);
  ASSERT_EQ(a.avg_utilization_per_gpu.size(), 2u);
  EXPECT_DOUBLE_EQ(a.avg_utilization_per_gpu[0], 30.0);
  EXPECT_NEAR(a.avg_memory_per_gpu_mb[0], 1050.0, 1e-9);
  EXPECT_DOUBLE_EQ(a.avg_memory_per_gpu_mb[1], 2000.0);
  EXPECT_TRUE(a.any_gpu_active);
  EXPECT_NEAR(*a.total_energy_j, 250.0, 1e-9);
  EXPECT_NEAR(*a.total_avg_power_w, 250.0, 1e-9);
}

TEST(Summary, IdleBaselineGivesEnergyAboveIdle) {
  const IdleBaseline idle{{"0", 80.0}, {"1", 50.0}};
  const MonitorSummary s = summarize(scripted(), idle);
  EXPECT_DOUBLE_EQ(*s.devices[0].idle_power_w, 80.0);
  EXPECT_NEAR(*s.devices[0].energy_above_idle_j, 20.0, 1e-9);
  EXPECT_NEAR(*s.devices[1].energy_above_idle_j, 100.0, 1e-9);
  EXPECT_NEAR(*s.aggregate.total_energy_above_idle_j, 120.0, 1e-9);
  const IdleBaseline measured = measure_baseline(scripted());
  EXPECT_NEAR(measured.at("0"), 100.0, 1e-9);
  EXPECT_NEAR(measured.at("1"), 150.0, 1e-9);
  EXPECT_EQ(measured.count("cpu"), 0u);  // no power for the host
}

TEST(Summary, ACounterThatWentBackwardsIsBridgedWithPower) {
  std::vector<Sample> samples = scripted();
  for (Sample& s : samples)
    for (DeviceReading& r : s.readings)
      if (r.index == 0 && s.t_s > 0.45) r.energy_counter_j = *r.energy_counter_j - 5000;  // driver reset
  const MonitorSummary s = summarize(samples);
  EXPECT_EQ(s.devices[0].energy_method, EnergyMethod::kCounterPower);
  EXPECT_EQ(s.devices[0].energy_counter_resets, 1);
  EXPECT_NEAR(*s.devices[0].energy_j, 100.0, 1e-9);
}

TEST(Summary, AResetThatEndsAboveTheFirstValueIsNotCountedAsTheCounter) {
  // The counter starts near 0 and restarts from 0 at 0.45 s: last >= first, so the old
  // last - first gave "counter" and 55 J instead of 100 J.
  std::vector<Sample> samples = scripted();
  for (Sample& s : samples)
    for (DeviceReading& r : s.readings)
      if (r.index == 0) r.energy_counter_j = s.t_s > 0.45 ? 100 * (s.t_s - 0.45) : 100 * s.t_s;
  const MonitorSummary s = summarize(samples);
  EXPECT_EQ(s.devices[0].energy_method, EnergyMethod::kCounterPower);
  EXPECT_NEAR(*s.devices[0].energy_j, 100.0, 1e-9);
  EXPECT_NEAR(*s.devices[0].energy_covered_s, 1.0, 1e-9);
  EXPECT_EQ(to_json(s)["devices"][0]["energy_method"], "counter+power");
}

TEST(Summary, ALostDeviceGivesPartialEnergyWithTheCoveredTime) {
  std::vector<Sample> samples = scripted();
  for (Sample& s : samples) {
    for (DeviceReading& r : s.readings) {
      if (r.index == 0 && s.t_s > 0.65) {  // the GPU is lost: every query fails
        DeviceReading lost;
        lost.index = 0;
        lost.kind = DeviceKind::kCuda;
        lost.name = "gpu0";
        r = lost;
      }
    }
    // GPU 1's source was abandoned (a hung driver): no readings at all after 0.35 s.
    if (s.t_s > 0.35) std::erase_if(s.readings, [](const DeviceReading& r) { return r.index == 1; });
  }
  const MonitorSummary s = summarize(samples);
  const DeviceSummary& lost = s.devices[0];
  EXPECT_EQ(lost.energy_method, EnergyMethod::kPartial);
  EXPECT_NEAR(*lost.energy_j, 60.0, 1e-9);  // 100 W over the 0.6 s it answered
  EXPECT_NEAR(*lost.energy_covered_s, 0.6, 1e-9);
  EXPECT_NEAR(*lost.lost_at_s, 0.6, 1e-9);
  const DeviceSummary& gone = s.devices[1];
  EXPECT_EQ(gone.energy_method, EnergyMethod::kPartial);
  EXPECT_NEAR(*gone.energy_covered_s, 0.3, 1e-9);
  EXPECT_NEAR(*gone.lost_at_s, 0.3, 1e-9);
  const Json j = to_json(s);
  EXPECT_EQ(j["devices"][0]["energy_method"], "partial");
  EXPECT_NEAR(j["devices"][0]["energy_covered_s"].get<double>(), 0.6, 1e-9);
  EXPECT_TRUE(j["host"]["lost_at_s"].is_null());
}

TEST(Summary, ImplausibleReadingsAreDroppedAndCounted) {
  std::vector<Sample> samples = scripted();
  for (Sample& s : samples) {
    for (DeviceReading& r : s.readings) {
      if (r.index != 0 || s.t_s < 0.35 || s.t_s > 0.45) continue;
      r.power_w = 4294967.295;  // 0xFFFFFFFF mW
      r.temperature_c = 4294967295.0;
      r.energy_counter_j = *r.energy_counter_j + 4e6;  // a counter step no device makes
      EXPECT_EQ(drop_implausible(r), 2);
    }
  }
  const MonitorSummary s = summarize(samples);
  const DeviceSummary& d = s.devices[0];
  EXPECT_EQ(d.dropped_readings, 2 + 1);  // power and temperature at 0.4 s, then the counter's jump
  EXPECT_EQ(d.energy_counter_resets, 0);
  EXPECT_DOUBLE_EQ(*d.max_power_w, 100.0);
  EXPECT_DOUBLE_EQ(*d.max_temperature_c, 50.0);
  EXPECT_EQ(d.energy_method, EnergyMethod::kPartial);  // 0.3-0.5 s: no plausible counter, no power at 0.4
  EXPECT_NEAR(*d.energy_j, 80.0, 1e-9);
  EXPECT_EQ(to_json(s)["devices"][0]["dropped_readings"], 3);
}

TEST(Summary, IdleGpusAndEmptySessions) {
  std::vector<Sample> samples(2);
  samples[1].t_s = 0.5;
  for (Sample& s : samples) {
    DeviceReading g;
    g.index = 0;
    g.kind = DeviceKind::kCuda;
    g.utilization_percent = 0;
    s.readings.push_back(g);
  }
  const MonitorSummary s = summarize(samples);
  EXPECT_FALSE(s.aggregate.any_gpu_active);
  EXPECT_EQ(s.devices[0].energy_method, EnergyMethod::kUnavailable);
  EXPECT_FALSE(s.aggregate.total_energy_j.has_value());
  const MonitorSummary empty = summarize({});
  EXPECT_EQ(empty.samples, 0);
  EXPECT_TRUE(empty.devices.empty());
}

TEST(Summary, JsonUsesTheDocumentedNames) {
  const Json j = to_json(summarize(scripted()));
  for (const char* key : {"duration_s", "devices", "host", "aggregate", "sampler"}) EXPECT_TRUE(j.contains(key)) << key;
  ASSERT_EQ(j["devices"].size(), 2u);
  for (const char* key : {"index", "name", "avg_power_w", "max_power_w", "energy_j", "energy_method",
                          "avg_utilization_percent", "max_utilization_percent", "avg_memory_used_mb",
                          "max_temperature_c"})
    EXPECT_TRUE(j["devices"][0].contains(key)) << key;
  for (const char* key : {"total_avg_utilization", "total_max_utilization", "total_avg_memory_mb",
                          "avg_utilization_per_gpu", "avg_memory_per_gpu_mb", "any_gpu_active"})
    EXPECT_TRUE(j["aggregate"].contains(key)) << key;
  EXPECT_EQ(j["devices"][0]["energy_method"], "counter");
  EXPECT_EQ(j["devices"][1]["energy_method"], "power-integration");
  EXPECT_EQ(j["host"]["index"], "cpu");
  EXPECT_EQ(j["host"]["energy_method"], "unavailable");
  EXPECT_TRUE(j["host"]["energy_j"].is_null());
}

}  // namespace plexus
