// Each engine's server command with the plan's numbers.
#include "deploy/engine_command.h"

#include <cmath>
#include <cstdio>

namespace plexus::deploy {

namespace {

std::string fraction_text(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", f);
  return buf;
}

}  // namespace

std::vector<std::string> plan_flags(const DeploySpec& spec) {
  const PlanNumbers& p = spec.plan;
  switch (spec.api_type) {
    case ApiType::kPlexus: return p.plexus_plan_args;
    case ApiType::kVllm:
      return {"--tensor-parallel-size", std::to_string(p.tensor_parallel),
              "--pipeline-parallel-size", std::to_string(p.pipeline_parallel),
              "--max-model-len", std::to_string(p.context),
              "--gpu-memory-utilization", fraction_text(p.gpu_memory_utilization)};
    case ApiType::kTgi:
      return {"--num-shard", std::to_string(p.tensor_parallel), "--max-total-tokens", std::to_string(p.context),
              "--max-input-tokens", std::to_string(p.context > 1 ? p.context - 1 : 1)};
    case ApiType::kTei: return {};
  }
  return {};
}

std::vector<std::string> server_command(const DeploySpec& spec, const std::string& model_path) {
  const std::string port = std::to_string(spec.port);
  std::vector<std::string> argv;
  switch (spec.api_type) {
    case ApiType::kPlexus:
      argv = {"plexus", "serve", model_path, "--host", "0.0.0.0", "--port", port, "--served-model-name", spec.model_name,
              "--max-sequences", std::to_string(spec.plan.max_sequences)};
      break;
    case ApiType::kVllm:
      argv = {"vllm", "serve", model_path, "--host", "0.0.0.0", "--port", port, "--served-model-name", spec.model_name};
      break;
    case ApiType::kTgi:
      argv = {"text-generation-launcher", "--model-id", model_path, "--hostname", "0.0.0.0", "--port", port};
      break;
    case ApiType::kTei:
      argv = {"text-embeddings-router", "--model-id", model_path, "--hostname", "0.0.0.0", "--port", port};
      break;
  }
  const std::vector<std::string> flags = plan_flags(spec);
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

std::string shell_quote(const std::string& word) {
  bool safe = !word.empty();
  for (char c : word) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("_./:=,@%+-").find(c) != std::string_view::npos;
    if (!ok) safe = false;
  }
  if (safe) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

}  // namespace plexus::deploy
