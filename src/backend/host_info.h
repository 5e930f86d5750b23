// Facts about the host: CPU model, cores, memory, NUMA nodes and the ISA features kernels
// dispatch on. Read from /proc and /sys; the parsers take text so tests can feed samples.
#pragma once
#include <cstdint>
#include <string>

#include "core/json.h"

namespace plexus {

// /proc/cpuinfo flag names. The kernel tables use avx2 + fma + f16c ("avx2") and
// avx512f/bw/vl/dq ("avx512"); the bf16 dot product, VNNI and AMX are reported for later kernels.
struct IsaFeatures {
  bool avx2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512_bf16 = false;
  bool avx512_vnni = false;
  bool avx_vnni = false;
  bool amx_bf16 = false;
  bool amx_int8 = false;
  bool f16c = false;
  bool fma = false;
};

struct HostInfo {
  std::string cpu_model = "unknown";
  int logical_cores = 0;    // hardware threads
  int physical_cores = 0;   // distinct (socket, core); 0 when /proc/cpuinfo does not say
  int sockets = 0;
  int numa_nodes = 1;
  std::uint64_t memory_total_bytes = 0;
  std::uint64_t memory_available_bytes = 0;
  IsaFeatures isa;
};

// Reads the running host.
HostInfo read_host_info();

// Fills model, cores, sockets and ISA from /proc/cpuinfo text.
void parse_cpuinfo(const std::string& text, HostInfo& info);
// Fills memory_total/available from /proc/meminfo text (MemAvailable, else MemFree).
void parse_meminfo(const std::string& text, HostInfo& info);

// {"cpu_model", "logical_cores", "physical_cores", "sockets", "numa_nodes",
//  "memory_total_bytes", "memory_available_bytes", "isa": {"avx2": true, ...}}
Json to_json(const HostInfo& info);
// The inverse of to_json (unknown keys ignored); InputError naming `where` and the field when a
// field has the wrong type.
HostInfo host_info_from_json(const Json& j, const std::string& where);
// "avx2 avx512f avx512bw ... f16c fma" (the features present, in IsaFeatures' order), "none" when none.
std::string isa_summary(const IsaFeatures& isa);

}  // namespace plexus
