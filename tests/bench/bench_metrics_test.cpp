// Result sections from hand-made timings and monitor summaries, where every number is exact.
#include <gtest/gtest.h>

#include "bench/bench_metrics.h"

namespace plexus::bench {
namespace {

DeviceSummary gpu(int index, double energy, EnergyMethod method) {
  DeviceSummary d;
  d.index = index;
  d.kind = DeviceKind::kCuda;
  d.name = "GPU " + std::to_string(index);
  d.energy_j = energy;
  d.energy_method = method;
  d.avg_power_w = 100;
  d.avg_utilization_percent = 40;
  d.avg_memory_used_mb = 2048;
  d.memory_total_mb = 8192;
  d.avg_temperature_c = 60;
  return d;
}

TEST(BenchMetrics, Throughput) {
  RunTimings t;
  t.samples = {{10, 20, 5, 100}, {30, 20, 5, 100}};
  t.wall_s = 2;
  const Json j = throughput_json(t);
  EXPECT_DOUBLE_EQ(j["tokens_per_s"], 20);        // 40 output tokens / 2 s
  EXPECT_DOUBLE_EQ(j["total_tokens_per_s"], 40);  // + 40 prompt tokens
  EXPECT_DOUBLE_EQ(j["samples_per_s"], 1);
  EXPECT_EQ(j["output_tokens"], 40);
  EXPECT_TRUE(j["host_ms_per_step"].is_null());  // no decode steps recorded
  t.decode_s = 1.5;
  t.steps = {10, 1.2};  // 10 steps, 1.2 s of them in forwards: 0.3 s of host work
  const Json d = throughput_json(t);
  EXPECT_EQ(d["decode_steps"], 10);
  EXPECT_NEAR(d["host_ms_per_step"].get<double>(), 30, 1e-9);
  const Json l = latency_json(t);
  EXPECT_DOUBLE_EQ(l["ttft_ms"]["p50"], 5);
  EXPECT_DOUBLE_EQ(l["tpot_ms"]["p99"], 5);  // (100 - 5) / 19
  EXPECT_DOUBLE_EQ(l["e2e_ms"]["mean"], 100);
  for (const char* k : {"ttft_ms", "tpot_ms", "e2e_ms"}) {
    for (const char* p : {"p50", "p90", "p99", "mean"}) EXPECT_TRUE(l[k].contains(p)) << k << "." << p;
  }
}

TEST(BenchMetrics, EnergyAndGpuStats) {
  MonitorSummary s;
  s.duration_s = 2;
  s.devices = {gpu(0, 300, EnergyMethod::kCounter), gpu(1, 100, EnergyMethod::kCounter)};
  s.devices[0].idle_power_w = 50;
  s.devices[0].energy_above_idle_j = 200;
  s.devices[1].idle_power_w = 25;
  s.devices[1].energy_above_idle_j = 50;
  s.idle_baseline_s = 1;
  DeviceSummary host;
  host.name = "cpu";
  s.devices.push_back(host);  // no RAPL
  const Json e = energy_json(s, 200);
  EXPECT_DOUBLE_EQ(e["total_j"], 400);
  EXPECT_DOUBLE_EQ(e["gpu_j"], 400);
  EXPECT_DOUBLE_EQ(e["j_per_token"], 2);
  EXPECT_DOUBLE_EQ(e["tokens_per_j"], 0.5);
  EXPECT_EQ(e["method"], "counter");
  EXPECT_DOUBLE_EQ(e["above_idle_j"], 250);
  EXPECT_DOUBLE_EQ(e["j_per_token_above_idle"], 1.25);
  EXPECT_DOUBLE_EQ(e["idle_power_w"], 75);
  EXPECT_EQ(e["devices"]["cpu"]["method"], "unavailable");
  EXPECT_TRUE(e["devices"]["cpu"]["energy_j"].is_null());

  s.devices[1].energy_method = EnergyMethod::kPowerIntegration;
  EXPECT_EQ(energy_json(s, 200)["method"], "mixed");

  const Json g = gpu_stats_json(s);
  ASSERT_EQ(g.size(), 2u);  // the host is not a GPU
  for (const char* k : {"utilization_percent", "memory_used_mb", "memory_total_mb", "memory_percent", "temperature_c", "power_draw_w"}) {
    EXPECT_TRUE(g["gpu_0"].contains(k)) << k;
  }
  EXPECT_DOUBLE_EQ(g["gpu_1"]["memory_percent"], 25);
  EXPECT_DOUBLE_EQ(g["gpu_0"]["power_draw_w"], 100);
  EXPECT_EQ(host_stats_json(s)["energy_method"], "unavailable");
}

// The load's utilisation is the GPUs' mean (the host's CPU utilisation is not a GPU's); the
// forward passes' energy gives the attributed J/token beside the whole run's.
TEST(BenchMetrics, LoadUtilisationAndAttributedJoulesPerToken) {
  MonitorSummary s;
  s.devices = {gpu(0, 300, EnergyMethod::kCounter), gpu(1, 100, EnergyMethod::kCounter)};
  s.devices[0].avg_utilization_percent = 30;
  s.devices[1].avg_utilization_percent = 50;
  DeviceSummary host;
  host.avg_utilization_percent = 100;
  s.devices.push_back(host);
  const WindowEnergy forwards{1.5, 250.0};
  const Json e = energy_json(s, 200, &forwards);
  EXPECT_DOUBLE_EQ(e["avg_utilization_percent"], 40);
  EXPECT_DOUBLE_EQ(e["devices"]["gpu_1"]["utilization_percent"], 50);
  EXPECT_DOUBLE_EQ(e["attributed_j"], 250);
  EXPECT_DOUBLE_EQ(e["attributed_s"], 1.5);
  EXPECT_DOUBLE_EQ(e["j_per_token_attributed"], 1.25);
  EXPECT_DOUBLE_EQ(e["j_per_token"], 2);
  // Not timed (generate), or timed without any energy reading: null, never 0.
  const WindowEnergy unmeasured{1.5, std::nullopt};
  for (const Json& n : {energy_json(s, 200), energy_json(s, 200, &unmeasured)}) {
    EXPECT_TRUE(n["attributed_j"].is_null());
    EXPECT_TRUE(n["j_per_token_attributed"].is_null());
  }
  s.devices.pop_back();
  for (DeviceSummary& d : s.devices) d.avg_utilization_percent.reset();
  EXPECT_TRUE(energy_json(s, 200)["avg_utilization_percent"].is_null());
}

TEST(BenchMetrics, NothingMeasuredIsNullNeverZero) {
  MonitorSummary s;
  DeviceSummary host;
  s.devices.push_back(host);
  const Json e = energy_json(s, 100);
  EXPECT_TRUE(e["total_j"].is_null());
  EXPECT_TRUE(e["j_per_token"].is_null());
  EXPECT_TRUE(e["tokens_per_j"].is_null());
  EXPECT_EQ(e["method"], "unavailable");
  EXPECT_EQ(gpu_stats_json(s), Json::object());
  EXPECT_TRUE(host_stats_json(s).is_object());
  EXPECT_TRUE(host_stats_json(MonitorSummary{}).is_null());
}

TEST(BenchMetrics, TimelineKeepsEverySampleAlignedWithNulls) {
  Sample a, b;
  a.t_s = 0;
  b.t_s = 0.1;
  DeviceReading g0;
  g0.index = 0;
  g0.utilization_percent = 50;
  g0.power_w = 120;
  DeviceReading cpu;
  cpu.utilization_percent = 30;
  a.readings = {cpu};
  b.readings = {g0, cpu};
  const Json t = timeline_json({a, b});
  EXPECT_EQ(t["t_s"], Json::array({0.0, 0.1}));
  EXPECT_EQ(t["devices"]["gpu_0"]["utilization_percent"], Json::array({nullptr, 50.0}));
  EXPECT_EQ(t["devices"]["gpu_0"]["power_w"], Json::array({nullptr, 120.0}));
  EXPECT_EQ(t["devices"]["cpu"]["power_w"], Json::array({nullptr, nullptr}));
}

}  // namespace
}  // namespace plexus::bench

#include "exec/exec_stats.h"

namespace plexus {
namespace {

TEST(ExecStatsSince, LeavesOutWhatRanBefore) {
  ExecStats before, now;
  before.wall_s = 1;
  before.forwards = 3;
  before.devices = {{"virtual:0", 0, 100, 0, 0, 0.5, 0.5, "layers 0-1"}};
  now = before;
  now.wall_s = 3;
  now.forwards = 10;
  now.streamed_bytes = 7;
  now.devices[0].busy_s = 1.5;
  now.devices[0].peak_bytes = 64;
  const ExecStats d = exec_stats_since(now, before);
  EXPECT_DOUBLE_EQ(d.wall_s, 2);
  EXPECT_EQ(d.forwards, 7);
  EXPECT_EQ(d.streamed_bytes, 7);
  EXPECT_DOUBLE_EQ(d.devices[0].busy_s, 1);
  EXPECT_DOUBLE_EQ(d.devices[0].busy_fraction, 0.5);
  EXPECT_EQ(d.devices[0].peak_bytes, 64);  // peaks are the run's
}

}  // namespace
}  // namespace plexus
