// The ledger's sampler thread (cumulative energy of all devices at each sample, a bounded window
// of them), step energy by interpolation, and its sharing among requests by tokens.
#include "serve/energy_ledger.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/error.h"
#include "monitor/energy_steps.h"
#include "monitor/monitor_session.h"
#include "monitor/timed_source.h"

namespace plexus {

namespace {

using Clock = std::chrono::steady_clock;

struct DeviceState {
  std::string key, name;
  EnergySteps steps;
  std::optional<double> power_w, energy_j;
};

// All devices' energy since the start at a sample, and the power to extrapolate past it with.
struct Point {
  double t = 0, e = 0, p = 0;
};

struct Step {
  double t0 = 0, t1 = 0;
  std::vector<std::pair<std::uint64_t, std::int64_t>> tokens;
};

struct Owed {
  double j = 0;
  int pending = 0;  // recorded steps not yet resolved
};

}  // namespace

struct EnergyLedger::Impl {
  Clock::time_point t0 = Clock::now();
  double interval_s;
  std::vector<std::unique_ptr<MetricSource>> sources;  // TimedSource each
  std::vector<MetricSource*> open;

  mutable std::mutex mutex;
  std::condition_variable cv;  // a new sample, or stop
  bool stop = false;
  std::vector<DeviceState> devices;  // first-seen order
  bool any_energy = false;      // some device reported power or an energy counter
  double cumulative = 0;
  std::deque<Point> points;
  std::deque<Step> pending;  // in t1 order
  std::unordered_map<std::uint64_t, Owed> requests;
  double attributed = 0;
  double last_step_end = -std::numeric_limits<double>::infinity();
  std::thread thread;

  void add_sample(const Sample& s);
  double energy_at(double t) const;
  void resolve(bool extrapolate);
  void prune(double now);
  void loop();
};

void EnergyLedger::Impl::add_sample(const Sample& s) {
  double joules = 0;
  for (const DeviceReading& r : s.readings) {
    const std::string key = r.key();
    auto it = std::find_if(devices.begin(), devices.end(), [&](const DeviceState& d) { return d.key == key; });
    if (it == devices.end()) {
      devices.push_back({key, r.name, {}, {}, {}});
      it = devices.end() - 1;
    }
    const IntervalEnergy e = it->steps.add(s.t_s, r);
    if (r.power_w || r.energy_counter_j) any_energy = true;
    it->power_w = r.power_w;
    if (e.joules) {
      it->energy_j = it->energy_j.value_or(0) + *e.joules;
      joules += *e.joules;
    }
  }
  cumulative += joules;
  // The power to extrapolate with: the devices' power readings now, else the interval's mean.
  Point p{s.t_s, cumulative, 0};
  bool any_power = false;
  for (const DeviceReading& r : s.readings) {
    if (!r.power_w) continue;
    p.p += *r.power_w;
    any_power = true;
  }
  if (!any_power && !points.empty() && s.t_s > points.back().t) p.p = joules / (s.t_s - points.back().t);
  points.push_back(p);
}

// E(t): linear between the samples around t; before the first kept sample, its value; past the
// last one, extrapolated with the last interval's power.
double EnergyLedger::Impl::energy_at(double t) const {
  if (points.empty()) return 0;
  if (t <= points.front().t) return points.front().e;
  if (t >= points.back().t) return points.back().e + points.back().p * (t - points.back().t);
  const auto hi = std::upper_bound(points.begin(), points.end(), t, [](double v, const Point& q) { return v < q.t; });
  const Point& b = *hi;
  const Point& a = *(hi - 1);
  return a.e + (b.e - a.e) * (t - a.t) / (b.t - a.t);
}

// Shares the energy of every step the samples cover (all pending steps with `extrapolate`).
void EnergyLedger::Impl::resolve(bool extrapolate) {
  while (!pending.empty() && (extrapolate || open.empty() || (!points.empty() && pending.front().t1 <= points.back().t))) {
    const Step& step = pending.front();
    const double energy = std::max(0.0, energy_at(step.t1) - energy_at(step.t0));
    std::int64_t total = 0;
    for (const auto& [id, n] : step.tokens) total += n;
    for (const auto& [id, n] : step.tokens) {
      const double share = total > 0 ? energy * static_cast<double>(n) / static_cast<double>(total) : 0;
      Owed& owed = requests[id];
      owed.j += share;
      --owed.pending;
      attributed += share;
    }
    pending.pop_front();
  }
}

// Keeps the points that steps still to be recorded or resolved can need: from the last one at or
// before the earliest of them (the next step starts after the last recorded one ended).
void EnergyLedger::Impl::prune(double now) {
  double need = std::max(last_step_end, now - kKeepSeconds);
  for (const Step& s : pending) need = std::min(need, s.t0);
  while (points.size() >= 2 && points[1].t <= need) points.pop_front();
}

void EnergyLedger::Impl::loop() {
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval_s));
  auto next = Clock::now() + interval;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (cv.wait_until(lock, next, [&] { return stop; })) return;
    }
    const Sample s = read_sample(open, t0);
    {
      std::lock_guard<std::mutex> lock(mutex);
      add_sample(s);
      resolve(false);
      prune(s.t_s);
    }
    cv.notify_all();
    next += interval;
    const auto now = Clock::now();
    if (next < now) next = now + interval;  // fell behind (slow source): skip, don't burst
  }
}

EnergyLedger::EnergyLedger(std::vector<std::unique_ptr<MetricSource>> sources, double interval_ms)
    : impl_(std::make_unique<Impl>()) {
  if (!(interval_ms >= 1 && interval_ms <= 60000))
    throw InputError("energy sampling interval must be between 1 ms and 60 s, got " + std::to_string(interval_ms) + " ms");
  Impl& m = *impl_;
  m.interval_s = interval_ms / 1e3;
  for (auto& source : sources) {
    auto timed = std::make_unique<TimedSource>(std::move(source), driver_call_limit());
    std::string why;
    if (timed->open(&why)) m.open.push_back(timed.get());
    m.sources.push_back(std::move(timed));
  }
  if (m.open.empty()) return;
  m.add_sample(read_sample(m.open, m.t0));
  m.thread = std::thread([&m] { m.loop(); });
}

EnergyLedger::~EnergyLedger() {
  Impl& m = *impl_;
  if (m.thread.joinable()) {
    {
      std::lock_guard<std::mutex> lock(m.mutex);
      m.stop = true;
    }
    m.cv.notify_all();
    m.thread.join();
  }
  for (MetricSource* source : m.open) source->close();
}

double EnergyLedger::now_s() const { return std::chrono::duration<double>(Clock::now() - impl_->t0).count(); }

void EnergyLedger::record_step(double t0, double t1, std::span<const std::pair<std::uint64_t, std::int64_t>> tokens) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  m.last_step_end = std::max(m.last_step_end, t1);
  Step step{t0, t1, {tokens.begin(), tokens.end()}};
  for (const auto& [id, n] : step.tokens) ++m.requests[id].pending;
  m.pending.push_back(std::move(step));
  m.resolve(false);
}

std::optional<double> EnergyLedger::take_request_energy(std::uint64_t id) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mutex);
  const auto settled = [&] {
    const auto it = m.requests.find(id);
    return it == m.requests.end() || it->second.pending <= 0;
  };
  // No device reports power or energy (the first sample, taken at the start, said so): nothing
  // to wait for. Otherwise one interval (the next sample) and a margin for a slow source; then
  // extrapolate.
  const auto limit = std::chrono::duration<double>(2 * m.interval_s + 0.5);
  if (!m.any_energy || !m.cv.wait_for(lock, limit, settled)) m.resolve(true);
  const auto it = m.requests.find(id);
  const double j = it == m.requests.end() ? 0 : it->second.j;
  if (it != m.requests.end()) m.requests.erase(it);
  if (!m.any_energy) return std::nullopt;
  return j;
}

std::vector<DeviceEnergy> EnergyLedger::devices() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<DeviceEnergy> out;
  for (const DeviceState& d : impl_->devices) out.push_back({d.key, d.name, d.power_w, d.energy_j});
  return out;
}

std::optional<double> EnergyLedger::measured_j() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->any_energy) return std::nullopt;
  return impl_->cumulative;
}

std::optional<double> EnergyLedger::attributed_j() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->any_energy) return std::nullopt;
  return impl_->attributed;
}

std::size_t EnergyLedger::stored_samples() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->points.size();
}

}  // namespace plexus
