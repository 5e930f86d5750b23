// The ledger's sampler thread (cumulative energy of all devices at each sample, a bounded window
// of them), step energy by interpolation, and its sharing among requests by tokens; the load's
// energy by the same interpolation, and the idle and load means of the readings.
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
#include "monitor/energy_curve.h"
#include "monitor/monitor_session.h"
#include "monitor/timed_source.h"

namespace plexus {

namespace {

using Clock = std::chrono::steady_clock;

// A mean of readings: nullopt without any.
struct Mean {
  double sum = 0;
  int n = 0;
  void add(const std::optional<double>& v) {
    if (!v) return;
    sum += *v;
    ++n;
  }
  std::optional<double> value() const { return n > 0 ? std::optional<double>(sum / n) : std::nullopt; }
};

struct DeviceState {
  std::string key, name;
  std::optional<double> power_w, energy_j;
  Mean idle_power, load_power, load_utilization;
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
  EnergyCurve curve;  // all devices' cumulative energy: curve.any_energy(), curve.cumulative()
  std::deque<Step> pending;  // in t1 order
  std::unordered_map<std::uint64_t, Owed> requests;
  double attributed = 0;
  double last_step_end = -std::numeric_limits<double>::infinity();
  // The load: requests in flight now; whether one ever was; whether one was since the last sample.
  int in_flight = 0;
  bool loaded = false, load_touched = false;
  int idle_samples = 0;      // taken before any request
  double load_begin = 0;     // of the running load
  double load_mark = 0;      // the running load's energy is counted up to here
  double load_ended_s = 0;   // the ended loads' time
  double load_j = 0;         // the load's energy counted
  std::deque<std::pair<double, double>> load_tails;  // ended loads' [mark, end], waiting for a sample past end
  std::thread thread;

  void add_sample(const Sample& s);
  void resolve(bool extrapolate);
  void count_load();
  double load_energy(double now) const;
  void prune(double now);
  void loop();
};

void EnergyLedger::Impl::add_sample(const Sample& s) {
  const std::vector<std::optional<double>> joules = curve.add(s);
  const bool in_load = in_flight > 0 || load_touched;
  load_touched = in_flight > 0;
  if (!loaded && !in_load) ++idle_samples;
  for (std::size_t i = 0; i < s.readings.size(); ++i) {
    const DeviceReading& r = s.readings[i];
    const std::string key = r.key();
    auto it = std::find_if(devices.begin(), devices.end(), [&](const DeviceState& d) { return d.key == key; });
    if (it == devices.end()) {
      devices.push_back({key, r.name, {}, {}, {}, {}, {}});
      it = devices.end() - 1;
    }
    it->power_w = r.power_w;
    if (in_load) {
      it->load_power.add(r.power_w);
      it->load_utilization.add(r.utilization_percent);
    } else if (!loaded) {
      it->idle_power.add(r.power_w);
    }
    if (joules[i]) it->energy_j = it->energy_j.value_or(0) + *joules[i];
  }
}

// Shares the energy of every step the samples cover (all pending steps with `extrapolate`).
void EnergyLedger::Impl::resolve(bool extrapolate) {
  while (!pending.empty() && (extrapolate || open.empty() || (!curve.empty() && pending.front().t1 <= curve.last_t()))) {
    const Step& step = pending.front();
    const double energy = curve.energy_between(step.t0, step.t1);
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

// Counts the load's energy that the samples cover: the running load's up to the last sample, and
// the ended loads' whose end a sample passed.
void EnergyLedger::Impl::count_load() {
  if (curve.empty()) return;
  const double last = curve.last_t();
  if (in_flight > 0 && last > load_mark) {
    load_j += curve.energy_between(load_mark, last);
    load_mark = last;
  }
  while (!load_tails.empty() && load_tails.front().second <= last) {
    load_j += curve.energy_between(load_tails.front().first, load_tails.front().second);
    load_tails.pop_front();
  }
}

// The load's energy up to `now`: what count_load() left, extrapolated past the last sample.
double EnergyLedger::Impl::load_energy(double now) const {
  double j = load_j;
  for (const auto& [mark, end] : load_tails) j += curve.energy_between(mark, end);
  if (in_flight > 0 && now > load_mark) j += curve.energy_between(load_mark, now);
  return j;
}

// Keeps the points that steps still to be recorded or resolved can need: from the last one at or
// before the earliest of them (the next step starts after the last recorded one ended).
void EnergyLedger::Impl::prune(double now) {
  double need = std::max(last_step_end, now - kKeepSeconds);
  for (const Step& s : pending) need = std::min(need, s.t0);
  for (const auto& tail : load_tails) need = std::min(need, tail.first);
  if (in_flight > 0) need = std::min(need, load_mark);
  curve.forget_before(need);
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
      count_load();
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
  if (!m.curve.any_energy() || !m.cv.wait_for(lock, limit, settled)) m.resolve(true);
  const auto it = m.requests.find(id);
  const double j = it == m.requests.end() ? 0 : it->second.j;
  if (it != m.requests.end()) m.requests.erase(it);
  if (!m.curve.any_energy()) return std::nullopt;
  return j;
}

void EnergyLedger::request_began() {
  Impl& m = *impl_;
  const double t = now_s();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.in_flight++ > 0) return;
  m.loaded = m.load_touched = true;
  m.load_begin = m.load_mark = t;
}

void EnergyLedger::request_ended() {
  Impl& m = *impl_;
  const double t = now_s();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.in_flight <= 0 || --m.in_flight > 0) return;
  m.load_ended_s += t - m.load_begin;
  m.load_tails.emplace_back(m.load_mark, t);
  m.count_load();
}

void EnergyLedger::wait_idle(int samples) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mutex);
  if (m.open.empty()) return;
  const auto limit = std::chrono::duration<double>(2 * samples * m.interval_s + 0.5);
  m.cv.wait_for(lock, limit, [&] { return m.loaded || m.idle_samples >= samples; });
}

std::vector<DeviceEnergy> EnergyLedger::devices() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<DeviceEnergy> out;
  for (const DeviceState& d : impl_->devices) {
    out.push_back({d.key, d.name, d.power_w, d.energy_j, d.idle_power.value(), d.load_power.value(), d.load_utilization.value()});
  }
  return out;
}

LoadTotals EnergyLedger::load() const {
  const Impl& m = *impl_;
  const double now = now_s();
  std::lock_guard<std::mutex> lock(m.mutex);
  LoadTotals out;
  out.seconds = m.load_ended_s + (m.in_flight > 0 ? std::max(0.0, now - m.load_begin) : 0);
  if (m.curve.any_energy()) out.energy_j = m.load_energy(now);
  return out;
}

std::optional<double> EnergyLedger::measured_j() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->curve.any_energy()) return std::nullopt;
  return impl_->curve.cumulative();
}

std::optional<double> EnergyLedger::attributed_j() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->curve.any_energy()) return std::nullopt;
  return impl_->attributed;
}

std::size_t EnergyLedger::stored_samples() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->curve.size();
}

}  // namespace plexus
