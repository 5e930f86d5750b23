// The dotted key paths a benchmark configuration accepts ("backend.device_ids"), for --set and
// sweep keys, and the nearest known name for "did you mean" hints.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace plexus::bench {

// Every settable path; "backend.max_memory.*" takes any device name after it.
const std::vector<std::string>& known_config_paths();

// Whether `path` names a settable key (a leaf, or a whole section such as "backend").
bool is_known_config_path(const std::string& path);

// The candidate closest to `key` by edit distance (at most 1/3 of its length, at least 2), or "".
std::string nearest_key(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace plexus::bench
