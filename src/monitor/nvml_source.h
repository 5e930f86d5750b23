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
  // `library` as for NvmlLibrary::open; `devices` the indices to sample (empty: all).
  NvmlSource(std::string library, std::vector<int> devices);
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
};

}  // namespace plexus
