// A stand-in for libnvidia-ml.so written for plexus's tests: devices, topology and readings come
// from the JSON file named by PLEXUS_FAKE_NVML_SCRIPT. Built twice: complete, and with
// FAKE_NVML_MINIMAL, lacking energy, topology, temperature and other optional symbols.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/nvml/nvml_api.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct nvmlDevice_st {
  nlohmann::json spec;
};

namespace {

// The library's state, as a real driver library has: loaded by nvmlInit.
struct FakeState {
  nlohmann::json script;
  std::vector<nvmlDevice_st> devices;
  double start_s = 0;
  int init_count = 0;
};
FakeState& state() {
  static FakeState s;
  return s;
}

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
double elapsed_s() { return now_s() - state().start_s; }

nvmlDevice_st* device_of(nvmlDevice_t h) { return h; }
const nlohmann::json& spec(nvmlDevice_t h) { return device_of(h)->spec; }

// Faults a device can script (seconds since nvmlInit):
//   "hang_after_s": T      every reading query after T blocks (a hung driver; an hour)
//   "lost_after_s": T      every query after T fails with GPU_IS_LOST (the GPU fell off the bus)
//   "energy_reset_at_s": T the energy counter restarts from 0 at T (a driver reload)
//   "power_mw_raw": N      power readings return N mW as is (4294967295: NVML's 4.29 MW fault)
//   "name_unterminated": true  the name fills the caller's whole buffer, without a NUL
int scripted_fault(nvmlDevice_t h) {
  const auto& s = spec(h);
  const double t = elapsed_s();
  if (s.contains("hang_after_s") && t > s["hang_after_s"].get<double>()) {
    timespec hour{3600, 0};
    nanosleep(&hour, nullptr);
  }
  if (s.contains("lost_after_s") && t > s["lost_after_s"].get<double>()) return kNvmlErrorGpuIsLost;
  return kNvmlSuccess;
}

// Scripted error for one query: {"errors": {"memory_info": 15}} on a device.
int scripted_error(nvmlDevice_t h, const char* query) {
  if (int rc = scripted_fault(h)) return rc;
  const auto& s = spec(h);
  if (s.contains("errors") && s["errors"].contains(query)) return s["errors"][query].get<int>();
  return kNvmlSuccess;
}

int copy_string(const std::string& value, char* out, unsigned length) {
  if (value.size() + 1 > length) return kNvmlErrorInsufficientSize;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return kNvmlSuccess;
}

// power(t) = power_w + power_ramp_w_per_s * t, t in seconds since nvmlInit.
double power_w(nvmlDevice_t h, double t) {
  return spec(h).value("power_w", 0.0) + spec(h).value("power_ramp_w_per_s", 0.0) * t;
}

}  // namespace

FAKE_EXPORT nvmlReturn_t nvmlInit_v2() {
  FakeState& s = state();
  if (s.init_count++ > 0) return kNvmlSuccess;
  const char* path = std::getenv("PLEXUS_FAKE_NVML_SCRIPT");
  if (path == nullptr) return 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  std::ifstream in(path);
  if (!in) return 9;
  s.script = nlohmann::json::parse(in);
  if (s.script.value("init_error", 0) != 0) {
    s.init_count = 0;
    return s.script["init_error"].get<int>();
  }
  s.devices.clear();
  for (const auto& d : s.script["devices"]) s.devices.push_back(nvmlDevice_st{d});
  s.start_s = now_s();
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown() {
  if (state().init_count > 0) --state().init_count;
  return kNvmlSuccess;
}

FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case kNvmlSuccess: return "Success";
    case kNvmlErrorNotSupported: return "Not Supported";
    case kNvmlErrorGpuIsLost: return "GPU is lost";
    default: return "Unknown Error";
  }
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* out, unsigned length) {
  return copy_string(state().script.value("driver_version", "550.54.15"), out, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  *count = static_cast<unsigned>(state().devices.size());
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* out) {
  if (index >= state().devices.size()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *out = &state().devices[index];
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char* out, unsigned length) {
  if (spec(h).value("name_unterminated", false)) {
    std::memset(out, 'X', length);
    return kNvmlSuccess;
  }
  return copy_string(spec(h).value("name", "Fake GPU"), out, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char* out, unsigned length) {
  return copy_string(spec(h).value("uuid", "GPU-fake"), out, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t* memory) {
  if (int rc = scripted_error(h, "memory_info")) return rc;
  const unsigned long long mib = 1ull << 20;
  memory->total = spec(h).value("memory_total_mb", 0ull) * mib;
  memory->used = spec(h).value("memory_used_mb", 0ull) * mib;
  memory->free = memory->total - memory->used;
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t* pci) {
  std::memset(pci, 0, sizeof *pci);
  return copy_string(spec(h).value("pci_bus_id", "00000000:00:00.0"), pci->busId, sizeof pci->busId);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t* u) {
  if (int rc = scripted_fault(h)) return rc;
  u->gpu = spec(h).value("utilization", 0u);
  u->memory = spec(h).value("memory_utilization", 0u);
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned* milliwatts) {
  if (int rc = scripted_fault(h)) return rc;
  if (!spec(h).contains("power_w")) return kNvmlErrorNotSupported;
  if (spec(h).contains("power_mw_raw")) {
    *milliwatts = spec(h)["power_mw_raw"].get<unsigned>();
    return kNvmlSuccess;
  }
  *milliwatts = static_cast<unsigned>(power_w(h, elapsed_s()) * 1000.0 + 0.5);
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned* mhz) {
  const char* key = type == kNvmlClockMem ? "memory" : "sm";
  if (!spec(h).contains("clocks_mhz")) return kNvmlErrorNotSupported;
  *mhz = spec(h)["clocks_mhz"].value(key, 0u);
  return kNvmlSuccess;
}

#ifndef FAKE_NVML_MINIMAL

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, int type, unsigned* mhz) {
  const char* key = type == kNvmlClockMem ? "memory_max" : "sm_max";
  if (!spec(h).contains("clocks_mhz")) return kNvmlErrorNotSupported;
  *mhz = spec(h)["clocks_mhz"].value(key, 0u);
  return kNvmlSuccess;
}

// Energy since nvmlInit (plus an offset) in mJ: the exact integral of the scripted power.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long* millijoules) {
  if (int rc = scripted_fault(h)) return rc;
  if (!spec(h).contains("power_w")) return kNvmlErrorNotSupported;
  const double t = elapsed_s();
  const auto integral = [&](double x) {
    return spec(h).value("power_w", 0.0) * x + spec(h).value("power_ramp_w_per_s", 0.0) * x * x / 2;
  };
  double joules = spec(h).value("energy_offset_j", 0.0) + integral(t);
  if (spec(h).contains("energy_reset_at_s") && t > spec(h)["energy_reset_at_s"].get<double>()) {
    joules = integral(t) - integral(spec(h)["energy_reset_at_s"].get<double>());
  }
  *millijoules = static_cast<unsigned long long>(joules * 1000.0);
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int, unsigned* celsius) {
  if (int rc = scripted_error(h, "temperature")) return rc;
  *celsius = spec(h).value("temperature_c", 40u);
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t h, int* major, int* minor) {
  const auto cc = spec(h).value("compute_capability", std::vector<int>{8, 0});
  *major = cc.at(0);
  *minor = cc.at(1);
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t h, unsigned* milliwatts) {
  *milliwatts = static_cast<unsigned>(spec(h).value("power_limit_w", 300.0) * 1000);
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long* reasons) {
  *reasons = spec(h).value("throttle_reasons", 0ull);
  return kNvmlSuccess;
}

// Writes nothing into `infos`: plexus only counts (zero-length array).
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned* count, void*) {
  const unsigned n = spec(h).value("processes", 0u);
  const unsigned capacity = *count;
  *count = n;
  return n > capacity ? kNvmlErrorInsufficientSize : kNvmlSuccess;
}

// The scripted processes of a device: "process_list": [{"pid": 1, "used_mb": 500, "sm_util": 40}, ...];
// {"pid_file": PATH} in place of "pid" takes the pid written in PATH (an entry whose file is not
// there yet is left out), so a test can name a process it starts later. "used_mb": null: NVML's
// "not available".
namespace {
struct FakeProcess {
  unsigned pid = 0;
  nlohmann::json used_mb;
  unsigned sm_util = 0;
};
std::vector<FakeProcess> scripted_processes(nvmlDevice_t h) {
  std::vector<FakeProcess> out;
  if (!spec(h).contains("process_list")) return out;
  for (const auto& p : spec(h)["process_list"]) {
    FakeProcess f;
    if (p.contains("pid_file")) {
      std::ifstream in(p["pid_file"].get<std::string>());
      if (!(in >> f.pid)) continue;
    } else {
      f.pid = p.value("pid", 0u);
    }
    f.used_mb = p.contains("used_mb") ? p["used_mb"] : nlohmann::json(0);
    f.sm_util = p.value("sm_util", 0u);
    out.push_back(f);
  }
  return out;
}
}  // namespace

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t h, unsigned* count, nvmlProcessInfo_v2_t* infos) {
  if (int rc = scripted_error(h, "process_list")) return rc;
  const std::vector<FakeProcess> list = scripted_processes(h);
  const unsigned capacity = *count;
  *count = static_cast<unsigned>(list.size());
  if (list.size() > capacity) return kNvmlErrorInsufficientSize;
  for (std::size_t i = 0; i < list.size(); ++i) {
    infos[i] = nvmlProcessInfo_v2_t{};
    infos[i].pid = list[i].pid;
    infos[i].usedGpuMemory = list[i].used_mb.is_null() ? kNvmlValueNotAvailable : list[i].used_mb.get<unsigned long long>() << 20;
  }
  return kNvmlSuccess;
}

// One sample per scripted process, stamped now (microseconds); NOT_FOUND when there is none.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t h, nvmlProcessUtilizationSample_t* samples,
                                                         unsigned* count, unsigned long long) {
  if (int rc = scripted_error(h, "process_utilization")) return rc;
  const std::vector<FakeProcess> list = scripted_processes(h);
  if (list.empty()) return kNvmlErrorNotFound;
  if (samples == nullptr || *count < list.size()) {
    *count = static_cast<unsigned>(list.size());
    return kNvmlErrorInsufficientSize;
  }
  *count = static_cast<unsigned>(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    samples[i] = nvmlProcessUtilizationSample_t{};
    samples[i].pid = list[i].pid;
    samples[i].timeStamp = static_cast<unsigned long long>(now_s() * 1e6);
    samples[i].smUtil = list[i].sm_util;
  }
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int* level) {
  const auto& topo = state().script["topology"];
  const auto i = static_cast<std::size_t>(a - state().devices.data());
  const auto j = static_cast<std::size_t>(b - state().devices.data());
  if (!topo.is_array()) return kNvmlErrorNotSupported;
  *level = topo.at(i).at(j).get<int>();
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int, int* status) {
  const auto& p2p = state().script["p2p"];
  const auto i = static_cast<std::size_t>(a - state().devices.data());
  const auto j = static_cast<std::size_t>(b - state().devices.data());
  if (!p2p.is_array()) return kNvmlErrorNotSupported;
  *status = p2p.at(i).at(j).get<int>();
  return kNvmlSuccess;
}

// "nvlinks": [1, 1, -1] on a device: link k leads to GPU nvlinks[k] (-1: inactive).
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t h, unsigned link, int* active) {
  const auto links = spec(h).value("nvlinks", std::vector<int>{});
  if (link >= links.size()) return kNvmlErrorNotSupported;
  *active = links[link] >= 0 ? 1 : 0;
  return kNvmlSuccess;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t h, unsigned link, nvmlPciInfo_t* pci) {
  const auto links = spec(h).value("nvlinks", std::vector<int>{});
  if (link >= links.size() || links[link] < 0) return kNvmlErrorNotSupported;
  return nvmlDeviceGetPciInfo_v3(&state().devices.at(static_cast<std::size_t>(links[link])), pci);
}

#endif  // FAKE_NVML_MINIMAL
