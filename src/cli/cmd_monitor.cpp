// `plexus monitor`: a live per-device table (like `nvidia-smi dmon`) until --duration ends or
// Ctrl-C, then the session summary (text, or JSON with --json); --csv streams every sample.
// `plexus monitor [OPTIONS] -- CMD [ARGS]` watches while CMD runs (cmd_monitor_command.cpp).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "backend/detect.h"
#include "backend/device_options.h"
#include "cli/cmd_monitor.h"
#include "cli/commands.h"
#include "cli/interrupt_guard.h"
#include "core/args.h"
#include "core/error.h"
#include "monitor/monitor_session.h"

namespace plexus::cli {

namespace {

std::string num(const std::optional<double>& v, const char* format = "%.1f") {
  if (!v) return "n/a";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, *v);
  return buffer;
}

// Draws the live table; returns the number of lines printed so the next draw can go back up.
int draw(const Sample& sample, double interval_ms, int previous_lines) {
  if (previous_lines > 0) std::printf("\033[%dA", previous_lines);
  int lines = 0;
  std::printf("plexus monitor  t=%.1f s  every %.0f ms  (Ctrl-C stops and prints the summary)\033[K\n", sample.t_s,
              interval_ms);
  std::printf("%-4s %-28s %6s %6s %19s %8s %6s %7s %7s\033[K\n", "dev", "name", "util%", "mem%", "memory used/total MiB",
              "power W", "temp C", "sm MHz", "mem MHz");
  lines += 2;
  for (const DeviceReading& r : sample.readings) {
    const std::string memory = num(r.memory_used_mb, "%.0f") + "/" + num(r.memory_total_mb, "%.0f");
    std::printf("%-4s %-28.28s %6s %6s %19s %8s %6s %7s %7s\033[K\n", r.key().c_str(), r.name.c_str(),
                num(r.utilization_percent).c_str(), num(r.memory_utilization_percent, "%.0f").c_str(), memory.c_str(),
                num(r.power_w).c_str(), num(r.temperature_c, "%.0f").c_str(), num(r.sm_clock_mhz, "%.0f").c_str(),
                num(r.memory_clock_mhz, "%.0f").c_str());
    ++lines;
  }
  std::fflush(stdout);
  return lines;
}

// --devices names GPUs that are here (as `plexus detect` numbers them), else InputError.
void check_gpus_present(const std::vector<int>& requested) {
  DeviceOptions real = device_options_from_env();
  real.virtual_devices = 0;  // monitor watches GPUs; virtual devices have nothing to read
  const Inventory inv = detect_devices(real);
  std::string have;
  for (const DeviceInfo& d : inv.devices) have += (have.empty() ? "" : ",") + std::to_string(d.index);
  for (int r : requested) {
    bool found = false;
    for (const DeviceInfo& d : inv.devices) found = found || d.index == r;
    if (!found) {
      throw InputError("--devices: there is no GPU " + std::to_string(r) + " (" +
                       (have.empty() ? std::string("no GPU was detected") : "GPUs here: " + have) +
                       "; `plexus detect` lists them): name GPUs that exist, or leave --devices out to watch all");
    }
  }
}

}  // namespace

void print_monitor_summary(const MonitorSummary& s, std::FILE* out) {
  const Json j = to_json(s);
  std::fprintf(out, "\nmonitored %.2f s, %d samples every %.0f ms; the sampler used %s%% of one core\n", s.duration_s,
                   s.samples, s.interval_ms,
                   j["sampler"]["cpu_percent_of_one_core"].is_null()
                       ? "n/a"
                       : num(j["sampler"]["cpu_percent_of_one_core"].get<double>(), "%.3f").c_str());
  std::fprintf(out, "%-4s %-24s %8s %8s %12s %7s %7s %10s %-17s %8s\n", "dev", "name", "avg util", "max util",
                   "avg mem MiB", "avg W", "max W", "energy J", "energy method", "max temp");
  for (const DeviceSummary& d : s.devices) {
    std::fprintf(out, "%-4s %-24.24s %8s %8s %12s %7s %7s %10s %-17s %8s\n",
                     d.index < 0 ? "cpu" : std::to_string(d.index).c_str(), d.name.c_str(),
                     num(d.avg_utilization_percent).c_str(), num(d.max_utilization_percent).c_str(),
                     num(d.avg_memory_used_mb, "%.0f").c_str(), num(d.avg_power_w).c_str(), num(d.max_power_w).c_str(),
                     num(d.energy_j, "%.2f").c_str(), energy_method_name(d.energy_method),
                     num(d.max_temperature_c, "%.0f").c_str());
    if (d.avg_process_memory_used_mb || d.avg_process_utilization_percent)
      std::fprintf(out, "     the command's processes: avg %s MiB, max %s MiB, avg SM util %s %%\n",
                   num(d.avg_process_memory_used_mb, "%.0f").c_str(), num(d.max_process_memory_used_mb, "%.0f").c_str(),
                   num(d.avg_process_utilization_percent).c_str());
    if (d.energy_above_idle_j)
      std::fprintf(out, "     idle %.1f W, energy above idle %.2f J\n", d.idle_power_w.value_or(0), *d.energy_above_idle_j);
  }
  const AggregateSummary& a = s.aggregate;
  std::fprintf(out, "GPUs: total_avg_utilization %.1f %%, total_max_utilization %.1f %%, total_avg_memory_mb %.0f, "
                   "any_gpu_active %s, total energy %s J\n",
                   a.total_avg_utilization, a.total_max_utilization, a.total_avg_memory_mb, a.any_gpu_active ? "yes" : "no",
                   num(a.total_energy_j, "%.2f").c_str());
}

int cmd_monitor(int argc, char** argv) {
  Args args("monitor",
            "Watch every device live (utilisation, memory, power, temperature, clocks) and summarise the "
            "session: averages, maxima and energy per device and across GPUs.");
  args.option("--devices", "LIST", "GPUs to watch, e.g. 0,1 (default: all; the host is always included)")
      .option("--interval-ms", "MS", "sampling interval in milliseconds", "100")
      .option("--duration", "S", "stop after S seconds (default: run until Ctrl-C)")
      .option("--idle-baseline", "S", "first measure S seconds of idle power, to report energy above idle")
      .option("--csv", "FILE", "stream every sample to FILE as CSV")
      .flag("--json", "print the summary as JSON (no live table)");
  args.option("--output", "FILE", "with -- CMD: write the summary to FILE (default: standard error)");
  args.epilog("plexus monitor [OPTIONS] -- CMD [ARGS]: run CMD (no shell), watch the devices while it runs, then "
              "write the summary and exit with CMD's exit status (128 + N when signal N ended it); SIGINT/SIGTERM "
              "sent to plexus go on to CMD. A command that cannot be run exits 2.\n"
              "PLEXUS_NVML_LIBRARY / PLEXUS_ROCM_SMI_LIBRARY override where GPU libraries are loaded from.\n"
              "Values a source cannot read are shown as n/a (null in JSON), never as zero.");
  // Everything after "--" is the command to watch, passed on as given.
  std::vector<std::string> own{argv, argv + argc}, command;
  if (const auto dash = std::find(own.begin(), own.end(), "--"); dash != own.end()) {
    command.assign(dash + 1, own.end());
    own.erase(dash, own.end());
    if (command.empty()) throw InputError("monitor: nothing after '--': give the command to run, e.g. plexus monitor -- sleep 1");
  }
  if (!args.parse(own)) return 0;

  MonitorOptions options;
  options.interval_ms = args.get_double("--interval-ms");
  if (!(options.interval_ms >= 1 && options.interval_ms <= 3.6e6))
    throw InputError("--interval-ms must be between 1 and 3600000, got " + args.get("--interval-ms"));
  std::optional<double> duration;
  if (args.has("--duration")) {
    duration = args.get_double("--duration");
    if (!(*duration > 0)) throw InputError("--duration must be more than 0 seconds, got " + args.get("--duration"));
  }
  if (args.has("--idle-baseline")) {
    options.idle_baseline_s = args.get_double("--idle-baseline");
    if (!(options.idle_baseline_s >= 0)) throw InputError("--idle-baseline must be 0 or more seconds");
  }
  if (auto csv = args.get_optional("--csv")) options.csv_path = *csv;
  SourceOptions sources = source_options_from(device_options_from_env());
  if (auto list = args.get_optional("--devices")) {
    for (long long v : parse_device_list(*list, "--devices")) sources.devices.push_back(static_cast<int>(v));
    check_gpus_present(sources.devices);
  }
  const bool json = args.get_flag("--json");
  if (!command.empty()) {
    if (duration) throw InputError("--duration: a watched command runs to its end; leave --duration out with -- CMD");
    return monitor_command(command, options, sources, json, args.get_optional("--output").value_or(""));
  }
  if (args.has("--output")) throw InputError("--output is for a watched command (plexus monitor --output FILE -- CMD)");

  const InterruptGuard guard;
  options.stop_requested = &InterruptGuard::requested;
  MonitorSession session(make_sources(sources));
  // A signal, or a CSV that can no longer be written, ends the session.
  auto stopping = [&] { return InterruptGuard::requested() || session.csv_error().has_value(); };
  session.start(options);
  // ROCm missing on an NVIDIA machine (or the reverse) is normal: say so only when no GPU source opened.
  if (!json && session.unavailable().size() >= 2) {
    std::fprintf(stderr, "monitor: no GPU library could be loaded; watching the host only\n");
    for (const std::string& why : session.unavailable()) std::fprintf(stderr, "  %s\n", why.c_str());
  }
  const bool live = !json && isatty(STDOUT_FILENO);
  const auto started = std::chrono::steady_clock::now();
  const auto refresh = std::chrono::milliseconds(static_cast<long>(std::max(options.interval_ms, 200.0)));
  int lines = 0;
  if (live) {
    if (auto sample = session.latest()) lines = draw(*sample, options.interval_ms, lines);
  }
  while (!stopping()) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (duration && elapsed >= *duration) break;
    auto wait = std::chrono::duration<double>(refresh);
    if (duration) wait = std::min(wait, std::chrono::duration<double>(*duration - elapsed));
    // Sleep in short steps so Ctrl-C answers quickly.
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait);
    while (!stopping() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_until(std::min(until, std::chrono::steady_clock::now() + std::chrono::milliseconds(20)));
    if (live) {
      if (auto sample = session.latest()) lines = draw(*sample, options.interval_ms, lines);
    }
  }
  const MonitorSummary summary = session.stop();
  const bool interrupted = InterruptGuard::requested();
  const std::optional<std::string> csv_error = session.csv_error();
  if (json) {
    Json j = to_json(summary);
    j["unavailable_sources"] = session.unavailable();
    j["interrupted"] = interrupted;
    if (csv_error) j["csv_error"] = *csv_error;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_monitor_summary(summary, stdout);
  }
  std::fflush(stdout);
  if (csv_error) throw RuntimeError(*csv_error);
  // Ctrl-C (or SIGTERM) is how a run without --duration ends: the summary is complete, and the
  // exit status says the run was stopped by a signal, as a shell reports it.
  return interrupted ? static_cast<int>(ExitCode::kInterrupted) : 0;
}

}  // namespace plexus::cli
