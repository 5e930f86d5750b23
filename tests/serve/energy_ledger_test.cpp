// The energy ledger on scripted sources of known constant power: a step's energy is power ×
// its duration (by power or by counter), shared by tokens; shares sum to the steps' energy; the
// sample store stays small however long it runs; a stalled source is extrapolated, not waited on.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "scripted_source.h"
#include "serve/energy_ledger.h"

namespace plexus {
namespace {

using testing::ScriptedDevice;
using testing::scripted;
using testing::ScriptedSource;

using Tokens = std::vector<std::pair<std::uint64_t, std::int64_t>>;

// A step of about `ms` milliseconds ending now; returns its duration.
double run_step(EnergyLedger& ledger, int ms, const Tokens& tokens) {
  const double t0 = ledger.now_s();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  const double t1 = ledger.now_s();
  ledger.record_step(t0, t1, tokens);
  return t1 - t0;
}

// `tolerance` (relative): power readings make E(t) exactly linear; a counter is read a little
// after the sample's time stamp (later still on a loaded machine), so its steps jitter. The
// sharing within a step is exact either way.
void expect_shares(std::vector<ScriptedDevice> devices, double watts, double tolerance) {
  EnergyLedger ledger(scripted(std::move(devices)), 5);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double d1 = run_step(ledger, 200, {{1, 3}, {2, 1}});
  const double d2 = run_step(ledger, 150, {{3, 2}});
  const auto e1 = ledger.take_request_energy(1);
  const auto e2 = ledger.take_request_energy(2);
  const auto e3 = ledger.take_request_energy(3);
  ASSERT_TRUE(e1 && e2 && e3);
  EXPECT_NEAR(*e1, 3 * *e2, 1e-12 * watts);  // 3 tokens against 1 in the same step
  EXPECT_NEAR(*e1 + *e2, watts * d1, tolerance * watts * d1);
  EXPECT_NEAR(*e3, watts * d2, tolerance * watts * d2);
  // The shares add up to the steps' measured energy (up to rounding).
  ASSERT_TRUE(ledger.attributed_j().has_value());
  EXPECT_NEAR(*ledger.attributed_j(), *e1 + *e2 + *e3, 1e-12 * watts);
  ASSERT_TRUE(ledger.measured_j().has_value());
  EXPECT_GE(*ledger.measured_j(), *ledger.attributed_j());  // idle time between steps is not attributed
  EXPECT_EQ(ledger.take_request_energy(1), 0.0);  // forgotten
}

TEST(EnergyLedger, StepEnergySharedByTokensFromPower) {
  expect_shares({{100, false, false}, {50, false, false}}, 150, 1e-9);
}

TEST(EnergyLedger, StepEnergyFromTheEnergyCounter) { expect_shares({{200, true, false}}, 200, 0.5); }

TEST(EnergyLedger, DevicesForMetrics) {
  EnergyLedger ledger(scripted({{100, false, false}, {0, false, true}}), 5);
  for (int i = 0; i < 1000 && !(ledger.devices().size() == 2 && ledger.devices()[0].energy_j); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // until an interval is sampled
  }
  const std::vector<DeviceEnergy> d = ledger.devices();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].key, "0");
  EXPECT_EQ(d[0].name, "scripted 0");
  EXPECT_EQ(d[0].power_w, 100.0);
  ASSERT_TRUE(d[0].energy_j.has_value());
  EXPECT_GT(*d[0].energy_j, 0);
  EXPECT_FALSE(d[1].power_w.has_value());
  EXPECT_FALSE(d[1].energy_j.has_value());
  EXPECT_GE(*ledger.measured_j(), *d[0].energy_j);  // (a sample may come between the two reads)
}

TEST(EnergyLedger, NoEnergyAnywhereIsNullopt) {
  EnergyLedger silent(scripted({{0, false, true}}), 5);
  run_step(silent, 5, {{1, 1}});
  EXPECT_FALSE(silent.take_request_energy(1).has_value());
  EXPECT_FALSE(silent.measured_j().has_value());
  EXPECT_FALSE(silent.attributed_j().has_value());
  EnergyLedger none({}, 5);
  run_step(none, 1, {{1, 1}});
  EXPECT_FALSE(none.take_request_energy(1).has_value());
  EXPECT_TRUE(none.devices().empty());
  EXPECT_THROW(EnergyLedger({}, 0), InputError);
}

TEST(EnergyLedger, NoEnergySourceMeansNoWaitForASample) {
  // A minute between samples: a request's energy that waited for the next one would take two.
  EnergyLedger silent(scripted({{0, false, true}}), 60000);
  run_step(silent, 1, {{1, 3}});
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(silent.take_request_energy(1).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(silent.stored_samples(), 1u);  // the first sample only: nothing was waited for
}

TEST(EnergyLedger, SampleStoreStaysBoundedOverALongRun) {
  // The store holds the samples since the start of the step before the latest (what steps still
  // to resolve can need), not the run's: at most that window / interval + a few, however long it
  // runs. A loaded machine stretches the 2 ms steps, so the window is measured, not assumed.
  const int before = ScriptedSource::samples().load();
  constexpr double kIntervalS = 0.001;
  EnergyLedger ledger(scripted({{100, false, false}}), kIntervalS * 1e3);
  std::size_t most = 0;
  double total_s = 0, total_j = 0, widest = 0, previous_t0 = ledger.now_s();
  for (std::uint64_t id = 1; id <= 150; ++id) {
    const double t0 = ledger.now_s();
    total_s += run_step(ledger, 2, {{id, 1}});
    const std::size_t stored = ledger.stored_samples();
    widest = std::max(widest, ledger.now_s() - previous_t0);
    most = std::max(most, stored);
    previous_t0 = t0;
    if (id % 10 == 0) {  // requests end now and then
      for (std::uint64_t j = id - 9; j <= id; ++j) total_j += ledger.take_request_energy(j).value_or(-1e9);
    }
  }
  const int samples = ScriptedSource::samples().load() - before;
  EXPECT_GT(samples, 100);
  EXPECT_LE(static_cast<double>(most), widest / kIntervalS + 5) << samples << " samples taken";
  EXPECT_NEAR(total_j, 100 * total_s, 1e-6);
}

TEST(EnergyLedger, AStalledSourceIsExtrapolatedNotWaitedOn) {
  EnergyLedger ledger(scripted({{100, false, false}}), 5);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ScriptedSource::hold(true);  // the sampler thread blocks in the source
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const double d = run_step(ledger, 10, {{7, 1}});
  const auto start = std::chrono::steady_clock::now();
  const auto e = ledger.take_request_energy(7);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ScriptedSource::hold(false);
  ASSERT_TRUE(e.has_value());
  EXPECT_NEAR(*e, 100 * d, 1e-6);  // the last sample's power, carried forward
  EXPECT_LT(waited, 4.0);          // well under the driver call limit
}

// Issue 33: the idle power is the mean power reading before the first request; the load is the
// time some request is in flight (overlapping requests counted once), its energy power × that
// time (power readings make E(t) exactly linear), its power and utilisation the readings' means.
TEST(EnergyLedger, IdleBeforeTheLoadAndTheLoad) {
  EnergyLedger ledger(scripted({{100, false, false}, {0, false, true}}), 5);
  ledger.wait_idle(3);
  std::vector<DeviceEnergy> d = ledger.devices();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].idle_power_w, 100.0);
  EXPECT_FALSE(d[1].idle_power_w.has_value());  // no power reading: absent, not 0
  EXPECT_FALSE(d[0].load_power_w.has_value());  // no load yet
  EXPECT_EQ(ledger.load().seconds, 0.0);
  EXPECT_EQ(ledger.load().energy_j, 0.0);

  const double t0 = ledger.now_s();
  ledger.request_began();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  ledger.request_began();  // overlaps the first
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  ledger.request_ended();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  ledger.request_ended();
  const double t1 = ledger.now_s();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // idle after the load
  LoadTotals load = ledger.load();
  EXPECT_GE(load.seconds, 0.18);
  EXPECT_LE(load.seconds, t1 - t0);
  ASSERT_TRUE(load.energy_j.has_value());
  EXPECT_NEAR(*load.energy_j, 100 * load.seconds, 1e-9 * 100);
  d = ledger.devices();
  EXPECT_EQ(d[0].load_power_w, 100.0);
  EXPECT_EQ(d[0].load_utilization_percent, 50.0);
  EXPECT_FALSE(d[1].load_power_w.has_value());
  EXPECT_EQ(d[1].load_utilization_percent, 50.0);

  // A second load adds to the first; the idle power stays what it was before the first.
  ledger.request_began();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ledger.request_ended();
  const LoadTotals two = ledger.load();
  EXPECT_GE(two.seconds, load.seconds + 0.05);
  EXPECT_NEAR(*two.energy_j, 100 * two.seconds, 1e-9 * 100);
  EXPECT_EQ(ledger.devices()[0].idle_power_w, 100.0);
}

TEST(EnergyLedger, NoEnergyAnywhereMeansNoLoadEnergy) {
  EnergyLedger silent(scripted({{0, false, true}}), 5);
  silent.request_began();
  silent.request_ended();
  EXPECT_FALSE(silent.load().energy_j.has_value());
  EXPECT_FALSE(silent.devices()[0].idle_power_w.has_value());
}

}  // namespace
}  // namespace plexus
