// Verdicts, recommendations and snippets for `plexus doctor`.
#include "backend/doctor.h"

#include <sstream>

#include "core/units.h"

namespace plexus {

const char* doctor_verdict_name(DoctorVerdict verdict) {
  switch (verdict) {
    case DoctorVerdict::kReady: return "ready";
    case DoctorVerdict::kWarning: return "warning";
    case DoctorVerdict::kUnusable: return "unusable";
    case DoctorVerdict::kMissing: return "missing";
  }
  return "unknown";
}

std::uint64_t recommended_max_memory(std::uint64_t free_bytes) {
  constexpr std::uint64_t kGiB = 1ull << 30, kStep = 64ull << 20;
  const std::uint64_t target = free_bytes / 10 * 9;
  if (target >= 4 * kGiB) return target / kGiB * kGiB;
  return target / kStep * kStep;
}

std::string memory_flag_value(std::uint64_t bytes) {
  constexpr std::uint64_t kGiB = 1ull << 30, kMiB = 1ull << 20;
  if (bytes % kGiB == 0 && bytes > 0) return std::to_string(bytes / kGiB) + "GiB";
  if (bytes % kMiB == 0 && bytes > 0) return std::to_string(bytes / kMiB) + "MiB";
  return std::to_string(bytes);
}

namespace {

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string describe_link(const std::string& label) {
  if (label.rfind("NV", 0) == 0 && label.size() > 2) return "NVLink x" + label.substr(2);
  if (label == "PIX") return "same PCIe switch";
  if (label == "PXB") return "several PCIe switches";
  if (label == "PHB") return "same PCIe host bridge";
  if (label == "NODE") return "host bridges within one NUMA node";
  if (label == "SYS") return "across CPU sockets";
  if (label == "XGMI") return "AMD XGMI";
  if (label == "SHM") return "shared host memory";
  return "unknown";
}

DoctorDevice check_device(const Inventory& inv, int index, const std::vector<int>& requested) {
  DoctorDevice out;
  out.index = index;
  const int n = static_cast<int>(inv.devices.size());
  if (index < 0 || index >= n) {
    out.verdict = DoctorVerdict::kMissing;
    if (n == 0) {
      out.problems.push_back("device " + std::to_string(index) +
                             " not found: no GPU was detected (see the notes below). To rehearse on the CPU, "
                             "add --virtual-devices N");
    } else {
      out.problems.push_back("device " + std::to_string(index) + " not found: " + std::to_string(n) +
                             " device(s) detected, numbered 0.." + std::to_string(n - 1) +
                             "; drop it from --devices or check CUDA_VISIBLE_DEVICES / the driver");
    }
    return out;
  }
  const DeviceInfo& d = inv.devices[static_cast<std::size_t>(index)];
  out.info = d;
  const std::string who = "device " + std::to_string(index) + " (" + d.name + ")";
  if (!d.memory_free_bytes) {
    out.problems.push_back(who + ": free memory cannot be read" +
                           (d.problems.empty() ? std::string() : " (" + join(d.problems, "; ") + ")") +
                           "; check the driver with nvidia-smi, or leave the device out");
  } else if (*d.memory_free_bytes <= kDoctorMinFreeBytes) {
    std::string who_holds = d.processes && *d.processes > 0
                                ? std::to_string(*d.processes) + " other process(es) hold its memory; stop them"
                                : "free memory on it";
    out.problems.push_back(who + ": only " + format_bytes(*d.memory_free_bytes) + " free" +
                           (d.memory_total_bytes ? " of " + format_bytes(*d.memory_total_bytes) : std::string()) +
                           ", more than " + format_bytes(kDoctorMinFreeBytes) + " needed: " + who_holds +
                           " or leave device " + std::to_string(index) + " out of --devices");
  } else {
    out.max_memory_bytes = recommended_max_memory(*d.memory_free_bytes);
    if (d.memory_total_bytes && *d.memory_free_bytes * 2 < *d.memory_total_bytes)
      out.warnings.push_back(who + ": only " + format_bytes(*d.memory_free_bytes) + " of " +
                             format_bytes(*d.memory_total_bytes) + " free; something else holds the rest");
  }
  if (d.memory_free_bytes) {
    for (const std::string& p : d.problems) out.warnings.push_back(who + ": " + p);
  }
  if (d.processes && *d.processes > 0)
    out.warnings.push_back(who + ": busy with " + std::to_string(*d.processes) +
                           " other compute process(es); timings and memory will be shared with them");
  if (d.temperature_c && *d.temperature_c >= kDoctorHotCelsius)
    out.warnings.push_back(who + ": running hot at " + std::to_string(static_cast<int>(*d.temperature_c)) +
                           " C; it may throttle: check cooling or wait for it to cool down");
  for (int other : requested) {
    if (other == index || other < 0 || other >= n) continue;
    const auto i = static_cast<std::size_t>(index), j = static_cast<std::size_t>(other);
    const std::string& label = inv.topology[i][j];
    const std::string& p2p = inv.p2p[i][j];
    out.links.push_back(std::to_string(other) + ": " + label + " (" + describe_link(label) + ", p2p " + p2p + ")");
  }
  if (!out.problems.empty()) out.verdict = DoctorVerdict::kUnusable;
  else if (!out.warnings.empty()) out.verdict = DoctorVerdict::kWarning;
  return out;
}

}  // namespace

DoctorReport run_doctor(const Inventory& inventory, const std::vector<int>& requested) {
  DoctorReport report;
  report.ok = !requested.empty();
  std::vector<std::string> budgets, ids;
  for (int index : requested) {
    DoctorDevice d = check_device(inventory, index, requested);
    if (d.verdict == DoctorVerdict::kMissing || d.verdict == DoctorVerdict::kUnusable) report.ok = false;
    else ids.push_back(std::to_string(index));
    if (d.max_memory_bytes) budgets.push_back(std::to_string(index) + "=" + memory_flag_value(*d.max_memory_bytes));
    report.devices.push_back(std::move(d));
  }
  if (requested.empty()) report.notes.push_back("no devices requested and none detected");
  const int n = static_cast<int>(inventory.devices.size());
  for (int a : requested)
    for (int b : requested)
      if (a >= 0 && a < b && b < n && inventory.topology[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] == "SYS" &&
          inventory.p2p[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] != "OK")
        report.notes.push_back("devices " + std::to_string(a) + " and " + std::to_string(b) +
                               " are linked across CPU sockets without peer-to-peer access: activations between "
                               "them pass through host memory; prefer devices on one socket");
  if (inventory.devices.empty()) {
    report.notes.push_back("NVML " + inventory.nvml_status);
    report.notes.push_back("ROCm SMI " + inventory.rocm_status);
  }
  if (inventory.virtual_devices)
    report.notes.push_back("devices are virtual: the CPU split by --virtual-devices / PLEXUS_VIRTUAL_DEVICES");
  else if (inventory.virtual_gpus > 0)
    report.notes.push_back("devices are virtual GPUs: GPU 0 split by --virtual-gpus / PLEXUS_VIRTUAL_GPUS");
  // Whether runs can use GPUs at all, in one line.
  if (!inventory.virtual_devices && inventory.cuda_status != "not probed")
    report.notes.push_back(inventory.cuda_status.rfind("ok", 0) == 0 ? "CUDA usable: " + inventory.cuda_status.substr(4)
                                                                     : "CUDA unusable: " + inventory.cuda_status.substr(inventory.cuda_status.find(':') + 2));
  report.max_memory_flag = join(budgets, ",");
  // Virtual devices are the budgets themselves: --max-memory "0=…,1=…" plans and runs on that
  // many virtual devices, so the flags and the YAML name no --virtual-devices beside it (plan and
  // bench refuse budgets given two ways). GPUs are named with --devices / device_ids.
  if (inventory.virtual_devices) {
    report.plan_flags = budgets.empty() ? "--virtual-devices " + std::to_string(inventory.devices.size())
                                        : "--max-memory \"" + report.max_memory_flag + "\"";
  } else if (inventory.virtual_gpus > 0) {
    report.plan_flags = "--virtual-gpus " + std::to_string(inventory.virtual_gpus) + " --devices " + join(ids, ",") +
                        (budgets.empty() ? "" : " --max-memory \"" + report.max_memory_flag + "\"");
  } else {
    report.plan_flags = "--devices " + join(ids, ",") + (budgets.empty() ? "" : " --max-memory \"" + report.max_memory_flag + "\"");
  }
  std::ostringstream yaml;
  yaml << "backend:\n  type: plexus\n";
  if (!inventory.virtual_devices) yaml << "  device_ids: [" << join(ids, ", ") << "]\n";
  if (!budgets.empty()) {
    std::vector<std::string> entries;
    for (const DoctorDevice& d : report.devices)
      if (d.max_memory_bytes) entries.push_back(std::to_string(d.index) + ": " + memory_flag_value(*d.max_memory_bytes));
    yaml << "  max_memory: {" << join(entries, ", ") << "}\n";
  } else if (inventory.virtual_devices) {
    yaml << "  virtual_devices: " << inventory.devices.size() << "\n";
  }
  report.yaml_backend = yaml.str();
  return report;
}

Json to_json(const DoctorReport& report) {
  Json devices = Json::array();
  for (const DoctorDevice& d : report.devices) {
    Json j{{"index", d.index},
           {"verdict", doctor_verdict_name(d.verdict)},
           {"present", d.verdict != DoctorVerdict::kMissing},
           {"usable", d.verdict == DoctorVerdict::kReady || d.verdict == DoctorVerdict::kWarning},
           {"problems", d.problems},
           {"warnings", d.warnings},
           {"links", d.links},
           {"recommended_max_memory_bytes", d.max_memory_bytes ? Json(*d.max_memory_bytes) : Json(nullptr)},
           {"recommended_max_memory", d.max_memory_bytes ? Json(memory_flag_value(*d.max_memory_bytes)) : Json(nullptr)}};
    j["device"] = d.info ? to_json(*d.info) : Json(nullptr);
    devices.push_back(j);
  }
  return Json{{"ok", report.ok},
              {"devices", devices},
              {"max_memory", report.max_memory_flag},
              {"plan_flags", report.plan_flags},
              {"yaml_backend", report.yaml_backend},
              {"notes", report.notes}};
}

std::string to_text(const DoctorReport& report) {
  std::ostringstream out;
  for (const DoctorDevice& d : report.devices) {
    out << "device " << d.index;
    if (d.info) out << " (" << d.info->name << ")";
    out << ": " << doctor_verdict_name(d.verdict) << "\n";
    if (d.info) {
      const DeviceInfo& i = *d.info;
      out << "  memory free   "
          << (i.memory_free_bytes ? format_bytes(*i.memory_free_bytes) : std::string("n/a")) << " of "
          << (i.memory_total_bytes ? format_bytes(*i.memory_total_bytes) : std::string("n/a")) << "\n";
      out << "  processes     " << (i.processes ? std::to_string(*i.processes) : std::string("n/a")) << "\n";
      out << "  temperature   "
          << (i.temperature_c ? std::to_string(static_cast<int>(*i.temperature_c)) + " C" : std::string("n/a")) << "\n";
    }
    if (d.max_memory_bytes) out << "  --max-memory  " << memory_flag_value(*d.max_memory_bytes) << " (90 % of free)\n";
    for (const auto& l : d.links) out << "  link to " << l << "\n";
    for (const auto& p : d.problems) out << "  PROBLEM: " << p << "\n";
    for (const auto& w : d.warnings) out << "  warning: " << w << "\n";
  }
  for (const auto& n : report.notes) out << "note: " << n << "\n";
  out << "\n" << (report.ok ? "all requested devices are usable" : "NOT READY: fix the problems above") << "\n";
  if (!report.max_memory_flag.empty()) {
    out << "\nplexus plan / generate flags" << (report.ok ? "" : " (usable devices only)") << ":\n  "
        << report.plan_flags << "\n";
    out << "\nbenchmark YAML:\n";
    std::istringstream yaml(report.yaml_backend);
    for (std::string line; std::getline(yaml, line);) out << "  " << line << "\n";
  }
  return out.str();
}

}  // namespace plexus
