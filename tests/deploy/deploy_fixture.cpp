#include "deploy/deploy_plan.h"  // kGiB
#include "deploy_fixture.h"

namespace plexus::deploy::testing {

DeploySpec example_spec(Target target, ApiType api_type) {
  DeploySpec s;
  s.target = target;
  s.api_type = api_type;
  s.model_path = "/srv/models/tiny-llama";
  s.model_name = "tiny-llama";
  s.app_name = "plexus-tiny-llama";
  s.model_mount = "/models/tiny-llama";
  s.image = default_image(api_type);
  s.port = 8080;
  s.env = {{"HF_HUB_OFFLINE", "1"}};
  for (int i = 0; i < 2; ++i) {
    s.devices.gpus.push_back({i, "NVIDIA H100 80GB HBM3", 80 * kGiB, 79 * kGiB, std::string("9.0")});
  }
  s.devices.reason = "GPUs 0,1 as --devices named them";
  s.gpus_per_node = 2;
  s.cpus = 16;
  s.cuda_architectures = {"90"};
  s.gpu_type = "h100";
  PlanNumbers& p = s.plan;
  p.summary = "stages over GPUs 0,1: 22 layers as 11 + 11, bfloat16, context 4096, 8 sequences";
  // plexus runs its own plan (stages over both GPUs); vLLM and TGI shard every layer over both.
  p.tensor_parallel = api_type == ApiType::kPlexus ? 1 : 2;
  p.pipeline_parallel = 1;
  p.context = 4096;
  p.max_sequences = 8;
  p.gpu_memory_utilization = 0.9;
  p.gpu_bytes_needed = 3 * kGiB;
  p.host_memory_bytes = 4 * kGiB;
  p.weights_bytes = 2 * kGiB;
  p.model_bytes = 2 * kGiB + kGiB / 2;
  p.shm_bytes = 16 * kGiB;
  p.plexus_plan_args = {"--dtype", "bfloat16", "--context", "4096"};
  return s;
}

DeploySpec example_cpu_spec(Target target) {
  DeploySpec s = example_spec(target, ApiType::kPlexus);
  s.devices.gpus.clear();
  s.devices.reason = "no GPU: computes on the host's CPUs";
  s.gpus_per_node = 0;
  s.cuda_architectures.clear();
  s.gpu_type.clear();
  s.plan.summary = "one CPU device: 22 layers, bfloat16, context 4096, 8 sequences";
  s.plan.tensor_parallel = 1;
  s.plan.gpu_bytes_needed = 0;
  s.plan.host_memory_bytes = 6 * kGiB;
  s.plan.plexus_plan_args = {"--dtype", "bfloat16", "--context", "4096"};
  return s;
}

}  // namespace plexus::deploy::testing
