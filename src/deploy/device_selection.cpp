// Device selection for plexus deploy: named, all, or the fewest GPUs that hold the plan.
#include "deploy/device_selection.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/error.h"
#include "core/units.h"
#include "deploy/escape.h"
#include "deploy/gpu_models.h"

namespace plexus::deploy {

std::string gib_text(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / static_cast<double>(1ULL << 30));
  return buf;
}

namespace {

std::string existing_gpus(const std::vector<SelectedGpu>& gpus) {
  if (gpus.empty()) return "none (the inventory has no GPU)";
  std::string out;
  for (const SelectedGpu& g : gpus) {
    if (!out.empty()) out += ", ";
    out += std::to_string(g.index) + " (" + one_line(g.name) + ", " + gib_text(g.memory_free_bytes) + " free)";
  }
  return out;
}

}  // namespace

std::string gpu_list(const std::vector<SelectedGpu>& gpus) {
  std::string out;
  for (const SelectedGpu& g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g.index);
  return out;
}

std::vector<SelectedGpu> inventory_gpus(const Inventory& inventory, const std::string& where) {
  if (inventory.virtual_gpus > 0) {
    throw InputError(where + ": the inventory lists virtual GPUs (--virtual-gpus " + std::to_string(inventory.virtual_gpus) +
                     "); deploy needs the target's real devices: run `plexus detect --json` there without --virtual-gpus");
  }
  std::vector<SelectedGpu> out;
  for (const DeviceInfo& d : inventory.devices) {
    switch (d.kind) {
      case DeviceKind::kCuda:
        out.push_back({d.index, d.name, d.memory_total_bytes.value_or(0), d.memory_free_bytes.value_or(0), d.compute_capability});
        if (!d.memory_total_bytes || !d.memory_free_bytes) {
          throw InputError(where + ": GPU " + std::to_string(d.index) + " (" + one_line(d.name) +
                           ") has no memory_total_bytes / memory_free_bytes; deploy plans on them: run `plexus detect --json` on the "
                           "target with its NVIDIA driver loaded");
        }
        break;
      case DeviceKind::kRocm:
        throw InputError(where + ": device " + std::to_string(d.index) + " (" + one_line(d.name) +
                         ") is a ROCm GPU; plexus deploy writes deployments for NVIDIA GPUs (CUDA images) or CPUs only");
      case DeviceKind::kCpu:
      case DeviceKind::kVirtual:
        break;  // virtual CPU devices are the host split, not GPUs
    }
  }
  return out;
}

DeviceSelection select_named(const std::vector<SelectedGpu>& gpus, const std::vector<long long>& indices) {
  DeviceSelection s;
  for (long long i : indices) {
    auto it = std::find_if(gpus.begin(), gpus.end(), [&](const SelectedGpu& g) { return g.index == i; });
    if (it == gpus.end()) {
      throw InputError("--devices: GPU " + std::to_string(i) + " does not exist on the target host; its GPUs: " + existing_gpus(gpus));
    }
    s.gpus.push_back(*it);
  }
  s.reason = std::string(s.gpus.size() == 1 ? "GPU " : "GPUs ") + gpu_list(s.gpus) + " as --devices named them";
  return s;
}

DeviceSelection select_all(const std::vector<SelectedGpu>& gpus, int host_cores) {
  DeviceSelection s;
  s.gpus = gpus;
  if (gpus.empty()) {
    s.reason = "no GPU in the inventory: the deployment computes on the host's CPUs (" + std::to_string(host_cores) + " threads)";
  } else {
    s.reason = std::string(gpus.size() == 1 ? "GPU " : "GPUs ") + gpu_list(gpus) +
               ": every GPU of the inventory (no --devices or --auto-select)";
  }
  return s;
}

DeviceSelection auto_select(const std::vector<SelectedGpu>& gpus, const FitCheck& fit,
                            const std::function<bool(int)>& count_allowed) {
  if (gpus.empty()) throw InputError("--auto-select: the inventory has no GPU to select (leave --auto-select out for a CPU deployment)");
  std::vector<SelectedGpu> by_free = gpus;
  std::stable_sort(by_free.begin(), by_free.end(),
                   [](const SelectedGpu& a, const SelectedGpu& b) { return a.memory_free_bytes > b.memory_free_bytes; });
  std::string last_why;
  int last_count = 0;
  int tried_below = 0;  // the largest allowed count tried before the one that fits
  for (int k = 1; k <= static_cast<int>(by_free.size()); ++k) {
    if (!count_allowed(k)) continue;
    std::vector<SelectedGpu> pick(by_free.begin(), by_free.begin() + k);
    std::sort(pick.begin(), pick.end(), [](const SelectedGpu& a, const SelectedGpu& b) { return a.index < b.index; });
    const FitResult r = fit(pick);
    if (!r.fits) {
      last_why = r.why;
      last_count = k;
      tried_below = k;
      continue;
    }
    DeviceSelection s;
    s.gpus = pick;
    const std::string need = gib_text(static_cast<std::uint64_t>(r.per_gpu_bytes));
    s.reason = std::string(k == 1 ? "GPU " : "GPUs ") + gpu_list(pick) + ": the plan needs " + need +
               (k == 1 ? " on one GPU" : " per GPU for " + std::to_string(k) + " GPUs");
    if (tried_below > 0) {
      s.reason += "; it does not fit " + std::to_string(tried_below) + " GPU" + (tried_below == 1 ? "" : "s") + " (GPU " +
                  std::to_string(by_free.front().index) + ", the one with the most, has " + gib_text(by_free.front().memory_free_bytes) + " free)";
    }
    if (k < static_cast<int>(by_free.size())) {
      const SelectedGpu& next = by_free[static_cast<std::size_t>(k)];
      s.reason += "; GPU " + std::to_string(next.index) + ", the next, has " + gib_text(next.memory_free_bytes) + " free";
    }
    return s;
  }
  if (last_count == 0) {
    throw InputError("--auto-select: no count of the inventory's " + std::to_string(gpus.size()) +
                     " GPUs suits the plan's parallel shape (--tp × --pp, or the engine's shards)");
  }
  throw InputError("--auto-select: the plan does not fit even the " + std::to_string(last_count) +
                   " GPUs with the most free memory: " + last_why);
}

std::string cuda_architecture(const SelectedGpu& gpu) {
  if (gpu.compute_capability) {
    const std::string& cc = *gpu.compute_capability;
    const auto dot = cc.find('.');
    std::string arch = dot == std::string::npos ? cc : cc.substr(0, dot) + cc.substr(dot + 1);
    const bool digits = !arch.empty() && arch.size() <= 4 &&
                        std::all_of(arch.begin(), arch.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) {
      throw InputError("--inventory: GPU " + std::to_string(gpu.index) + " has compute_capability '" + one_line(cc) +
                       "'; expected e.g. \"9.0\"");
    }
    return arch;
  }
  if (const GpuModel* m = gpu_model_of(gpu.name)) return m->cuda_arch;
  throw InputError("--inventory: GPU " + std::to_string(gpu.index) + " (" + one_line(gpu.name) +
                   ") has no compute_capability and plexus does not know its CUDA architecture: give an inventory from "
                   "the target host (`plexus detect --json > inventory.json` there, with the NVIDIA driver loaded)");
}

std::vector<std::string> cuda_architectures(const std::vector<SelectedGpu>& gpus) {
  std::set<int> archs;
  for (const SelectedGpu& g : gpus) archs.insert(std::stoi(cuda_architecture(g)));
  std::vector<std::string> out;
  for (int a : archs) out.push_back(std::to_string(a));
  return out;
}

}  // namespace plexus::deploy
