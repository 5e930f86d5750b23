// AMD GPUs through ROCm SMI: busy percent, VRAM, average power, temperature, energy counter.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/rocm/rocm_smi_library.h"
#include "monitor/metric_source.h"
#include "monitor/nvml_source.h"

namespace plexus {

class RocmSource : public MetricSource {
 public:
  // Devices are numbered after the NVIDIA GPUs of `nvml` (opened first; nullptr: from 0), as in
  // `plexus detect`; `devices` filters (empty: all).
  RocmSource(std::string library, const NvmlSource* nvml, std::vector<int> devices);
  std::string name() const override { return "rocm_smi"; }
  bool open(std::string* why) override;
  void sample(std::vector<DeviceReading>& out) override;
  void close() override;

 private:
  std::string library_path_;
  const NvmlSource* nvml_;
  int first_index_ = 0;
  std::vector<int> wanted_;
  std::unique_ptr<RocmSmiLibrary> rocm_;
};

}  // namespace plexus
