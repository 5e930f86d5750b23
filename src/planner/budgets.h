// Per-device memory budgets, as accelerate's max_memory: "0=10GiB,1=10GiB,cpu=64GiB".
// A device absent from the list is not used (no hidden 80%-of-RAM cpu default).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/device_id.h"

namespace plexus {

struct DeviceBudget {
  DeviceId device;
  std::uint64_t bytes = 0;
};

// Sorted: accelerators by ordinal, then cpu, then disk; each device at most once.
class Budgets {
 public:
  Budgets() = default;
  explicit Budgets(std::vector<DeviceBudget> list);  // sorts; InputError on a duplicate device

  const std::vector<DeviceBudget>& list() const { return list_; }
  std::optional<std::uint64_t> get(DeviceId d) const;
  bool has(DeviceId d) const { return get(d).has_value(); }
  void set(DeviceId d, std::uint64_t bytes);  // inserts or replaces, keeping the order
  std::vector<DeviceId> accelerators() const;
  std::uint64_t accelerator_total() const;

  std::string to_string() const;  // "0=10.00 GiB, cpu=64.00 GiB"

 private:
  std::vector<DeviceBudget> list_;
};

// "0=10GiB,1=10GiB,cpu=64GiB" (":" also accepted for "="). InputError naming the bad entry.
Budgets parse_max_memory(const std::string& text);

}  // namespace plexus
