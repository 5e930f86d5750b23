// Flag and environment parsing for device selection.
#include "backend/device_options.h"

#include <cstdlib>

#include "backend/cuda_availability.h"
#include "backend/detect.h"
#include "backend/host_info.h"
#include "core/error.h"
#include "core/units.h"

namespace plexus {

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

int parse_count(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0 || value > 1024)
    throw InputError(where + " must be a whole number of devices between 0 and 1024, got '" + text + "'");
  return static_cast<int>(value);
}

}  // namespace

void add_device_options(Args& args) {
  args.option("--virtual-devices", "N",
              "split the CPU into N virtual devices 0..N-1 (also PLEXUS_VIRTUAL_DEVICES)");
  args.option("--virtual-device-memory", "SIZE",
              "memory budget of each virtual device, e.g. 4GiB (also PLEXUS_VIRTUAL_DEVICE_MEMORY; "
              "default: available host memory / N)");
  add_virtual_gpus_option(args);
}

void add_virtual_gpus_option(Args& args) {
  args.option("--virtual-gpus", "N",
              "split GPU 0 into N CUDA devices cuda:0..cuda:N-1, each with 1/N of its free memory unless "
              "--max-memory says (also PLEXUS_VIRTUAL_GPUS)");
}

int virtual_gpus_from(const Args& args) {
  std::string text;
  std::string where = "--virtual-gpus";
  if (auto flag = args.get_optional("--virtual-gpus")) {
    text = *flag;
  } else {
    text = env_or_empty("PLEXUS_VIRTUAL_GPUS");
    where = "PLEXUS_VIRTUAL_GPUS";
    if (text.empty()) return 0;
  }
  const int n = parse_count(text, where);
  if (n < 1 && where == "--virtual-gpus")  // PLEXUS_VIRTUAL_GPUS=0 is "none", as PLEXUS_VIRTUAL_DEVICES=0
    throw InputError("--virtual-gpus must be at least 1 (the number of CUDA devices GPU 0 is split into), got '" + text + "'");
  return n;
}

DeviceOptions device_options_from_env() {
  Args none("", "");
  add_device_options(none);
  none.parse(std::vector<std::string>{});
  return device_options_from(none);
}

DeviceOptions device_options_from(const Args& args) {
  DeviceOptions options;
  if (auto flag = args.get_optional("--virtual-devices")) {
    options.virtual_devices = parse_count(*flag, "--virtual-devices");
  } else if (std::string env = env_or_empty("PLEXUS_VIRTUAL_DEVICES"); !env.empty()) {
    options.virtual_devices = parse_count(env, "PLEXUS_VIRTUAL_DEVICES");
  }
  std::string memory;
  std::string where = "--virtual-device-memory";
  if (auto flag = args.get_optional("--virtual-device-memory")) {
    memory = *flag;
  } else {
    memory = env_or_empty("PLEXUS_VIRTUAL_DEVICE_MEMORY");
    where = "PLEXUS_VIRTUAL_DEVICE_MEMORY";
  }
  if (!memory.empty()) {
    try {
      options.virtual_device_memory = parse_memory_size(memory);
    } catch (const InputError& e) {
      throw InputError(where + ": " + e.what());
    }
    if (options.virtual_device_memory == 0) throw InputError(where + " must be more than 0 bytes");
  }
  options.virtual_gpus = virtual_gpus_from(args);
  // A flag wins over the other kind's environment variable; two flags or two variables conflict.
  const bool devices_flag = args.get_optional("--virtual-devices").has_value();
  const bool gpus_flag = args.get_optional("--virtual-gpus").has_value();
  if (devices_flag && !gpus_flag) options.virtual_gpus = 0;
  if (gpus_flag && !devices_flag) options.virtual_devices = 0;
  if (options.virtual_gpus > 0 && options.virtual_devices > 0) {
    throw InputError("virtual devices (--virtual-devices / PLEXUS_VIRTUAL_DEVICES) split the CPU and virtual GPUs "
                     "(--virtual-gpus / PLEXUS_VIRTUAL_GPUS) split GPU 0: ask for one of them");
  }
  options.nvml_library = env_or_empty("PLEXUS_NVML_LIBRARY");
  options.rocm_smi_library = env_or_empty("PLEXUS_ROCM_SMI_LIBRARY");
  return options;
}

DeviceRegistry make_registry(const DeviceOptions& options) {
  if (options.virtual_gpus > 0) {
    // InputError naming why when there is no GPU to split.
    const Inventory split = virtual_gpus_inventory(options.virtual_gpus, probe_cuda(CudaFreeMemory::kGpu0), read_host_info());
    DeviceRegistry registry = make_host_registry();
    for (const DeviceInfo& d : split.devices)
      registry.add_accelerator(make_cuda_device(d.index, *d.virtual_on_gpu, *d.memory_total_bytes));
    return registry;
  }
  if (options.virtual_devices <= 0) return make_host_registry();
  if (options.virtual_device_memory > 0)
    return make_virtual_devices(options.virtual_devices, options.virtual_device_memory);
  return make_virtual_devices_sharing(options.virtual_devices, read_host_info().memory_available_bytes);
}

}  // namespace plexus
