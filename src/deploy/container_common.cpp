// Container command per engine image, health check numbers, Docker size text.
#include "deploy/container_common.h"

#include "deploy/engine_command.h"

namespace plexus::deploy {

ContainerCommand container_command(const DeploySpec& spec) {
  const std::vector<std::string> argv = server_command(spec, spec.model_mount);
  ContainerCommand c;
  switch (spec.api_type) {
    case ApiType::kPlexus: break;  // ENTRYPOINT ["plexus"]: args start at "serve"
    case ApiType::kVllm: c.entrypoint = "vllm"; break;
    case ApiType::kTgi: break;
    case ApiType::kTei: break;
  }
  c.args.assign(argv.begin() + 1, argv.end());  // argv[0], the program, is the entrypoint's
  return c;
}

std::string health_url(const DeploySpec& spec) {
  return "http://localhost:" + std::to_string(spec.port) + kHealthPath;
}

std::vector<std::string> health_probe(const DeploySpec& spec) {
  switch (spec.api_type) {
    case ApiType::kPlexus:
    case ApiType::kVllm:
    case ApiType::kTgi: return {"curl", "-fsS", health_url(spec)};
    case ApiType::kTei: break;
  }
  const std::string request = std::string("GET ") + kHealthPath + " HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n";
  return {"bash", "-c",
          "exec 3<>/dev/tcp/localhost/" + std::to_string(spec.port) + " && printf \"" + request +
              "\" >&3 && head -n 1 <&3 | grep -q \" 200 \""};
}

int health_start_period_s(const DeploySpec& spec) {
  const std::int64_t read_s = (spec.plan.model_bytes + 199'999'999) / 200'000'000;
  const std::int64_t total = 60 + read_s;
  return static_cast<int>((total + 9) / 10 * 10);
}

std::string docker_size(std::int64_t bytes) {
  constexpr std::int64_t kMiB = 1LL << 20;
  constexpr std::int64_t kGiB = 1LL << 30;
  if (bytes > 0 && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "g";
  if (bytes > 0 && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "m";
  return std::to_string(bytes);
}

std::vector<std::string> gpu_device_ids(const DeploySpec& spec) {
  std::vector<std::string> ids;
  for (const SelectedGpu& g : spec.devices.gpus) ids.push_back(std::to_string(g.index));
  return ids;
}

std::string gpu_device_list(const DeploySpec& spec) {
  std::string out;
  for (const std::string& id : gpu_device_ids(spec)) out += (out.empty() ? "" : ",") + id;
  return out;
}

std::string plexus_dockerignore() {
  return "# Build context of the plexus image (the plexus source tree): leave out build trees and git.\n"
         ".git\n"
         "build\n"
         "build-*\n"
         "**/node_modules\n"
         "**/__pycache__\n";
}

}  // namespace plexus::deploy
