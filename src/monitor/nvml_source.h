// NVIDIA GPUs through NVML: utilisation, memory, power, temperature, clocks, throttle reasons
// and the total-energy counter, each optional.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/nvml/nvml_library.h"
#include "monitor/metric_source.h"

namespace plexus {

class NvmlSource : public MetricSource {
 public:
  // `library` as for NvmlLibrary::open; `devices` the indices to sample (empty: all);
  // `process_root` > 0: also read the GPU memory and utilisation of that process and its
  // descendants (NVML's process queries), where the driver offers them.
  NvmlSource(std::string library, std::vector<int> devices, int process_root = 0);
  std::string name() const override { return "nvml"; }
  bool open(std::string* why) override;
  void sample(std::vector<DeviceReading>& out) override;
  void close() override;
  int device_count() const;  // GPUs NVML reports (after open)

 private:
  std::string library_path_;
  std::vector<int> wanted_;
  std::unique_ptr<NvmlLibrary> nvml_;
  std::vector<std::string> names_;
  int process_root_ = 0;
  std::vector<unsigned long long> last_seen_us_;  // per device: the newest utilisation sample read
  void read_processes(std::size_t device, const std::vector<int>& tree, DeviceReading& r);
};

}  // namespace plexus
