// Device facts: the built-in GPU table, the calibration file's JSON, virtual devices from it.
#include "planner/device_facts.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace plexus {

namespace {

constexpr double kG = 1e9, kT = 1e12;

// Datasheet figures (dense, no sparsity), cited in docs/planner.md. Idle power is not a
// datasheet figure: typical idle draw as reported by nvidia-smi / rocm-smi on idle boards.
struct GpuRow {
  const char* key;
  const char* name;
  double hbm, f32, f16, i8, link, pcie, idle, busy;
};
constexpr GpuRow kGpus[] = {
    // key         name                bytes/s     FP32       BF16       INT8       peer link  PCIe/host  idle W busy W
    {"a100-40gb", "A100 40GB SXM", 1555 * kG, 19.5 * kT, 312 * kT, 624 * kT, 600 * kG, 32 * kG, 50, 400},
    {"a100-80gb", "A100 80GB SXM", 2039 * kG, 19.5 * kT, 312 * kT, 624 * kT, 600 * kG, 32 * kG, 50, 400},
    {"h100-sxm", "H100 SXM", 3350 * kG, 67 * kT, 989 * kT, 1979 * kT, 900 * kG, 64 * kG, 70, 700},
    {"h100-pcie", "H100 PCIe", 2000 * kG, 51 * kT, 756 * kT, 1513 * kT, 600 * kG, 64 * kG, 50, 350},
    {"h200", "H200 SXM", 4800 * kG, 67 * kT, 989 * kT, 1979 * kT, 900 * kG, 64 * kG, 75, 700},
    {"l40s", "L40S", 864 * kG, 91.6 * kT, 362 * kT, 733 * kT, 32 * kG, 32 * kG, 35, 350},
    {"rtx-4090", "GeForce RTX 4090", 1008 * kG, 82.6 * kT, 165.2 * kT, 660.6 * kT, 32 * kG, 32 * kG, 20, 450},
    {"mi300x", "Instinct MI300X", 5300 * kG, 163.4 * kT, 1307.4 * kT, 2614.9 * kT, 448 * kG, 64 * kG, 140, 750},
};

std::string normalise(std::string s) {
  for (char& c : s) c = c == '_' || c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

double positive(const Json& j, const std::string& key, const std::string& where) {
  const double v = json_number_or(j, key, -1, where);
  if (!(v > 0)) throw InputError(where + ": field '" + key + "' must be a positive number; run plexus calibrate again");
  return v;
}

std::optional<double> optional_number(const Json& j, const std::string& key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

Json optional_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

// The measured entry for `threads`: the largest thread count measured at or below it, scaled
// linearly (thread counts beyond the host's do not add bandwidth).
HostThroughput at_threads(const HostCalibration& c, int threads) {
  HostThroughput best = c.by_threads.front();
  for (const HostThroughput& t : c.by_threads)
    if (t.threads <= threads) best = t;
  if (best.threads < threads && best.threads == c.by_threads.back().threads) return best;  // no more cores
  const double scale = static_cast<double>(threads) / best.threads;
  if (scale > 1) {
    best.memory_bandwidth *= scale;
    best.flops_f32 *= scale;
    best.flops_16bit *= scale;
    for (auto& [tokens, rate] : best.weight_rate_by_tokens) rate *= scale;
    best.streamed_weight_rate *= scale;
  }
  best.threads = threads;
  return best;
}

}  // namespace

Json device_facts_to_json(const DeviceFacts& f) {
  return {{"name", f.name},
          {"source", f.source},
          {"memory_bandwidth_bytes_per_s", f.memory_bandwidth},
          {"flops_f32", f.flops_f32},
          {"flops_16bit", f.flops_16bit},
          {"flops_int8", f.flops_int8},
          {"link_bytes_per_s", f.link_bandwidth},
          {"host_copy_bytes_per_s", f.host_copy_bandwidth},
          {"disk_read_bytes_per_s", f.disk_read_bandwidth},
          {"idle_w", optional_json(f.idle_w)},
          {"busy_w", optional_json(f.busy_w)},
          {"launch_overhead_s", f.launch_overhead_s},
          {"streamed_weight_bytes_per_s", f.streamed_weight_rate},
          {"handoff_s", f.handoff_s},
          {"collective_latency_s", f.collective_latency_s}};
}

Json host_calibration_to_json(const HostCalibration& c) {
  Json by = Json::array();
  for (const HostThroughput& t : c.by_threads) {
    Json rates = Json::array();
    for (const auto& [tokens, rate] : t.weight_rate_by_tokens) rates.push_back({tokens, rate});
    by.push_back({{"threads", t.threads},
                  {"memory_bandwidth_bytes_per_s", t.memory_bandwidth},
                  {"flops_f32", t.flops_f32},
                  {"flops_16bit", t.flops_16bit},
                  {"weight_bytes_per_s_by_tokens", rates},
                  {"launch_overhead_s", t.launch_overhead_s},
                  {"streamed_weight_bytes_per_s", t.streamed_weight_rate}});
  }
  return {{"format", "plexus-calibration-1"},
          {"cpu", c.cpu},
          {"isa", c.isa},
          {"created", c.created},
          {"by_threads", by},
          {"copy_bytes_per_s", c.copy_bandwidth},
          {"slot_copy_bytes_per_s", c.slot_copy_bandwidth},
          {"handoff_s", c.handoff_s},
          {"disk_read_bytes_per_s", c.disk_read_bandwidth},
          {"idle_w", optional_json(c.idle_w)},
          {"busy_w", optional_json(c.busy_w)}};
}

HostCalibration host_calibration_from_json(const Json& j, const std::string& where) {
  if (!j.is_object() || json_string_or(j, "format", "", where) != "plexus-calibration-1") {
    throw InputError(where + ": not a plexus calibration file (format plexus-calibration-1); run plexus calibrate");
  }
  HostCalibration c;
  c.cpu = json_string_or(j, "cpu", "", where);
  c.isa = json_string_or(j, "isa", "", where);
  c.created = json_string_or(j, "created", "", where);
  if (!j.contains("by_threads") || !j["by_threads"].is_array() || j["by_threads"].empty()) {
    throw InputError(where + ": field 'by_threads' must be a non-empty array; run plexus calibrate again");
  }
  for (const Json& t : j["by_threads"]) {
    HostThroughput h;
    h.threads = static_cast<int>(json_int(t, "threads", where));
    h.memory_bandwidth = positive(t, "memory_bandwidth_bytes_per_s", where);
    h.flops_f32 = positive(t, "flops_f32", where);
    h.flops_16bit = positive(t, "flops_16bit", where);
    h.launch_overhead_s = json_number_or(t, "launch_overhead_s", 0, where);
    h.streamed_weight_rate = std::max(0.0, json_number_or(t, "streamed_weight_bytes_per_s", 0, where));
    if (t.contains("weight_bytes_per_s_by_tokens") && t["weight_bytes_per_s_by_tokens"].is_array()) {
      for (const Json& pr : t["weight_bytes_per_s_by_tokens"]) {
        if (!pr.is_array() || pr.size() != 2 || !pr[0].is_number() || !pr[1].is_number() || !(pr[1].get<double>() > 0) ||
            (!h.weight_rate_by_tokens.empty() && pr[0].get<double>() <= h.weight_rate_by_tokens.back().first)) {
          throw InputError(where + ": 'weight_bytes_per_s_by_tokens' must hold [tokens, bytes/s] pairs, tokens ascending");
        }
        h.weight_rate_by_tokens.emplace_back(pr[0].get<double>(), pr[1].get<double>());
      }
    }
    if (h.threads < 1 || (!c.by_threads.empty() && h.threads <= c.by_threads.back().threads)) {
      throw InputError(where + ": 'by_threads' must list ascending positive thread counts");
    }
    c.by_threads.push_back(h);
  }
  c.copy_bandwidth = positive(j, "copy_bytes_per_s", where);
  c.slot_copy_bandwidth = std::max(0.0, json_number_or(j, "slot_copy_bytes_per_s", 0, where));
  c.handoff_s = std::max(0.0, json_number_or(j, "handoff_s", 0, where));
  c.disk_read_bandwidth = positive(j, "disk_read_bytes_per_s", where);
  c.idle_w = optional_number(j, "idle_w");
  c.busy_w = optional_number(j, "busy_w");
  return c;
}

DeviceFacts virtual_device_facts(const HostCalibration& c, int threads, const std::string& source) {
  const HostThroughput t = at_threads(c, std::max(1, threads));
  DeviceFacts f;
  f.name = "virtual device, " + std::to_string(t.threads) + " thread" + (t.threads > 1 ? "s" : "");
  f.source = source;
  f.memory_bandwidth = t.memory_bandwidth;
  f.flops_f32 = t.flops_f32;
  f.flops_16bit = t.flops_16bit;
  f.flops_int8 = t.flops_16bit;
  f.link_bandwidth = c.copy_bandwidth;
  // Weights stream in layer by layer into reused slots: the slot copy's rate where measured.
  f.host_copy_bandwidth = c.slot_copy_bandwidth > 0 ? c.slot_copy_bandwidth : c.copy_bandwidth;
  f.disk_read_bandwidth = c.disk_read_bandwidth;
  f.idle_w = c.idle_w;
  f.busy_w = c.busy_w;
  f.weight_rate_by_tokens = t.weight_rate_by_tokens;
  f.launch_overhead_s = t.launch_overhead_s;
  f.streamed_weight_rate = t.streamed_weight_rate;
  f.handoff_s = c.handoff_s;
  f.collective_latency_s = c.handoff_s > 0 ? c.handoff_s : kDefaultHandoffS;
  return f;
}

DeviceFacts host_facts(const HostCalibration& c, int threads, const std::string& source) {
  DeviceFacts f = virtual_device_facts(c, threads, source);
  f.name = "host" + (c.cpu.empty() ? std::string() : " (" + c.cpu + ")") + ", " + std::to_string(std::max(1, threads)) +
           " threads";
  return f;
}

std::optional<DeviceFacts> builtin_gpu_facts(const std::string& name) {
  const std::string key = normalise(name);
  for (const GpuRow& g : kGpus) {
    if (key != g.key) continue;
    DeviceFacts f;
    f.name = g.name;
    f.source = "datasheet";
    f.memory_bandwidth = g.hbm;
    f.flops_f32 = g.f32;
    f.flops_16bit = g.f16;
    f.flops_int8 = g.i8;
    f.link_bandwidth = g.link;
    f.host_copy_bandwidth = g.pcie;
    f.disk_read_bandwidth = 2 * kG;  // an NVMe drive: the checkpoint's pages, not the GPU's
    f.idle_w = g.idle;
    f.busy_w = g.busy;
    f.collective_latency_s = g.link > g.pcie ? 10e-6 : 25e-6;  // NVLink / xGMI, else PCIe (assumed)
    return f;
  }
  return std::nullopt;
}

std::optional<std::string> builtin_gpu_key_for(const std::string& device_name, std::optional<std::uint64_t> memory_bytes) {
  std::string n = device_name;
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&n](const char* s) { return n.find(s) != std::string::npos; };
  if (has("h200")) return "h200";
  if (has("h100")) return has("pcie") ? "h100-pcie" : "h100-sxm";
  if (has("a100")) return has("80gb") || (memory_bytes && *memory_bytes > (50ull << 30)) ? "a100-80gb" : "a100-40gb";
  if (has("l40s")) return "l40s";
  if (has("4090")) return "rtx-4090";
  if (has("mi300x")) return "mi300x";
  return std::nullopt;
}

std::vector<std::string> builtin_gpu_names() {
  std::vector<std::string> v;
  for (const GpuRow& g : kGpus) v.push_back(g.key);
  return v;
}

}  // namespace plexus
