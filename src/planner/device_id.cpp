// Parsing and printing of device names.
#include "planner/device_id.h"

#include <cctype>

#include "core/error.h"

namespace plexus {

std::string DeviceId::to_string() const {
  switch (kind_) {
    case TargetKind::kAccelerator: return std::to_string(ordinal_);
    case TargetKind::kCpu: return "cpu";
    case TargetKind::kDisk: return "disk";
  }
  return "?";
}

Json DeviceId::to_json() const {
  if (kind_ == TargetKind::kAccelerator) return Json(ordinal_);
  return Json(to_string());
}

DeviceId DeviceId::parse(std::string_view text, const std::string& where) {
  std::string s(text);
  if (s == "cpu") return cpu();
  if (s == "disk") return disk();
  if (s.rfind("cuda:", 0) == 0) s = s.substr(5);
  bool digits = !s.empty() && s.size() <= 6;
  for (char c : s) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (!digits) {
    throw InputError(where + ": unknown device '" + std::string(text) +
                     "'; use an accelerator ordinal (0, 1, …), \"cpu\" or \"disk\"");
  }
  return accelerator(std::stoi(s));
}

DeviceId DeviceId::from_json(const Json& j, const std::string& where) {
  if (j.is_number_integer()) {
    const long long v = j.get<long long>();
    if (v < 0 || v > 999999) throw InputError(where + ": device ordinal " + std::to_string(v) + " is out of range");
    return accelerator(static_cast<int>(v));
  }
  if (j.is_string()) return parse(j.get<std::string>(), where);
  throw InputError(where + ": a device must be an integer ordinal, \"cpu\" or \"disk\", got " + j.dump());
}

}  // namespace plexus
