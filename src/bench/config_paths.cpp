// The settable key paths of a benchmark configuration and "did you mean" by edit distance.
#include "bench/config_paths.h"

#include <algorithm>

namespace plexus::bench {

const std::vector<std::string>& known_config_paths() {
  static const std::vector<std::string> kPaths = {
      "name", "model",
      "model_make", "model_make.preset", "model_make.arch", "model_make.dtype", "model_make.seed", "model_make.tokenizer",
      "backend", "backend.type", "backend.device_ids", "backend.virtual_devices", "backend.device_map",
      "backend.max_memory", "backend.max_memory.*", "backend.dtype", "backend.threads", "backend.context",
      "backend.micro_batches",
      "scenario", "scenario.dataset", "scenario.prompts", "scenario.prompts_ids", "scenario.num_samples",
      "scenario.batch_size", "scenario.max_new_tokens", "scenario.warmup_samples", "scenario.seed",
      "scenario.temperature", "scenario.ignore_eos",
      "monitor", "monitor.interval_ms", "monitor.idle_baseline_s",
      "output", "output.dir", "output.formats"};
  return kPaths;
}

bool is_known_config_path(const std::string& path) {
  for (const std::string& p : known_config_paths()) {
    if (p == path) return true;
    if (p.size() > 2 && p.compare(p.size() - 2, 2, ".*") == 0) {
      const std::string prefix = p.substr(0, p.size() - 1);  // "backend.max_memory."
      if (path.size() > prefix.size() && path.rfind(prefix, 0) == 0 && path.find('.', prefix.size()) == std::string::npos) {
        return true;
      }
    }
  }
  return false;
}

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest_key(const std::string& key, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(2, key.size() / 3);
  std::string best;
  std::size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    if (c.find('*') != std::string::npos) continue;
    // A known key that starts with what was typed ("scenario.batch") counts as one edit away.
    const std::size_t d = key.size() >= 3 && c.rfind(key, 0) == 0 ? 1 : edit_distance(key, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

}  // namespace plexus::bench
