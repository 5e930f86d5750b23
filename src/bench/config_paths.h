// The dotted key paths a benchmark configuration accepts ("backend.device_ids"), for --set and
// sweep keys, and the nearest known name for "did you mean" hints.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace plexus::bench {

// Every settable path; "backend.max_memory.*" takes any device name after it.
const std::vector<std::string>& known_config_paths();

// The other spelling of a renamed key ("scenario.batch_size" for "scenario.max_sequences" and back;
// backend.micro_batch and backend.micro_batches), or "" for a key with one name. --set and sweep
// values replace the other spelling where the file used it.
std::string other_spelling(const std::string& path);

// Whether `path` names a settable key (a leaf, or a whole section such as "backend").
bool is_known_config_path(const std::string& path);

// The candidate closest to `key` by edit distance (at most 1/3 of its length, at least 2), or "".
std::string nearest_key(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace plexus::bench
