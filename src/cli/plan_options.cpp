// Planning options: budgets from --max-memory, --virtual-devices or the detected devices and
// host, and model loading.
#include "cli/plan_options.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/detect.h"
#include "core/error.h"
#include "model/checkpoint.h"
#include "model/config.h"

namespace plexus::cli {

void add_plan_options(Args& args) {
  args.option("--strategy", "S", "stages (plexus) | sequential | balanced | balanced_low_0 | auto (accelerate)", "stages")
      .option("--dtype", "D", "float32 | bfloat16 | float16 | int8 | int4 (default: the config's torch_dtype, else bfloat16)")
      .option("--max-memory", "LIST", "budgets as accelerate writes them, e.g. \"0=10GiB,1=10GiB,cpu=64GiB\"; devices may be hypothetical")
      .option("--devices", "LIST", "accelerator ordinals to use, e.g. 0,1 (default: all budgeted)")
      .option("--virtual-devices", "N", "plan for N accelerators that split the host's available memory equally")
      .option("--context", "N", "tokens of KV cache to keep room for per sequence (0: weights only)", "4096")
      .option("--batch", "N", "sequences decoded together (KV cache and activations scale with it)", "1")
      .flag("--offload-disk", "allow the stages strategy to offload weights to disk when cpu is full")
      .option("--device-map", "FILE", "check and report a custom device map (JSON: module prefix -> device)");
}

std::uint64_t host_available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  throw RuntimeError("cannot read MemAvailable from /proc/meminfo: pass budgets with --max-memory");
}

PlanOptions plan_options_from(const Args& args, const ModelConfig& config) {
  PlanOptions o;
  PlanRequest& r = o.request;
  r.strategy = parse_strategy_or_throw(args.get("--strategy"));
  if (auto d = args.get_optional("--dtype")) {
    r.dtype = parse_weight_dtype_or_throw(*d, "--dtype");
  } else {
    r.dtype = WeightDType::kBF16;
    if (config.torch_dtype) parse_weight_dtype(dtype_torch_name(*config.torch_dtype), &r.dtype);
  }
  const long long context = args.get_int("--context"), batch = args.get_int("--batch");
  if (context < 0 || context > (1LL << 24)) throw InputError("--context must be between 0 and 16777216, got " + std::to_string(context));
  if (batch < 1 || batch > 65536) throw InputError("--batch must be between 1 and 65536, got " + std::to_string(batch));
  r.runtime.context = context;
  r.runtime.batch = batch;

  const auto max_memory = args.get_optional("--max-memory");
  const auto virtual_devices = args.get_optional("--virtual-devices");
  if (max_memory && virtual_devices) {
    throw InputError("--max-memory and --virtual-devices both set budgets: pass one of them");
  }
  if (max_memory) {
    r.budgets = parse_max_memory(*max_memory);
    o.budgets_source = "--max-memory";
  } else if (virtual_devices) {
    const long long n = args.get_int("--virtual-devices");
    if (n < 1 || n > 1024) throw InputError("--virtual-devices must be between 1 and 1024, got " + std::to_string(n));
    const std::uint64_t each = host_available_memory() / static_cast<std::uint64_t>(n);
    for (long long i = 0; i < n; ++i) r.budgets.set(DeviceId::accelerator(static_cast<int>(i)), each);
    o.budgets_source = std::to_string(n) + " virtual devices sharing the host's available memory";
    r.budgets_from_user = false;
  } else {
    // The hardware at hand: every detected accelerator with its free memory (NVML / ROCm SMI,
    // or PLEXUS_VIRTUAL_DEVICES), and the host's available memory for cpu offload.
    const Inventory inventory = detect_devices(device_options_from_env());
    for (const DeviceInfo& d : inventory.devices) {
      if (d.memory_free_bytes) r.budgets.set(DeviceId::accelerator(d.index), *d.memory_free_bytes);
    }
    r.budgets.set(DeviceId::cpu(), host_available_memory());
    o.budgets_source = r.budgets.accelerators().empty()
                           ? "host available memory (no accelerators detected)"
                           : "detected devices' free memory and the host's available memory";
    r.budgets_from_user = false;
  }
  if (auto list = args.get_optional("--devices")) {
    Budgets kept;
    for (long long ord : parse_int_list(*list, "--devices")) {
      const DeviceId d = DeviceId::accelerator(static_cast<int>(ord));
      const auto b = r.budgets.get(d);
      if (ord < 0 || !b) {
        std::string have;
        for (const DeviceId& a : r.budgets.accelerators()) have += (have.empty() ? "" : ",") + a.to_string();
        throw InputError("--devices: device " + std::to_string(ord) + " has no budget (accelerators: " +
                         (have.empty() ? std::string("none") : have) +
                         "); name it in --max-memory or use --virtual-devices N");
      }
      kept.set(d, *b);
    }
    for (const DeviceBudget& b : r.budgets.list()) {
      if (!b.device.is_accelerator()) kept.set(b.device, b.bytes);
    }
    r.budgets = kept;
  }
  r.allow_disk = args.get_flag("--offload-disk") || r.budgets.has(DeviceId::disk());
  o.device_map_file = args.get_optional("--device-map");
  return o;
}

ModuleTree load_module_tree(const std::string& model) {
  namespace fs = std::filesystem;
  const ModelConfig config = load_model_config(model);
  if (fs::is_directory(model) && Checkpoint::exists_in(model)) {
    const Checkpoint checkpoint(model);
    return ModuleTree::from_checkpoint(config, checkpoint);
  }
  return ModuleTree::from_config(config);
}

}  // namespace plexus::cli
