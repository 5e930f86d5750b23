// Parsing and bookkeeping of per-device memory budgets.
#include "planner/budgets.h"

#include <algorithm>

#include "core/checked.h"
#include "core/error.h"
#include "core/units.h"

namespace plexus {

Budgets::Budgets(std::vector<DeviceBudget> list) {
  for (const DeviceBudget& b : list) {
    if (has(b.device)) throw InputError("device " + b.device.to_string() + " is given two memory budgets");
    set(b.device, b.bytes);
  }
}

std::optional<std::uint64_t> Budgets::get(DeviceId d) const {
  for (const DeviceBudget& b : list_) {
    if (b.device == d) return b.bytes;
  }
  return std::nullopt;
}

void Budgets::set(DeviceId d, std::uint64_t bytes) {
  for (DeviceBudget& b : list_) {
    if (b.device == d) {
      b.bytes = bytes;
      return;
    }
  }
  auto it = std::lower_bound(list_.begin(), list_.end(), d,
                             [](const DeviceBudget& b, const DeviceId& x) { return b.device < x; });
  list_.insert(it, DeviceBudget{d, bytes});
}

std::vector<DeviceId> Budgets::accelerators() const {
  std::vector<DeviceId> out;
  for (const DeviceBudget& b : list_) {
    if (b.device.is_accelerator()) out.push_back(b.device);
  }
  return out;
}

std::uint64_t Budgets::accelerator_total() const {
  std::uint64_t t = 0;
  for (const DeviceBudget& b : list_) {
    if (b.device.is_accelerator()) t = checked_add_u64(t, b.bytes, "--max-memory: the accelerators' budgets added up");
  }
  return t;
}

std::string Budgets::to_string() const {
  std::string s;
  for (const DeviceBudget& b : list_) {
    if (!s.empty()) s += ", ";
    s += b.device.to_string() + "=" + format_bytes(b.bytes);
  }
  return s;
}

Budgets parse_max_memory(const std::string& text) {
  Budgets out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string entry = text.substr(pos, comma - pos);
    pos = comma + 1;
    while (!entry.empty() && entry.front() == ' ') entry.erase(entry.begin());
    while (!entry.empty() && entry.back() == ' ') entry.pop_back();
    if (entry.empty()) {
      if (comma == text.size()) break;
      continue;
    }
    std::size_t eq = entry.find('=');
    if (eq == std::string::npos) eq = entry.find(':');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
      throw InputError("--max-memory: entry '" + entry +
                       "' is not DEVICE=SIZE; write e.g. \"0=10GiB,1=10GiB,cpu=64GiB\"");
    }
    const std::string key = entry.substr(0, eq), value = entry.substr(eq + 1);
    const DeviceId d = DeviceId::parse(key, "--max-memory entry '" + entry + "'");
    if (out.has(d)) throw InputError("--max-memory: device " + d.to_string() + " is given twice");
    std::uint64_t bytes = 0;
    try {
      bytes = parse_memory_size(value);
    } catch (const InputError& e) {
      throw InputError("--max-memory: entry '" + entry + "': " + e.what());
    }
    // Plans compute in signed 64-bit sizes: a budget past 2^62 (4 EiB, beyond any machine) would
    // wrap negative there.
    if (bytes > (std::uint64_t{1} << 62)) {
      throw InputError("--max-memory: entry '" + entry + "' is more than 4 EiB; give the device's real memory");
    }
    out.set(d, bytes);
  }
  if (out.list().empty()) throw InputError("--max-memory: no budgets given; write e.g. \"0=10GiB,cpu=64GiB\"");
  return out;
}

}  // namespace plexus
