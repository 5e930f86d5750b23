// `plexus calibrate`: measures this machine's host for the cost model and stores the facts in
// the user's cache directory, saying where.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>
#include <filesystem>

#include "cli/commands.h"
#include "core/args.h"
#include "core/error.h"
#include "core/timer.h"
#include "exec/calibrate.h"
#include "monitor/host_source.h"

namespace plexus::cli {

int cmd_calibrate(int argc, char** argv) {
  Args args("calibrate",
            "Measure this machine for `plan`'s predictions: the decode kernel's weight bandwidth and the prefill\n"
            "kernels' FLOP/s at 1, 2, 4, … threads, memcpy and mmap read bandwidth. Writes\n"
            "$XDG_CACHE_HOME/plexus/calibration.json (else ~/.cache/plexus/calibration.json).");
  args.option("--threads", "N", "largest thread count to measure (0: one per hardware thread)", "0")
      .option("--seconds", "S", "seconds per measurement", "0.25")
      .option("--idle-w", "W", "host power when idle, in watts (default: measured with RAPL when readable)")
      .option("--busy-w", "W", "host power when busy, in watts (default: RAPL during the measurements)")
      .flag("--json", "print the facts as JSON");
  if (!args.parse(argc, argv)) return 0;
  CalibrateOptions o;
  const long long threads = args.get_int("--threads");
  if (threads < 0 || threads > 1024) throw InputError("--threads must be between 0 and 1024, got " + std::to_string(threads));
  o.max_threads = static_cast<int>(threads);
  o.seconds_per_test = args.get_double("--seconds");
  if (!(o.seconds_per_test > 0 && o.seconds_per_test <= 10)) throw InputError("--seconds must be in (0, 10]");
  if (args.has("--idle-w") != args.has("--busy-w")) throw InputError("--idle-w and --busy-w go together: give both or neither");
  const bool given_power = args.has("--idle-w");
  if (given_power && !(args.get_double("--idle-w") >= 0 && args.get_double("--busy-w") >= args.get_double("--idle-w"))) {
    throw InputError("--busy-w must be at least --idle-w, both >= 0");
  }
  const std::string path = calibration_path();
  o.scratch_dir = std::filesystem::path(path).parent_path().string();
  // Package energy (RAPL) around an idle second and around the measurements, when readable.
  HostSource rapl;
  std::string why;
  const bool have_rapl = !given_power && rapl.open(&why);
  auto joules = [&rapl]() {  // the counter, or -1 when unreadable
    std::vector<DeviceReading> r;
    rapl.sample(r);
    return r.empty() || !r.front().energy_counter_j ? -1.0 : *r.front().energy_counter_j;
  };
  double idle_w = -1, busy_w = -1;
  if (have_rapl) {
    const double e0 = joules();
    Timer t;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const double e1 = joules();
    if (e0 >= 0 && e1 > e0) idle_w = (e1 - e0) / t.seconds();
  }
  const double b0 = have_rapl ? joules() : -1;
  Timer busy;
  HostCalibration c = calibrate_host(o);
  const double b1 = have_rapl ? joules() : -1;
  if (idle_w >= 0 && b0 >= 0 && b1 > b0) busy_w = std::max(idle_w, (b1 - b0) / busy.seconds());
  if (idle_w >= 0 && busy_w >= 0) {
    c.idle_w = idle_w;
    c.busy_w = busy_w;
  }
  if (given_power) {
    c.idle_w = args.get_double("--idle-w");
    c.busy_w = args.get_double("--busy-w");
  }
  save_calibration(c, path);
  if (args.get_flag("--json")) {
    Json j = host_calibration_to_json(c);
    j["path"] = path;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("host: %s (%s)\n", c.cpu.c_str(), c.isa.c_str());
  for (const HostThroughput& t : c.by_threads) {
    std::printf("  %2d thread%s  decode weights %6.2f GB/s   prefill bf16 %7.1f GFLOP/s   f32 %7.1f GFLOP/s\n", t.threads,
                t.threads > 1 ? "s" : " ", t.memory_bandwidth / 1e9, t.flops_16bit / 1e9, t.flops_f32 / 1e9);
  }
  std::printf("  memcpy %.2f GB/s (into streaming slots %.2f GB/s), mmap read %.2f GB/s\n", c.copy_bandwidth / 1e9,
              c.slot_copy_bandwidth / 1e9, c.disk_read_bandwidth / 1e9);
  std::printf("  a sleeping thread resumes %.0f us after its signal (mean)\n", c.handoff_s * 1e6);
  if (c.idle_w && c.busy_w) {
    std::printf("  power: %.1f W idle, %.1f W busy\n", *c.idle_w, *c.busy_w);
  } else {
    std::printf("  power: unknown (no readable RAPL energy counter); give --idle-w and --busy-w for energy predictions\n");
  }
  std::printf("wrote %s\n", path.c_str());
  return 0;
}

}  // namespace plexus::cli
