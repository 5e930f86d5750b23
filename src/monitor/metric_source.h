// A metric source: open() once, sample() at every tick, close() at the end. Small on purpose;
// NVML, ROCm SMI and the host each implement it.
#pragma once
#include <string>
#include <vector>

#include "monitor/reading.h"

namespace plexus {

class MetricSource {
 public:
  virtual ~MetricSource() = default;
  virtual std::string name() const = 0;  // "nvml", "rocm_smi", "host"
  // Prepares to sample; returns false (with *why) when the source is unavailable here.
  virtual bool open(std::string* why) = 0;
  // Appends one reading per device this source covers.
  virtual void sample(std::vector<DeviceReading>& out) = 0;
  virtual void close() = 0;
};

}  // namespace plexus
