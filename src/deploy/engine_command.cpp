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

// A flag and its value as two words, or as one "--flag=VALUE" where the value starts with '-' (so
// that argparse, vLLM's parser, does not read the value as a flag).
std::vector<std::string> flag_value(const std::string& flag, const std::string& value) {
  if (!value.empty() && value.front() == '-') return {flag + "=" + value};
  return {flag, value};
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
      argv = {"plexus", "serve", model_path, "--host", "0.0.0.0", "--port", port};
      for (std::string& w : flag_value("--served-model-name", spec.model_name)) argv.push_back(std::move(w));
      argv.insert(argv.end(), {"--max-sequences", std::to_string(spec.plan.max_sequences)});
      break;
    case ApiType::kVllm:
      argv = {"vllm", "serve", model_path, "--host", "0.0.0.0", "--port", port};
      for (std::string& w : flag_value("--served-model-name", spec.model_name)) argv.push_back(std::move(w));
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

}  // namespace plexus::deploy
