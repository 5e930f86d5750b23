// EnergyCurve and energy_in_windows on scripted samples: the energy inside windows from a counter
// and from power alone, windows between samples and past the last one, and no energy without
// power or counter readings.
#include "monitor/energy_curve.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace plexus {
namespace {

// 11 samples over one second of one GPU: `counter` — a steady 100 W read as an energy counter
// (no power reading); otherwise power only, ramping 100 → 200 W.
std::vector<Sample> gpu_samples(bool counter) {
  std::vector<Sample> samples;
  for (int i = 0; i <= 10; ++i) {
    Sample s;
    s.t_s = i * 0.1;
    DeviceReading r;
    r.index = 0;
    r.kind = DeviceKind::kCuda;
    r.name = "gpu0";
    if (counter) r.energy_counter_j = 7000 + 100 * s.t_s;
    else r.power_w = 100 + 100 * s.t_s;
    r.utilization_percent = 40;
    s.readings = {r};
    samples.push_back(s);
  }
  return samples;
}

TEST(EnergyCurve, WindowsOfACounterBetweenSamples) {
  const std::vector<std::pair<double, double>> windows = {{0.05, 0.15}, {0.3, 0.55}};
  const WindowEnergy w = energy_in_windows(gpu_samples(true), windows);
  EXPECT_NEAR(w.seconds, 0.35, 1e-12);
  ASSERT_TRUE(w.energy_j);
  EXPECT_NEAR(*w.energy_j, 100 * 0.35, 1e-9);  // the counter's steps, interpolated inside intervals
}

TEST(EnergyCurve, WindowsOfPowerAloneFollowTheTrapezoid) {
  const std::vector<std::pair<double, double>> windows = {{0.2, 0.4}};
  const WindowEnergy w = energy_in_windows(gpu_samples(false), windows);
  ASSERT_TRUE(w.energy_j);
  EXPECT_NEAR(*w.energy_j, 20 + 100 * (0.4 * 0.4 - 0.2 * 0.2) / 2, 1e-9);  // ∫ 100 + 100 t dt over [0.2, 0.4]
}

TEST(EnergyCurve, PastTheLastSampleExtrapolatesItsPower) {
  EnergyCurve curve;
  for (const Sample& s : gpu_samples(false)) curve.add(s);
  EXPECT_NEAR(curve.cumulative(), 150, 1e-9);  // ∫ 100 + 100 t over [0, 1]
  EXPECT_NEAR(curve.energy_between(1.0, 1.5), 200 * 0.5, 1e-9);  // the last reading, 200 W
  EXPECT_NEAR(curve.energy_between(-1, 0.1), 10.5, 1e-9);         // before the first sample: nothing
  curve.forget_before(0.55);  // keeps 0.5 onwards: E after it is unchanged
  EXPECT_NEAR(curve.energy_between(0.5, 1.0), 150 - 62.5, 1e-9);
  EXPECT_EQ(curve.size(), 6u);
}

TEST(EnergyCurve, NoPowerOrCounterMeansNoEnergy) {
  std::vector<Sample> samples = gpu_samples(false);
  for (Sample& s : samples) s.readings[0].power_w.reset();
  const std::vector<std::pair<double, double>> windows = {{0.1, 0.3}};
  const WindowEnergy w = energy_in_windows(samples, windows);
  EXPECT_NEAR(w.seconds, 0.2, 1e-12);
  EXPECT_FALSE(w.energy_j) << "never 0 pretending to be a measurement";
}

}  // namespace
}  // namespace plexus
