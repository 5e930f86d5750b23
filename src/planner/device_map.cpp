// DeviceMap operations: lookup, JSON, expansion to parameters.
#include "planner/device_map.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "core/error.h"

namespace plexus {

bool prefix_covers(const std::string& prefix, const std::string& name) {
  if (prefix.empty()) return true;
  if (name.size() < prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  return name.size() == prefix.size() || name[prefix.size()] == '.';
}

void DeviceMap::set(const std::string& prefix, DeviceId device) {
  for (Entry& e : entries_) {
    if (e.first == prefix) {
      e.second = device;
      return;
    }
  }
  entries_.emplace_back(prefix, device);
}

void DeviceMap::erase(const std::string& prefix) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.first == prefix; }),
                 entries_.end());
}

std::optional<DeviceId> DeviceMap::get(const std::string& prefix) const {
  for (const Entry& e : entries_) {
    if (e.first == prefix) return e.second;
  }
  return std::nullopt;
}

std::optional<DeviceId> DeviceMap::device_of(const std::string& param) const {
  const Entry* best = nullptr;
  for (const Entry& e : entries_) {
    if (prefix_covers(e.first, param) && (best == nullptr || e.first.size() > best->first.size())) best = &e;
  }
  if (best == nullptr) return std::nullopt;
  return best->second;
}

DeviceMap DeviceMap::from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) {
    throw InputError(where + ": a device map must be a JSON object of module prefix → device, e.g. "
                             "{\"model.embed_tokens\": 0, \"model.layers.0\": 0, \"lm_head\": \"cpu\"}");
  }
  DeviceMap m;
  for (auto it = j.begin(); it != j.end(); ++it) {
    m.set(it.key(), DeviceId::from_json(it.value(), where + ": entry \"" + it.key() + "\""));
  }
  return m;
}

Json DeviceMap::to_json() const {
  Json j = Json::object();
  for (const Entry& e : entries_) j[e.first] = e.second.to_json();
  return j;
}

bool operator==(const DeviceMap& a, const DeviceMap& b) {
  if (a.entries_.size() != b.entries_.size()) return false;
  for (const DeviceMap::Entry& e : a.entries_) {
    const auto d = b.get(e.first);
    if (!d || !(*d == e.second)) return false;
  }
  return true;
}

std::vector<DeviceMap::Entry> expand_placement(const DeviceMap& map, const ModuleTree& tree) {
  // Longest dotted prefix first: look the name up, then each shorter prefix, then "".
  std::unordered_map<std::string, DeviceId> index;
  for (const DeviceMap::Entry& e : map.entries()) index.emplace(e.first, e.second);
  std::vector<DeviceMap::Entry> out;
  out.reserve(tree.params().size());
  for (const ParamInfo& p : tree.params()) {
    std::optional<DeviceId> d;
    std::string_view name = p.name;
    while (!d) {
      auto it = index.find(std::string(name));
      if (it != index.end()) {
        d = it->second;
        break;
      }
      if (name.empty()) break;
      const std::size_t dot = name.rfind('.');
      name = dot == std::string_view::npos ? std::string_view() : name.substr(0, dot);
    }
    if (!d) {
      throw InputError("device map gives no device for parameter '" + p.name + "': add an entry for '" + p.module +
                       "' or one of its parents");
    }
    out.emplace_back(p.name, *d);
  }
  return out;
}

Json placement_to_json(const std::vector<DeviceMap::Entry>& placement) {
  Json j = Json::object();
  for (const DeviceMap::Entry& e : placement) j[e.first] = e.second.to_json();
  return j;
}

DeviceMap load_device_map_file(const std::string& path) {
  const Json j = read_json_file(path);
  if (j.is_object() && j.contains("device_map") && j["device_map"].is_object()) {
    return DeviceMap::from_json(j["device_map"], path + ": field 'device_map'");
  }
  return DeviceMap::from_json(j, path);
}

}  // namespace plexus
