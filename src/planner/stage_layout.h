// From a device map to pipeline stages (pure, no device calls): which device computes each
// module (embedding, decoder layers, head), where its weights are kept, and the runs of
// consecutive modules on one device that form the stages.
#pragma once
#include <string>
#include <vector>

#include "model/module_tree.h"
#include "planner/device_map.h"

namespace plexus {

// Where a module's weights are kept between uses.
enum class Residence { kDevice, kHost, kDisk };  // on its computing device | host memory | mmapped file

constexpr int kHostDevice = -1;  // "compute on the host device" (no accelerators in the run)

struct ModulePlace {
  int device = kHostDevice;  // accelerator ordinal that computes it, or kHostDevice
  Residence residence = Residence::kDevice;
  // A mixture-of-experts layer kept on its accelerator whose experts the map puts on "cpu"
  // (--cpu-moe, --n-cpu-moe): they stay in host memory and the host computes them.
  bool host_experts = false;
};

// One stage: consecutive modules computed by one device.
struct Stage {
  int device = kHostDevice;
  bool embed = false;                   // the stage starts with the embedding lookup
  int first_layer = 0, end_layer = 0;   // decoder layers [first_layer, end_layer)
  bool head = false;                    // the stage ends with final norm + lm_head
  int n_layers() const { return end_layer - first_layer; }
};

struct StageLayout {
  ModulePlace embed, head;
  std::vector<ModulePlace> layers;  // (n_layer)
  std::vector<Stage> stages;        // in order: the embedding's first, the head's last
  bool streams() const;             // some layer or the head is kept off its computing device
};

// Modules mapped to an accelerator are computed there; modules mapped to "cpu" or "disk" are
// computed by the nearest accelerator before them in model order (else the nearest after,
// else accelerator 0). With no accelerators the host device computes every module, those on
// "cpu" resident (read in place in host memory), those on "disk" streamed. InputError when the
// map names an accelerator >= n_accelerators or splits a decoder layer across devices — except a
// mixture-of-experts layer's experts (planner/moe_reads.h experts_module) on "cpu": when the rest
// of the layer is kept on an accelerator, that layer's place says host_experts; elsewhere they
// travel with the layer.
StageLayout make_stage_layout(const ModuleTree& tree, const DeviceMap& map, int n_accelerators);

// "stage 0  device 0: embedding, layers 0-3 (2-3 streamed from cpu)" — one line per stage.
std::string describe_layout(const StageLayout& layout);

}  // namespace plexus
