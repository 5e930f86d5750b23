// A device map: module prefixes → devices, in accelerate's form ({"model.layers.3": 1,
// "lm_head": "cpu", "": 0}). A plain value type shared by the planner, the CLI and the executor.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "model/module_tree.h"
#include "planner/device_id.h"

namespace plexus {

class DeviceMap {
 public:
  using Entry = std::pair<std::string, DeviceId>;

  // Sets a prefix's device; a new prefix is appended, an existing one keeps its position.
  void set(const std::string& prefix, DeviceId device);
  void erase(const std::string& prefix);
  const std::vector<Entry>& entries() const { return entries_; }
  std::optional<DeviceId> get(const std::string& prefix) const;  // exact key
  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }

  // The device of a parameter: the entry that equals it or is a dotted prefix of it ("" matches
  // everything). With overlapping entries the longest wins; nullopt when none covers it.
  std::optional<DeviceId> device_of(const std::string& param) const;

  // {"prefix": 0 | "cpu" | "disk", …}; InputError naming `where` and the entry on bad input.
  static DeviceMap from_json(const Json& j, const std::string& where);
  Json to_json() const;

  // Same prefixes and devices, in any order.
  friend bool operator==(const DeviceMap& a, const DeviceMap& b);

 private:
  std::vector<Entry> entries_;
};

// True when `prefix` is "" or equals `name` or is a dotted prefix of it.
bool prefix_covers(const std::string& prefix, const std::string& name);

// Every parameter of the tree (tied ones under each name) with its device, in tree order.
// Throws InputError naming the first parameter no entry covers.
std::vector<DeviceMap::Entry> expand_placement(const DeviceMap& map, const ModuleTree& tree);
Json placement_to_json(const std::vector<DeviceMap::Entry>& placement);

// Reads FILE.json: either a device map object, or an object with a "device_map" field (as
// `plexus plan --json` writes).
DeviceMap load_device_map_file(const std::string& path);

}  // namespace plexus
