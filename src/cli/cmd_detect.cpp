// `plexus detect [--json]`: the devices plexus can use (GPUs through NVML / ROCm SMI, or virtual
// devices), the link between every pair like `nvidia-smi topo -m`, and the host.
#include <cstdio>
#include <string>

#include "backend/detect.h"
#include "cli/commands.h"
#include "core/args.h"
#include "core/units.h"
#include "kernels/cpu/isa.h"

namespace plexus::cli {

namespace {

template <typename T, typename F>
std::string or_na(const std::optional<T>& value, F format) {
  return value ? format(*value) : std::string("n/a");
}

std::string bytes_text(std::uint64_t b) { return format_bytes(b); }

void print_table(const Inventory& inv) {
  std::printf("%-4s %-8s %-34s %-12s %-12s %-5s %-8s %-6s %-5s\n", "idx", "kind", "name", "memory", "free",
              "cc", "power", "temp", "procs");
  for (const DeviceInfo& d : inv.devices) {
    std::printf("%-4d %-8s %-34.34s %-12s %-12s %-5s %-8s %-6s %-5s\n", d.index, device_kind_name(d.kind),
                d.name.c_str(), or_na(d.memory_total_bytes, bytes_text).c_str(),
                or_na(d.memory_free_bytes, bytes_text).c_str(),
                or_na(d.compute_capability, [](const std::string& s) { return s; }).c_str(),
                or_na(d.power_limit_w, [](double w) { return std::to_string(static_cast<int>(w)) + " W"; }).c_str(),
                or_na(d.temperature_c, [](double c) { return std::to_string(static_cast<int>(c)) + " C"; }).c_str(),
                or_na(d.processes, [](int p) { return std::to_string(p); }).c_str());
    for (const std::string& p : d.problems) std::printf("     problem: %s\n", p.c_str());
  }
  const HostInfo& h = inv.host;
  std::printf("%-4s %-8s %-34.34s %-12s %-12s\n", "cpu", "cpu", h.cpu_model.c_str(),
              format_bytes(h.memory_total_bytes).c_str(), format_bytes(h.memory_available_bytes).c_str());
  if (inv.devices.empty()) std::printf("\nno GPU found; use --virtual-devices N to split the CPU into N devices\n");
  // The devices runs use on GPUs, as the CUDA runtime numbers them.
  bool cuda_header = false;
  for (const DeviceInfo& d : inv.devices) {
    if (!d.cuda_device) continue;
    if (!cuda_header) std::printf("\nCUDA devices (what --devices, --max-memory and --device-map name on GPU runs)\n");
    cuda_header = true;
    const std::string where = d.virtual_on_gpu ? "virtual, on GPU " + std::to_string(*d.virtual_on_gpu)
                                               : "detected as device " + std::to_string(d.index);
    std::printf("  %-8s %s, %s%s\n", d.cuda_device->c_str(), d.name.c_str(), where.c_str(),
                d.memory_free_bytes ? (", " + format_bytes(*d.memory_free_bytes) + (d.virtual_on_gpu ? " budget" : " free")).c_str() : "");
  }

  if (inv.devices.size() > 1) {
    std::printf("\ntopology (p2p read status in brackets)\n%-7s", "");
    for (const DeviceInfo& d : inv.devices) std::printf(" %-11s", ("DEV" + std::to_string(d.index)).c_str());
    std::printf("\n");
    for (std::size_t i = 0; i < inv.devices.size(); ++i) {
      std::printf("%-7s", ("DEV" + std::to_string(inv.devices[i].index)).c_str());
      for (std::size_t j = 0; j < inv.devices.size(); ++j) {
        const std::string cell = i == j ? "X" : inv.topology[i][j] + " (" + inv.p2p[i][j] + ")";
        std::printf(" %-11s", cell.c_str());
      }
      std::printf("\n");
    }
    std::printf("legend: NV<n> n NVLinks, PIX one PCIe switch, PXB several switches, PHB host bridge,\n"
                "        NODE within a NUMA node, SYS across CPU sockets, XGMI AMD link, SHM shared host\n"
                "        memory (virtual devices), VGPU virtual GPUs on one GPU, ? unknown; p2p OK supported,\n"
                "        NS not supported\n");
  }
  std::printf("\nhost: %s, %d logical / %d physical cores, %d socket(s), %d NUMA node(s)\n", h.cpu_model.c_str(),
              h.logical_cores, h.physical_cores, h.sockets, h.numa_nodes);
  std::printf("      memory %s total, %s available; ISA %s\n", format_bytes(h.memory_total_bytes).c_str(),
              format_bytes(h.memory_available_bytes).c_str(), isa_summary(h.isa).c_str());
  std::printf("      CPU kernels %s (PLEXUS_ISA=generic|avx2|avx512|avx512bf16 picks another)\n", std::string(isa_name(best_isa())).c_str());
  std::printf("sources: NVML %s\n         ROCm SMI %s\n         CUDA %s\n", inv.nvml_status.c_str(), inv.rocm_status.c_str(),
              inv.cuda_status.c_str());
}

}  // namespace

int cmd_detect(int argc, char** argv) {
  Args args("detect", "List the devices plexus can use, the links between them, and the host.");
  add_device_options(args);
  args.flag("--json", "print JSON: {\"devices\", \"topology\", \"p2p\", \"host\" (isa, cpu_kernels), \"sources\" (nvml, rocm_smi, cuda)}");
  args.epilog("GPU libraries are loaded at run time: PLEXUS_NVML_LIBRARY and PLEXUS_ROCM_SMI_LIBRARY\n"
              "override their paths. A missing library or query shows as n/a (null in JSON).");
  if (!args.parse(argc, argv)) return 0;
  const Inventory inv = detect_devices(device_options_from(args));
  if (args.get_flag("--json")) {
    Json j = to_json(inv);
    j["host"]["cpu_kernels"] = std::string(isa_name(best_isa()));
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_table(inv);
  }
  return 0;
}

}  // namespace plexus::cli
