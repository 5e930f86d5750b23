// The pre-flight check before a multi-device run: is every requested device present and
// usable, how much memory to give it, and ready-to-paste flags. Pure: takes an Inventory.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/device_info.h"
#include "core/json.h"

namespace plexus {

enum class DoctorVerdict { kReady, kWarning, kUnusable, kMissing };
const char* doctor_verdict_name(DoctorVerdict verdict);  // "ready", "warning", "unusable", "missing"

struct DoctorDevice {
  int index = 0;
  DoctorVerdict verdict = DoctorVerdict::kReady;
  std::optional<DeviceInfo> info;             // empty when missing
  std::vector<std::string> problems;          // why it is unusable or missing
  std::vector<std::string> warnings;          // usable, but a person should know
  std::vector<std::string> links;             // "1: NV4 (p2p OK)" for each other requested device
  std::optional<std::uint64_t> max_memory_bytes;  // recommended budget (90 % of free, rounded down)
};

struct DoctorReport {
  std::vector<DoctorDevice> devices;
  bool ok = false;                 // every requested device usable
  std::string max_memory_flag;     // 0=70GiB,1=70GiB
  std::string plan_flags;          // --devices 0,1 --max-memory "0=70GiB,1=70GiB" (virtual: --max-memory alone)
  std::string yaml_backend;        // the backend: block of a benchmark YAML
  std::vector<std::string> notes;  // about the whole set (e.g. where the devices came from)
};

// Free memory at or below this leaves a device unusable for a model run.
constexpr std::uint64_t kDoctorMinFreeBytes = 1ull << 30;
constexpr double kDoctorHotCelsius = 85.0;

DoctorReport run_doctor(const Inventory& inventory, const std::vector<int>& requested);

// 90 % of `free_bytes`, rounded down to whole GiB from 4 GiB up, else to 64 MiB steps.
std::uint64_t recommended_max_memory(std::uint64_t free_bytes);
// 75161927680 -> "70GiB", 536870912 -> "512MiB" (exact: the value must be a whole unit).
std::string memory_flag_value(std::uint64_t bytes);

Json to_json(const DoctorReport& report);
std::string to_text(const DoctorReport& report);

}  // namespace plexus
