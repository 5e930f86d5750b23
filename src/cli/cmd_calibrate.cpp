// `plexus calibrate`: measures this machine's host for the cost model and stores the facts in
// the user's cache directory, saying where.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "core/args.h"
#include "core/error.h"
#include "exec/calibrate.h"

namespace plexus::cli {

int cmd_calibrate(int argc, char** argv) {
  Args args("calibrate",
            "Measure this machine for `plan`'s predictions: the decode kernel's weight bandwidth and the prefill\n"
            "kernels' FLOP/s at 1, 2, 4, … threads, memcpy and mmap read bandwidth. Writes\n"
            "$XDG_CACHE_HOME/plexus/calibration.json (else ~/.cache/plexus/calibration.json).");
  args.option("--threads", "N", "largest thread count to measure (0: one per hardware thread)", "0")
      .option("--seconds", "S", "seconds per measurement", "0.25")
      .option("--idle-w", "W", "host power when idle, in watts (RAPL is not read yet)")
      .option("--busy-w", "W", "host power when busy, in watts")
      .flag("--json", "print the facts as JSON");
  if (!args.parse(argc, argv)) return 0;
  CalibrateOptions o;
  const long long threads = args.get_int("--threads");
  if (threads < 0 || threads > 1024) throw InputError("--threads must be between 0 and 1024, got " + std::to_string(threads));
  o.max_threads = static_cast<int>(threads);
  o.seconds_per_test = args.get_double("--seconds");
  if (!(o.seconds_per_test > 0 && o.seconds_per_test <= 10)) throw InputError("--seconds must be in (0, 10]");
  const std::string path = calibration_path();
  o.scratch_dir = std::filesystem::path(path).parent_path().string();
  HostCalibration c = calibrate_host(o);
  if (args.has("--idle-w") != args.has("--busy-w")) throw InputError("--idle-w and --busy-w go together: give both or neither");
  if (args.has("--idle-w")) {
    c.idle_w = args.get_double("--idle-w");
    c.busy_w = args.get_double("--busy-w");
    if (!(*c.idle_w >= 0 && *c.busy_w >= *c.idle_w)) throw InputError("--busy-w must be at least --idle-w, both >= 0");
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
  std::printf("  memcpy %.2f GB/s, mmap read %.2f GB/s\nwrote %s\n", c.copy_bandwidth / 1e9, c.disk_read_bandwidth / 1e9,
              path.c_str());
  return 0;
}

}  // namespace plexus::cli
