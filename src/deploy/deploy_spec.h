// What `plexus deploy` generates files from: the target, the engine that serves (plexus or
// another server's image), the devices, and the numbers the plan decided. Plain values; the
// generators (docker.h, compose.h, kubernetes.h, slurm.h) are pure functions of a DeploySpec.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plexus::deploy {

enum class Target { kDocker, kCompose, kKubernetes, kSlurm };
// Who serves: plexus itself, or vLLM / TGI / TEI from their own images with flags the plan chose.
enum class ApiType { kPlexus, kVllm, kTgi, kTei };

inline constexpr const char* kTargetChoices = "docker, compose, kubernetes or slurm";
inline constexpr const char* kApiTypeChoices = "plexus, vllm, tgi or tei";

std::string_view target_name(Target t);
std::string_view api_type_name(ApiType a);
// The engine as its project writes it: "plexus", "vLLM", "TGI", "TEI".
std::string_view api_type_label(ApiType a);
// InputError (exit 2) naming the flag (--target / --api-type), the value and the choices.
Target parse_target(std::string_view text);
ApiType parse_api_type(std::string_view text);

// One GPU the deployment uses, as `plexus detect` on the target host lists it.
struct SelectedGpu {
  int index = 0;                                  // detect's numbering on the target host
  std::string name;                               // "NVIDIA H100 80GB HBM3"
  std::uint64_t memory_total_bytes = 0;
  std::uint64_t memory_free_bytes = 0;
  std::optional<std::string> compute_capability;  // "9.0" when known
};

struct DeviceSelection {
  std::vector<SelectedGpu> gpus;  // empty: the deployment computes on CPUs
  std::string reason;             // why these devices (printed; --auto-select explains its choice)
};

// The numbers the plan decides, from which every engine's flags are written.
struct PlanNumbers {
  std::string summary;                    // one line: strategy, dtype, devices, context
  int tensor_parallel = 1;                // plexus: --tp as planned; vllm: --tensor-parallel-size; tgi: --num-shard
  int pipeline_parallel = 1;              // plexus: --pp; vllm: --pipeline-parallel-size
  std::int64_t context = 4096;            // tokens per sequence: vllm --max-model-len, tgi --max-total-tokens
  int max_sequences = 1;                  // sequences decoded together (plexus --max-sequences)
  double gpu_memory_utilization = 0.9;    // vllm: fraction of each GPU for weights + KV cache
  std::int64_t gpu_bytes_needed = 0;      // the most any one GPU holds under the plan (weights + run buffers)
  std::int64_t host_memory_bytes = 0;     // host memory the run needs (offloaded weights + process): k8s requests
  std::int64_t weights_bytes = 0;         // the weights one replica loads (staged through host memory): slurm --mem
  std::int64_t model_bytes = 0;           // checkpoint bytes on disk: volume sizes
  std::int64_t shm_bytes = 0;             // /dev/shm: docker --shm-size, k8s memory emptyDir
  // Plan flags `plexus serve` / `plexus batch` take to run this plan (--dtype, --tp, --context, ...).
  // No device flags: a container (or a Slurm task) sees exactly its GPUs and plexus uses them all;
  // MPI worker ranks of `plexus batch` split a node's GPUs between them (docs/batch.md).
  std::vector<std::string> plexus_plan_args;
};

struct DeploySpec {
  Target target = Target::kDocker;
  ApiType api_type = ApiType::kPlexus;
  std::string model_path;      // absolute path of the model on the host (or the cluster's shared filesystem)
  std::string model_name;      // the model directory's name: --served-model-name
  std::string app_name;        // DNS-1123 label (k8s names, compose service, job name): "plexus-tiny-llama"
  std::string model_mount;     // where containers see the model, read-only: "/models/<model_name>"
  std::string image;           // --image, else default_image(api_type)
  int port = 8080;
  std::vector<std::pair<std::string, std::string>> env;  // --env K=V, in order
  DeviceSelection devices;
  int nodes = 1;               // slurm --nodes
  int gpus_per_node = 0;       // GPUs each node (or the one machine) gives the job
  int cpus = 1;                // CPU cores for the server (per task under slurm)
  bool embedding_model = false;              // the config names an embedding architecture (TEI serves these)
  std::vector<std::string> cuda_architectures;  // "90", from the selected GPUs' compute capabilities
  std::string gpu_type;        // slurm: the GPU type of --gres=gpu:TYPE:N ("": none, --gres=gpu:N)
  PlanNumbers plan;
};

// The image each engine publishes (plexus: "plexus:latest", built from the generated Dockerfile).
std::string default_image(ApiType a);

// One file of a deployment, relative to --out.
struct GeneratedFile {
  std::string path;
  std::string content;
  bool executable = false;
};

}  // namespace plexus::deploy
