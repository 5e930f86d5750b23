// Which devices a command runs on: `--virtual-devices N` / PLEXUS_VIRTUAL_DEVICES splits the
// host, `--virtual-device-memory SIZE` / PLEXUS_VIRTUAL_DEVICE_MEMORY sets each budget,
// `--virtual-gpus N` / PLEXUS_VIRTUAL_GPUS splits physical GPU 0 into N CUDA devices, and
// PLEXUS_NVML_LIBRARY / PLEXUS_ROCM_SMI_LIBRARY override where GPU libraries are loaded from.
#pragma once
#include <cstdint>
#include <string>

#include "backend/device_registry.h"
#include "core/args.h"

namespace plexus {

struct DeviceOptions {
  int virtual_devices = 0;                 // 0: real devices
  std::uint64_t virtual_device_memory = 0;  // per virtual device; 0: host available memory / N
  int virtual_gpus = 0;                     // N > 0: GPU 0 split into cuda:0..cuda:N-1
  std::string nvml_library;                 // "": the system's libnvidia-ml.so.1
  std::string rocm_smi_library;             // "": the system's librocm_smi64.so
};

// Declares --virtual-devices, --virtual-device-memory and --virtual-gpus on a command.
void add_device_options(Args& args);
// Declares --virtual-gpus alone (for commands that declare --virtual-devices themselves).
void add_virtual_gpus_option(Args& args);
// --virtual-gpus N, else PLEXUS_VIRTUAL_GPUS=N (read here), else 0. N is 1..1024; InputError
// naming the flag or variable otherwise. `args` must have the option declared.
int virtual_gpus_from(const Args& args);

// Flags first, then the environment variables above (read here, explicitly, once). Throws
// InputError naming the flag or variable on a bad value, or when virtual devices and virtual
// GPUs are both asked for.
DeviceOptions device_options_from(const Args& args);
// The environment alone, for commands without the device flags.
DeviceOptions device_options_from_env();

// Virtual devices when asked for (plus the host), virtual GPUs (CUDA devices on GPU 0, 1/N of its
// free memory each; InputError naming why without a GPU), otherwise the host alone.
DeviceRegistry make_registry(const DeviceOptions& options);

}  // namespace plexus
