// The host as a metric source: CPU utilisation from /proc/stat, this process's RSS, system
// memory, and package energy from RAPL (/sys/class/powercap) when readable. Reading: index -1.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "monitor/metric_source.h"

namespace plexus {

// Busy and total jiffies from the "cpu " line of /proc/stat text.
struct CpuTimes {
  std::uint64_t busy = 0, total = 0;
};
std::optional<CpuTimes> parse_proc_stat(const std::string& text);

class HostSource : public MetricSource {
 public:
  // `powercap_root` is /sys/class/powercap normally (a test can point elsewhere).
  explicit HostSource(std::string powercap_root = "/sys/class/powercap");
  std::string name() const override { return "host"; }
  bool open(std::string* why) override;
  void sample(std::vector<DeviceReading>& out) override;
  void close() override {}

 private:
  struct RaplZone {
    std::string energy_path;
    std::uint64_t max_uj = 0, last_uj = 0;
  };
  std::optional<double> read_rapl_j();  // accumulated over wrap-arounds

  std::string powercap_root_;
  std::string cpu_model_;
  std::optional<CpuTimes> last_cpu_;
  std::vector<RaplZone> zones_;
  double rapl_accumulated_j_ = 0;
  long page_size_ = 4096;
};

}  // namespace plexus
