// `plexus calibrate`: measures this machine's host — the decode kernel's weight bandwidth (from
// memory and from a just-filled streaming slot) and the prefill kernels' FLOP/s at each thread
// count, memcpy (large, and into streaming slots) and mmap read bandwidth — for the cost model's virtual devices, and keeps them in the user's cache directory.
#pragma once
#include <optional>
#include <string>

#include "planner/device_facts.h"

namespace plexus {

// $XDG_CACHE_HOME/plexus/calibration.json, else $HOME/.cache/plexus/calibration.json.
// RuntimeError when neither variable is set.
std::string calibration_path();

// The stored calibration, or none when the file does not exist (InputError when malformed).
std::optional<HostCalibration> load_calibration(const std::string& path);
void save_calibration(const HostCalibration& c, const std::string& path);

struct CalibrateOptions {
  int max_threads = 0;           // 0: hardware threads; measured at 1, 2, 4, … and max
  double seconds_per_test = 0.25;
  std::string scratch_dir;       // where the mmap read test writes its file (the cache directory)
  // No file written: the mmap read of cached pages is taken as memcpy's bandwidth (what it
  // measures on a warm page cache), and fewer hand-off samples.
  bool no_files = false;
};
// Runs the measurements (a few seconds).
HostCalibration calibrate_host(const CalibrateOptions& options);

// The same measurements, each for a few tens of milliseconds, at 1, 2, 4, … `threads` threads
// (0: every hardware thread) and without writing a file: this host's facts for a prediction when
// there is no calibration file (a fraction of a second; noisier than `plexus calibrate`).
HostCalibration quick_host_calibration(int threads);

}  // namespace plexus
