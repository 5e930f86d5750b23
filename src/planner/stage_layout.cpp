// Device map -> per-module places -> stages.
#include "planner/stage_layout.h"

#include <optional>

#include "core/error.h"
#include "planner/moe_reads.h"

namespace plexus {

namespace {

std::string device_name(int d) { return d == kHostDevice ? std::string("host") : "device " + std::to_string(d); }

const char* residence_name(Residence r) {
  switch (r) {
    case Residence::kDevice: return "device";
    case Residence::kHost: return "cpu";
    case Residence::kDisk: return "disk";
  }
  return "?";
}

// A module's device from the placement of its parameters; all must agree.
struct Target {
  std::optional<DeviceId> id;
  std::string module;
  void add(const DeviceId& d, const std::string& param) {
    if (id && !(*id == d)) {
      throw InputError("device map splits " + module + " across " + id->to_string() + " and " + d.to_string() +
                       " (at " + param + "): the executor runs each module on one device; map the whole module");
    }
    id = d;
  }
};

}  // namespace

bool StageLayout::streams() const {
  if (head.residence != Residence::kDevice) return true;
  for (const ModulePlace& p : layers)
    if (p.residence != Residence::kDevice) return true;
  return false;
}

StageLayout make_stage_layout(const ModuleTree& tree, const DeviceMap& map, int n_accelerators) {
  const int n_layers = tree.config().num_layers;
  // Model order: embedding, layers, head. model.norm travels with the head.
  std::vector<Target> targets(static_cast<std::size_t>(n_layers + 2));
  targets[0].module = "model.embed_tokens";
  for (int l = 0; l < n_layers; ++l) targets[static_cast<std::size_t>(l + 1)].module = ModuleTree::layer_prefix(l);
  targets.back().module = "lm_head";
  const ModelConfig& c = tree.config();
  // Per layer: its experts all on "cpu" (then left out of the layer's device), or not.
  std::vector<char> experts_on_cpu(static_cast<std::size_t>(n_layers), 0);
  const std::vector<DeviceMap::Entry> placement = expand_placement(map, tree);
  for (int l = 0; l < n_layers; ++l) experts_on_cpu[static_cast<std::size_t>(l)] = c.moe_layer(l);
  for (const DeviceMap::Entry& e : placement) {
    const ParamInfo* p = tree.find(e.first);
    if (is_expert_param(c, *p) && e.second.kind() != TargetKind::kCpu) experts_on_cpu[static_cast<std::size_t>(p->layer)] = 0;
  }
  for (const DeviceMap::Entry& e : placement) {
    const ParamInfo* p = tree.find(e.first);
    if (p->layer >= 0 && experts_on_cpu[static_cast<std::size_t>(p->layer)] && is_expert_param(c, *p)) continue;
    if (p->layer >= 0) targets[static_cast<std::size_t>(p->layer + 1)].add(e.second, e.first);
    else if (e.first.rfind("model.embed_tokens", 0) == 0) targets[0].add(e.second, e.first);
    else if (e.first.rfind("lm_head", 0) == 0) targets.back().add(e.second, e.first);
  }
  std::vector<ModulePlace> places(targets.size());
  std::vector<int> resident(targets.size(), kHostDevice);  // accelerator of modules kept on one
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const DeviceId& d = *targets[i].id;  // expand_placement covers every parameter
    switch (d.kind()) {
      case TargetKind::kAccelerator:
        if (d.ordinal() >= n_accelerators) {
          throw InputError("device map puts " + targets[i].module + " on device " + d.to_string() + " but the run has " +
                           std::to_string(n_accelerators) + " accelerator(s) (0.." + std::to_string(n_accelerators - 1) +
                           "): pass --virtual-devices N or budgets for it in --max-memory");
        }
        places[i] = {d.ordinal(), Residence::kDevice};
        resident[i] = d.ordinal();
        break;
      case TargetKind::kCpu: places[i].residence = Residence::kHost; break;
      case TargetKind::kDisk: places[i].residence = Residence::kDisk; break;
    }
  }
  // Offloaded modules compute on the nearest accelerator before them, else after them.
  for (std::size_t i = 0; i < places.size(); ++i) {
    if (places[i].residence == Residence::kDevice) continue;
    int d = kHostDevice;
    for (std::size_t j = i; j-- > 0;)
      if (resident[j] != kHostDevice) { d = resident[j]; break; }
    for (std::size_t j = i + 1; d == kHostDevice && j < places.size(); ++j)
      if (resident[j] != kHostDevice) d = resident[j];
    if (d == kHostDevice && n_accelerators > 0) d = 0;
    places[i].device = d;
    // Without accelerators the host computes, and host memory is its own: "cpu" modules are
    // read where they are (the mmapped checkpoint), as accelerate runs device_map {"": "cpu"}.
    if (d == kHostDevice && places[i].residence == Residence::kHost) places[i].residence = Residence::kDevice;
  }
  for (int l = 0; l < n_layers; ++l) {
    ModulePlace& p = places[static_cast<std::size_t>(l + 1)];
    p.host_experts = experts_on_cpu[static_cast<std::size_t>(l)] && p.residence == Residence::kDevice && p.device != kHostDevice;
  }
  StageLayout layout;
  layout.embed = places.front();
  layout.head = places.back();
  layout.layers.assign(places.begin() + 1, places.end() - 1);
  for (std::size_t i = 0; i < places.size(); ++i) {
    if (layout.stages.empty() || layout.stages.back().device != places[i].device) {
      Stage s;
      s.device = places[i].device;
      s.first_layer = s.end_layer = i == 0 ? 0 : static_cast<int>(i) - 1;
      if (i == places.size() - 1) s.first_layer = s.end_layer = n_layers;
      layout.stages.push_back(s);
    }
    Stage& s = layout.stages.back();
    if (i == 0) s.embed = true;
    else if (i == places.size() - 1) s.head = true;
    else s.end_layer = static_cast<int>(i);
  }
  return layout;
}

std::string describe_layout(const StageLayout& layout) {
  std::string out;
  for (std::size_t k = 0; k < layout.stages.size(); ++k) {
    const Stage& s = layout.stages[k];
    std::string parts;
    auto add = [&](const std::string& p) { parts += (parts.empty() ? "" : ", ") + p; };
    if (s.embed) add(std::string("embedding") + (layout.embed.residence == Residence::kDevice ? "" : std::string(" (rows read from ") + residence_name(layout.embed.residence) + ")"));
    if (s.n_layers() > 0) {
      std::string layers = s.n_layers() == 1 ? "layer " + std::to_string(s.first_layer)
                                             : "layers " + std::to_string(s.first_layer) + "-" + std::to_string(s.end_layer - 1);
      int streamed = 0;
      for (int l = s.first_layer; l < s.end_layer; ++l)
        streamed += layout.layers[static_cast<std::size_t>(l)].residence != Residence::kDevice;
      if (streamed > 0) layers += " (" + std::to_string(streamed) + " streamed from cpu/disk)";
      std::vector<int> host;
      for (int l = s.first_layer; l < s.end_layer; ++l)
        if (layout.layers[static_cast<std::size_t>(l)].host_experts) host.push_back(l);
      if (!host.empty()) layers += " (experts of " + std::to_string(host.size()) + " computed on the host)";
      add(layers);
    }
    if (s.head) add(std::string("head") + (layout.head.residence == Residence::kDevice ? "" : std::string(" (streamed from ") + residence_name(layout.head.residence) + ")"));
    out += "stage " + std::to_string(k) + "  " + device_name(s.device) + ": " + parts + "\n";
  }
  return out;
}

}  // namespace plexus
