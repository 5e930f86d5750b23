// accelerate's balanced budgets and greedy device-map inference, written against SizedTree.
// The order of modules, the >= / <= comparisons and the moments when the reserved "largest
// layer" is recomputed all follow accelerate, because placements must match it exactly.
#include "planner/accelerate_planner.h"

#include <algorithm>
#include <cstdint>
#include <set>

namespace plexus {
namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0 && s.size() >= p.size(); }
bool contains(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

// Largest "layer" among `items`: a module with no child modules, or a decoder layer; modules
// with children are looked into, depth first. Returns the size and the names reaching it.
void max_layer_scan(const SizedTree& t, int item, std::int64_t* best, std::vector<std::string>* names) {
  const SizedNode& n = t.node(item);
  if (n.is_tensor || n.children.empty() || n.no_split) {
    const std::int64_t s = n.bytes;
    if (s > *best) {
      *best = s;
      names->assign(1, n.name);
    } else if (s == *best) {
      names->push_back(n.name);
    }
    return;
  }
  for (int c : n.children) max_layer_scan(t, c, best, names);
}

std::int64_t max_layer(const SizedTree& t, const std::vector<int>& items, bool modules_only,
                       std::vector<std::string>* names) {
  std::int64_t best = 0;
  names->clear();
  for (int i : items) {
    if (modules_only && t.node(i).is_tensor) continue;
    max_layer_scan(t, i, &best, names);
  }
  return best;
}

// A module's direct parameters/buffers followed by its child modules: what replaces it when split.
std::vector<int> split_children(const SizedTree& t, int item) {
  const SizedNode& n = t.node(item);
  std::vector<int> out;
  for (int p : n.tensors) {
    if (!t.node(p).is_buffer) out.push_back(p);
  }
  out.insert(out.end(), n.children.begin(), n.children.end());
  return out;
}

struct Ties {
  std::int64_t size_with_ties = 0;
  std::vector<int> modules;  // the queued modules holding the tied parameters
};

// The size of `item` plus the modules (still queued) that hold parameters tied to it.
Ties size_with_ties(const SizedTree& t, const std::vector<std::string>& tied_params, std::int64_t module_size,
                    const std::vector<int>& queue) {
  Ties r;
  r.size_with_ties = module_size;
  for (const std::string& tp : tied_params) {
    for (int q : queue) {
      if (starts_with(tp, t.node(q).name + ".")) {
        r.modules.push_back(q);
        r.size_with_ties += t.node(q).bytes - t.size_of(tp);
        break;
      }
    }
  }
  return r;
}

void clean_rec(DeviceMap& map, const std::string& module_name) {
  const std::string prefix = module_name.empty() ? "" : module_name + ".";
  std::vector<std::string> keys;
  std::set<std::string> distinct;
  DeviceId first = DeviceId::disk();
  for (const auto& [k, v] : map.entries()) {
    if (!starts_with(k, prefix)) continue;
    if (keys.empty()) first = v;
    keys.push_back(k);
    distinct.insert(v.to_string());
  }
  if (distinct.size() == 1 && keys.size() > 1) {
    for (const std::string& k : keys) map.erase(k);
    map.set(module_name, first);
  }
  std::size_t depth = 1;
  if (!module_name.empty()) depth = static_cast<std::size_t>(std::count(module_name.begin(), module_name.end(), '.')) + 2;
  std::vector<std::string> children;
  for (const auto& [k, v] : map.entries()) {
    if (!starts_with(k, prefix) || k.size() <= module_name.size()) continue;
    // the first `depth` dotted components of k
    std::size_t pos = std::string::npos, from = 0;
    for (std::size_t d = 0; d < depth; ++d) {
      pos = k.find('.', from);
      if (pos == std::string::npos) break;
      from = pos + 1;
    }
    const std::string child = pos == std::string::npos ? k : k.substr(0, pos);
    if (std::find(children.begin(), children.end(), child) == children.end()) children.push_back(child);
  }
  for (const std::string& c : children) clean_rec(map, c);
}

}  // namespace

Budgets accelerate_balanced_memory(const SizedTree& tree, const Budgets& max_memory, bool low_zero, bool user_set) {
  Budgets out = max_memory;
  std::vector<int> gpus;  // ordinals with a positive budget, sorted
  for (const DeviceBudget& b : out.list()) {
    if (b.device.is_accelerator() && b.bytes > 0) gpus.push_back(b.device.ordinal());
  }
  const std::int64_t num_devices = static_cast<std::int64_t>(gpus.size());
  if (num_devices == 0) return out;
  if (num_devices == 1) {
    low_zero = false;
    if (!user_set) {
      const DeviceId d = DeviceId::accelerator(gpus[0]);
      out.set(d, static_cast<std::uint64_t>(static_cast<double>(*out.get(d)) * 0.9));
    }
  }
  const std::int64_t total = tree.total_bytes();
  std::int64_t per_gpu = total / (low_zero ? num_devices - 1 : num_devices);

  // Margin: the larger of the first decoder layer and the mean size of the leaf modules.
  std::int64_t no_split = 0;
  if (!tree.layer_nodes().empty()) no_split = tree.node(tree.layer_nodes().front()).bytes;
  double leaf_sum = 0;
  std::int64_t leaf_count = 0;
  for (const SizedNode& n : tree.nodes()) {
    if (n.is_tensor || !n.counted || n.name.empty()) continue;
    bool has_module_child = false;
    for (int c : n.children) has_module_child = has_module_child || tree.node(c).counted;
    if (has_module_child) continue;
    leaf_sum += static_cast<double>(n.bytes);
    ++leaf_count;
  }
  const std::int64_t mean_leaves = static_cast<std::int64_t>(leaf_sum / static_cast<double>(std::max<std::int64_t>(leaf_count, 1)));
  const std::int64_t margin = static_cast<std::int64_t>(1.25 * static_cast<double>(std::max(no_split, mean_leaves)));
  per_gpu += margin;

  const auto budget_of = [&out](int ordinal) -> std::int64_t {
    const auto b = out.get(DeviceId::accelerator(ordinal));
    return b ? static_cast<std::int64_t>(*b) : 0;
  };
  for (std::size_t i = 0; i + 1 < gpus.size(); ++i) {
    const int idx = gpus[i];
    const std::int64_t cap = (low_zero && idx == 0) ? budget_of(0) : per_gpu;
    out.set(DeviceId::accelerator(idx), static_cast<std::uint64_t>(std::min(cap, budget_of(idx))));
  }
  if (low_zero && out.has(DeviceId::accelerator(0))) {
    std::int64_t others = 0;
    for (int i = 1; i < num_devices; ++i) others += budget_of(i);
    const std::int64_t min_zero = std::max<std::int64_t>(0, total - others);
    out.set(DeviceId::accelerator(0), static_cast<std::uint64_t>(std::min(min_zero, budget_of(0))));
  }
  return out;
}

DeviceMap accelerate_infer_device_map(const SizedTree& t, const Budgets& max_memory, std::vector<std::string>* trace) {
  std::vector<DeviceId> devices;
  std::vector<std::int64_t> limit;  // per device; disk unbounded
  for (const DeviceBudget& b : max_memory.list()) {
    devices.push_back(b.device);
    limit.push_back(static_cast<std::int64_t>(b.bytes));
  }
  if (!max_memory.has(DeviceId::disk())) {
    devices.push_back(DeviceId::disk());
    limit.push_back(0);
  }
  // Devices that keep room to bring back the largest offloaded layer: the first accelerator and cpu.
  std::vector<DeviceId> main_devices;
  for (const DeviceId& d : devices) {
    if (d.is_accelerator()) {
      main_devices.push_back(d);
      break;
    }
  }
  main_devices.push_back(DeviceId::cpu());
  const auto is_main = [&](const DeviceId& d) {
    return std::find(main_devices.begin(), main_devices.end(), d) != main_devices.end();
  };

  std::vector<int> queue = split_children(t, SizedTree::kRoot);
  for (int b : t.node(SizedTree::kRoot).tensors) {
    if (t.node(b).is_buffer) queue.push_back(b);
  }
  std::vector<std::int64_t> used(devices.size(), 0);
  DeviceMap map;
  std::size_t current = 0;
  std::vector<std::string> max_names;
  std::int64_t max_size = max_layer(t, queue, false, &max_names);
  const auto& tied_groups = t.tied_groups();
  const auto log = [&](const std::string& s) {
    if (trace) trace->push_back(s);
  };

  while (!queue.empty()) {
    const int item = queue.front();
    queue.erase(queue.begin());
    const std::string& name = t.node(item).name;
    max_names.erase(std::remove_if(max_names.begin(), max_names.end(),
                                   [&](const std::string& n) { return n == name || starts_with(n, name + "."); }),
                    max_names.end());
    if (max_names.empty()) max_size = max_layer(t, queue, true, &max_names);
    const std::int64_t module_size = t.node(item).bytes;

    // Parameters tied to one inside this module but living outside it.
    std::vector<std::string> tied_params;
    const std::string dotted = name + ".";
    for (const auto& g : tied_groups) {
      bool any = false, all = true;
      for (const std::string& k : g) {
        const bool in = contains(k + ".", dotted);
        any = any || in;
        all = all && in;
      }
      if (!any || all) continue;
      for (const std::string& k : g) {
        if (!contains(k + ".", dotted)) tied_params.push_back(k);
      }
    }

    const DeviceId device = devices[current];
    const bool unbounded = device.kind() == TargetKind::kDisk;
    std::int64_t max_here = limit[current];
    std::int64_t reserved = 0;
    if (is_main(device)) {
      max_here -= max_size;
      reserved = max_size;
    }
    const Ties ties = size_with_ties(t, tied_params, module_size, queue);

    if (unbounded || used[current] + ties.size_with_ties <= max_here) {
      used[current] += ties.size_with_ties;
      map.set(name, device);
      for (int tm : ties.modules) {
        auto it = std::find(queue.begin(), queue.end(), tm);
        if (it != queue.end()) queue.erase(it);
        map.set(t.node(tm).name, device);
      }
      log("put " + name + " on " + device.to_string());
      continue;
    }

    if (!tied_params.empty() && used[current] + module_size <= max_here) {
      bool split = false;
      for (int tm : ties.modules) {
        const SizedNode& tn = t.node(tm);
        if (tn.children.empty() || tn.no_split) continue;
        std::vector<int> next{item};
        auto pos = std::find(queue.begin(), queue.end(), tm);
        next.insert(next.end(), queue.begin(), pos);
        const std::vector<int> kids = split_children(t, tm);
        next.insert(next.end(), kids.begin(), kids.end());
        if (pos != queue.end()) next.insert(next.end(), pos + 1, queue.end());
        queue = std::move(next);
        max_size = max_layer(t, queue, true, &max_names);
        split = true;
        log("split tied " + tn.name);
        break;
      }
      if (split) continue;
    }

    if (used[current] + module_size >= max_here) {
      const SizedNode& n = t.node(item);
      if (!n.is_tensor && !n.children.empty() && !n.no_split) {
        std::vector<int> next = split_children(t, item);
        next.insert(next.end(), queue.begin(), queue.end());
        queue = std::move(next);
        max_size = max_layer(t, queue, true, &max_names);
        log("split " + name);
        continue;
      }
    }

    // Neither fits nor splits: the next device.
    used[current] += reserved;
    log(name + " does not fit on " + device.to_string() + ", next device");
    ++current;
    queue.insert(queue.begin(), item);
  }
  return accelerate_clean_device_map(map);
}

DeviceMap accelerate_clean_device_map(const DeviceMap& map) {
  DeviceMap out = map;
  clean_rec(out, "");
  return out;
}

}  // namespace plexus
