// Energy per request: a monitor (monitor/) samples the devices for the server's whole life, in
// bounded memory, and every scheduler step [t0, t1] gets the energy the devices used in it
// (the cumulative energy interpolated between samples); the step's energy is shared among its
// requests by their share of the step's tokens. So the requests' energy_j sums to the measured
// energy of the steps; energy between steps (the server idle) is counted apart. Apart from the
// steps, the ledger measures the load (the time requests are in flight: its energy from the same
// cumulative energy, each device's mean power and utilisation readings in it) and each device's
// idle power (its mean power reading before the first request).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "monitor/metric_source.h"

namespace plexus {

// One monitored device now, for /metrics.
struct DeviceEnergy {
  std::string key;   // "0", "1", ... or "cpu" (monitor/reading.h)
  std::string name;
  std::optional<double> power_w;   // latest reading
  std::optional<double> energy_j;  // since the ledger started
  std::optional<double> idle_power_w;  // mean power reading before the first request
  // Mean readings of the samples taken while requests were in flight (utilisation in percent).
  std::optional<double> load_power_w, load_utilization_percent;
};

// The load: the time some request was in flight (running or waiting), all loads together.
struct LoadTotals {
  double seconds = 0;
  std::optional<double> energy_j;  // all devices over that time; nullopt when no device reports energy
};

class EnergyLedger {
 public:
  // Opens the sources (each with a time limit per call, TimedSource) and starts sampling every
  // `interval_ms` (InputError outside 1 ms .. 60 s).
  EnergyLedger(std::vector<std::unique_ptr<MetricSource>> sources, double interval_ms = 100);
  ~EnergyLedger();
  EnergyLedger(const EnergyLedger&) = delete;
  EnergyLedger& operator=(const EnergyLedger&) = delete;

  // Seconds on the ledger's clock (steady, from its start): the times steps are given in.
  double now_s() const;
  // The scheduler's side: one step from t0 to t1 and the tokens each request (by id) had in it.
  void record_step(double t0, double t1, std::span<const std::pair<std::uint64_t, std::int64_t>> tokens);
  // The energy shared to request `id` over all its steps, once its last step is recorded; waits
  // until the monitor has sampled past that step (one sampling interval, normally; with no sample
  // for two intervals + 0.5 s — a dead source — the energy is extrapolated with the last
  // sample's power). 0 for an id in no step; nullopt when no device reports energy. Forgets the request.
  std::optional<double> take_request_energy(std::uint64_t id);

  // The scheduler's side: a request accepted, and that request ended (however). The load runs
  // while some request is in flight.
  void request_began();
  void request_ended();
  // Waits until `samples` samples were taken before any request (the idle power), at most
  // 2 × `samples` intervals + 0.5 s; at once when no source opened.
  void wait_idle(int samples);

  // The /metrics side.
  std::vector<DeviceEnergy> devices() const;
  std::optional<double> measured_j() const;    // all devices, since the start
  std::optional<double> attributed_j() const;  // shared out to requests so far
  LoadTotals load() const;  // the load so far (a running one up to now)
  // Cumulative-energy points kept (bounded: those the unresolved steps need, at most the last
  // kKeepSeconds when the server idles); for tests.
  std::size_t stored_samples() const;
  static constexpr double kKeepSeconds = 600;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus
