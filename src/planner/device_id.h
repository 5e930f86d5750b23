// Where a module can live, named as accelerate names it: accelerators are integers 0,1,…,
// "cpu" is host memory used for offload, "disk" is memory-mapped files.
#pragma once
#include <string>
#include <string_view>

#include "core/json.h"

namespace plexus {

enum class TargetKind { kAccelerator, kCpu, kDisk };

class DeviceId {
 public:
  static DeviceId accelerator(int ordinal) { return DeviceId(TargetKind::kAccelerator, ordinal); }
  static DeviceId cpu() { return DeviceId(TargetKind::kCpu, 0); }
  static DeviceId disk() { return DeviceId(TargetKind::kDisk, 0); }

  TargetKind kind() const { return kind_; }
  bool is_accelerator() const { return kind_ == TargetKind::kAccelerator; }
  int ordinal() const { return ordinal_; }  // accelerators only

  std::string to_string() const;  // "0", "cpu", "disk"
  Json to_json() const;           // 0 (a number), "cpu", "disk"
  // "0", "cpu", "disk" (also "cuda:0"); throws InputError naming `where`.
  static DeviceId parse(std::string_view text, const std::string& where);
  // A JSON number or string as above.
  static DeviceId from_json(const Json& j, const std::string& where);

  // Accelerators by ordinal, then cpu, then disk: the order placement fills them in.
  friend bool operator==(const DeviceId& a, const DeviceId& b) {
    return a.kind_ == b.kind_ && a.ordinal_ == b.ordinal_;
  }
  friend bool operator<(const DeviceId& a, const DeviceId& b) {
    if (a.kind_ != b.kind_) return static_cast<int>(a.kind_) < static_cast<int>(b.kind_);
    return a.ordinal_ < b.ordinal_;
  }

 private:
  DeviceId(TargetKind k, int o) : kind_(k), ordinal_(o) {}
  TargetKind kind_;
  int ordinal_;
};

}  // namespace plexus
