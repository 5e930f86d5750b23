// The settable key paths of a benchmark configuration and "did you mean" by edit distance.
#include "bench/config_paths.h"

#include <utility>

#include "core/nearest_name.h"

namespace plexus::bench {

const std::vector<std::string>& known_config_paths() {
  static const std::vector<std::string> kPaths = {
      "name", "model", "revision",
      "model_make", "model_make.preset", "model_make.arch", "model_make.dtype", "model_make.seed", "model_make.tokenizer",
      "backend", "backend.type", "backend.device_ids", "backend.virtual_devices", "backend.device_map",
      "backend.max_memory", "backend.max_memory.*", "backend.dtype", "backend.quantize", "backend.threads", "backend.wait", "backend.context",
      "backend.micro_batch", "backend.micro_batches", "backend.tensor_parallel", "backend.pipeline_parallel",
      "backend.expert_parallel",
      "backend.cpu_moe", "backend.n_cpu_moe",
      "backend.url", "backend.model", "backend.api_key", "backend.endpoint", "backend.tokenizer", "backend.timeout_s",  // type openai
      "scenario.concurrency", "scenario.request_rate", "scenario.burstiness", "scenario.random", "scenario.random.input_tokens",
      "scenario.random.output_tokens", "scenario.random.range_ratio", "scenario.random.distribution", "scenario.slo",
      "scenario.slo.ttft_ms", "scenario.slo.tpot_ms", "scenario.slo.e2e_ms",
      "scenario", "scenario.dataset", "scenario.prompts", "scenario.prompts_ids", "scenario.num_samples",
      "scenario.max_sequences", "scenario.batch_size", "scenario.max_tokens", "scenario.max_new_tokens",
      "scenario.warmup_samples", "scenario.seed",
      "scenario.temperature", "scenario.ignore_eos",
      "monitor", "monitor.interval_ms", "monitor.idle_baseline_s",
      "output", "output.dir", "output.formats"};
  return kPaths;
}

std::string other_spelling(const std::string& path) {
  static const std::pair<const char*, const char*> kRenamed[] = {{"scenario.max_sequences", "scenario.batch_size"},
                                                                 {"scenario.max_tokens", "scenario.max_new_tokens"},
                                                                 {"backend.micro_batch", "backend.micro_batches"}};
  for (const auto& [name, old] : kRenamed) {
    if (path == name) return old;
    if (path == old) return name;
  }
  return "";
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

std::string nearest_key(const std::string& key, const std::vector<std::string>& candidates) {
  return nearest_name(key, candidates);
}

}  // namespace plexus::bench
