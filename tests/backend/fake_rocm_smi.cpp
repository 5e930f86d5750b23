// A stand-in for librocm_smi64.so written for plexus's tests: two AMD GPUs joined by XGMI, each
// drawing a steady 300 W with an exact energy counter. Fixed values; nothing is scripted.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr std::uint32_t kDevices = 2;
constexpr double kPowerW = 300.0;
constexpr float kResolutionUj = 15.3f;
constexpr int kInvalidArgs = 1;  // RSMI_STATUS_INVALID_ARGS
double g_start_s = 0;

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

}  // namespace

FAKE_EXPORT int rsmi_init(std::uint64_t) {
  g_start_s = now_s();
  return 0;
}
FAKE_EXPORT int rsmi_shut_down() { return 0; }
FAKE_EXPORT int rsmi_num_monitor_devices(std::uint32_t* n) {
  *n = kDevices;
  return 0;
}
FAKE_EXPORT int rsmi_dev_name_get(std::uint32_t dv, char* name, std::size_t len) {
  if (dv >= kDevices) return kInvalidArgs;
  std::snprintf(name, len, "AMD Instinct MI300X");
  return 0;
}
FAKE_EXPORT int rsmi_dev_unique_id_get(std::uint32_t dv, std::uint64_t* id) {
  *id = 0xabcd0000u + dv;
  return dv < kDevices ? 0 : kInvalidArgs;
}
FAKE_EXPORT int rsmi_dev_memory_total_get(std::uint32_t dv, int, std::uint64_t* bytes) {
  *bytes = 192ull << 30;
  return dv < kDevices ? 0 : kInvalidArgs;
}
FAKE_EXPORT int rsmi_dev_memory_usage_get(std::uint32_t dv, int, std::uint64_t* bytes) {
  *bytes = 8ull << 30;
  return dv < kDevices ? 0 : kInvalidArgs;
}
FAKE_EXPORT int rsmi_dev_power_ave_get(std::uint32_t dv, std::uint32_t, std::uint64_t* microwatts) {
  *microwatts = static_cast<std::uint64_t>(kPowerW * 1e6);
  return dv < kDevices ? 0 : kInvalidArgs;
}
FAKE_EXPORT int rsmi_dev_power_cap_get(std::uint32_t dv, std::uint32_t, std::uint64_t* microwatts) {
  *microwatts = 750000000ull;
  return dv < kDevices ? 0 : kInvalidArgs;
}
FAKE_EXPORT int rsmi_dev_temp_metric_get(std::uint32_t dv, std::uint32_t, int, std::int64_t* millidegrees) {
  *millidegrees = 45000;
  return dv < kDevices ? 0 : kInvalidArgs;
}
FAKE_EXPORT int rsmi_dev_busy_percent_get(std::uint32_t dv, std::uint32_t* percent) {
  *percent = 40;
  return dv < kDevices ? 0 : kInvalidArgs;
}
// Counter in units of `resolution` microjoules, as ROCm SMI reports it.
FAKE_EXPORT int rsmi_dev_energy_count_get(std::uint32_t dv, std::uint64_t* count, float* resolution,
                                          std::uint64_t* timestamp) {
  const double elapsed = now_s() - g_start_s;
  *count = static_cast<std::uint64_t>(kPowerW * elapsed * 1e6 / kResolutionUj);
  *resolution = kResolutionUj;
  *timestamp = static_cast<std::uint64_t>(elapsed * 1e9);
  return dv < kDevices ? 0 : kInvalidArgs;
}
FAKE_EXPORT int rsmi_topo_get_link_type(std::uint32_t a, std::uint32_t b, std::uint64_t* hops, int* type) {
  *hops = 1;
  *type = 2;  // XGMI
  return a < kDevices && b < kDevices ? 0 : kInvalidArgs;
}
FAKE_EXPORT int rsmi_is_P2P_accessible(std::uint32_t a, std::uint32_t b, bool* accessible) {
  *accessible = true;
  return a < kDevices && b < kDevices ? 0 : kInvalidArgs;
}
