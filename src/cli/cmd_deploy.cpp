// `plexus deploy MODEL --target docker|compose|kubernetes|slurm`: deployment files generated from
// the plan for the selected devices of the target host (docs/deploy.md).
#include <cstdio>
#include <filesystem>

#include "backend/detect.h"
#include "backend/device_options.h"
#include "cli/commands.h"
#include "cli/plan_options.h"
#include "core/args.h"
#include "core/error.h"
#include "core/json.h"
#include "core/units.h"
#include "deploy/deploy_plan.h"
#include "deploy/deploy_spec.h"
#include "deploy/deployment.h"
#include "deploy/docker.h"
#include "deploy/engine_command.h"
#include "deploy/escape.h"
#include "deploy/image_reference.h"
#include "deploy/model_facts.h"
#include "model/config.h"

namespace plexus::cli {

namespace {

using namespace plexus::deploy;

void add_deploy_options(Args& args) {
  args.positional("MODEL", "model directory (config.json + safetensors [+ tokenizer.json]) or a .gguf file, as the "
                           "deployment's host (or shared filesystem) holds it")
      .option("--target", "T", "docker | compose | kubernetes | slurm")
      .option("--out", "DIR", "write the files here (atomically: all or none); default: deploy-<target>")
      .flag("--auto-select", "pick the fewest GPUs (most free memory first) that hold the plan, and say why")
      .option("--inventory", "FILE", "the target host's devices as `plexus detect --json` printed them there "
                                     "(default: detect on this machine)")
      .option("--api-type", "A", "who serves: plexus | vllm | tgi | tei (embedding models)", "plexus")
      .option("--image", "IMAGE", "container image (default: plexus:latest built from the generated Dockerfile, "
                                  "or the engine's published image)")
      .option("--port", "N", "port the server listens on and the deployment publishes", "8080")
      .repeatable_option("--env", "K=V", "environment variable for the server (repeatable)")
      .option("--nodes", "N", "slurm: nodes of the batch job", "1")
      .option("--gpus-per-node", "G", "GPUs each node gives the job (default: the selected GPUs)")
      .option("--gpu-type", "TYPE", "slurm: the GPU type of --gres=gpu:TYPE:N, as the cluster's gres.conf names it (default: from "
                                    "the inventory's GPU name, e.g. a100, h100; none: no type)")
      .flag("--dry-run", "print the files (and the docker run line) instead of writing them");
  add_plan_options(args, {.max_sequences = "8",
                          .max_sequences_help = "sequences the server decodes together (the plan keeps KV cache for them)"});
  args.option("--batch-tokens", "N", "tokens per forward pass the plan sizes activations for (as serve's --batch-tokens)", "256");
}

// The plan flags that describe budgets or devices of this machine: deploy takes the devices
// from the inventory instead.
void refuse_local_device_flags(const Args& args) {
  for (const char* flag : {"--max-memory", "--virtual-devices", "--virtual-gpus", "--offload-disk"}) {
    if (args.given(flag)) {
      throw InputError(std::string(flag) + " describes devices of this machine; plexus deploy plans on the target's devices "
                       "from --inventory (or detect here): leave " + flag + " out (select GPUs with --devices or --auto-select)");
    }
  }
}

Inventory load_inventory(const Args& args) {
  if (const auto file = args.get_optional("--inventory")) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(*file, ec) && std::filesystem::file_size(*file, ec) == 0 && !ec) {
      throw InputError("--inventory " + one_line(*file) + " is empty: it holds what `plexus detect --json > FILE` printed on the "
                       "target host (did detect fail there?)");
    }
    return inventory_from_json(read_json_file(*file), "--inventory " + *file);
  }
  return detect_devices(device_options_from_env());
}

}  // namespace

int cmd_deploy(int argc, char** argv) {
  Args args("deploy", "Write ready-to-run deployment files for a model on the plan plexus makes for the selected "
                      "devices: a Dockerfile and docker run line, compose.yaml, Kubernetes manifests, or Slurm "
                      "sbatch scripts, for plexus serve / batch or for vLLM, TGI and TEI images.");
  add_deploy_options(args);
  args.epilog(
      "Targets:\n"
      "  docker      Dockerfile (plexus: multi-stage CUDA build for the selected GPUs' architectures, non-root,\n"
      "              HEALTHCHECK on /health) and run.sh with the `docker run` line (--gpus \"device=…\", --shm-size,\n"
      "              the model mounted read-only, the port)\n"
      "  compose     compose.yaml: GPU reservations (driver nvidia, device_ids), healthcheck, restart policy, volumes\n"
      "  kubernetes  Deployment + Service + PersistentVolumeClaim: nvidia.com/gpu limits, /dev/shm emptyDir,\n"
      "              readiness and liveness probes on /health, requests from the plan's host memory\n"
      "  slurm       sbatch scripts for `plexus batch` (requeue resumes) and `plexus serve`, with --gres=gpu:TYPE:N\n"
      "              and --mem from the plan\n"
      "The devices are the target host's: --inventory FILE is `plexus detect --json` captured there (default:\n"
      "detect on this machine). --devices (detect's numbering; an inventory without GPUs exits 2 saying what to\n"
      "add), --auto-select (the fewest GPUs, most free memory first, that hold the plan) or all GPUs; none: a CPU\n"
      "deployment. Of the plan flags above, --max-memory, --virtual-devices, --virtual-gpus, --offload-disk, a\n"
      "--device-map file are refused: the inventory gives the devices.\n"
      "plexus serve is sized by plexus's plan (--tp/--pp, --context); vLLM, TGI and TEI by config.json and the\n"
      "safetensors headers alone, for any architecture they serve (vLLM --tensor-parallel-size,\n"
      "--pipeline-parallel-size, --max-model-len, --gpu-memory-utilization; TGI --num-shard, --max-total-tokens).\n"
      "Bad input exits 2 and writes nothing. See docs/deploy.md.");
  if (!args.parse(argc, argv)) return 0;

  // Everything checked before anything is planned or written.
  DeployRequest req;
  if (!args.has("--target")) throw InputError(std::string("--target is required: give ") + kTargetChoices);
  req.target = parse_target(args.get("--target"));
  req.api_type = parse_api_type(args.get("--api-type"));
  refuse_local_device_flags(args);
  const int port = static_cast<int>(args.get_int_in("--port", 1, 65535));
  std::vector<std::pair<std::string, std::string>> env;
  for (const std::string& e : args.get_all("--env")) env.push_back(parse_env_entry(e));
  req.nodes = static_cast<int>(args.get_int_in("--nodes", 1, 4096));
  if (args.given("--gpus-per-node")) req.gpus_per_node = static_cast<int>(args.get_int_in("--gpus-per-node", 1, 1024));
  req.max_sequences = static_cast<int>(args.get_int_in("--max-sequences", 1, 4096));
  req.auto_select = args.get_flag("--auto-select");
  if (args.given("--devices") && req.auto_select) throw InputError("--devices and --auto-select both choose the GPUs: give one of them");
  req.plan = plan_inputs_from(args);
  if (req.plan.device_map_file) {
    throw InputError("--device-map " + *req.plan.device_map_file + ": deploy plans with a strategy (the server re-plans in the "
                     "container); give --strategy instead of a device map file");
  }
  req.devices = req.plan.devices;
  req.plan.devices.reset();
  req.plan.batch_tokens = args.get_int_in("--batch-tokens", 1, 65536);
  const std::string image = args.get_optional("--image").value_or(default_image(req.api_type));
  check_image_reference(image);
  const std::string out_dir = args.get_optional("--out").value_or("deploy-" + std::string(target_name(req.target)));
  if (out_dir.empty()) throw InputError("--out must not be empty");

  const std::string model = args.get("MODEL");
  require_model_path(model);
  DeploySpec spec;
  spec.target = req.target;
  spec.api_type = req.api_type;
  set_model_names(spec, model);
  req.model = model;
  req.inventory_file = args.get_optional("--inventory").value_or("");
  req.gpu_type = args.get_optional("--gpu-type");
  const Inventory inventory = load_inventory(args);
  const DeployPlan plan = plan_deployment(req, inventory);

  spec.image = image;
  spec.port = port;
  spec.env = env;
  spec.devices = plan.devices;
  spec.nodes = req.nodes;
  spec.gpus_per_node = plan.gpus_per_node;
  spec.cpus = plan.cpus;
  spec.embedding_model = plan.embedding_model;
  spec.cuda_architectures = plan.cuda_architectures;
  spec.gpu_type = plan.gpu_type;
  spec.plan = plan.numbers;

  std::fprintf(stderr, "devices: %s\n", spec.devices.reason.c_str());
  if (!plan.sizing.empty()) std::fprintf(stderr, "sizing: %s\n", plan.sizing.c_str());
  std::fprintf(stderr, "plan: %s\n", spec.plan.summary.c_str());
  if (!plan.gpu_type_reason.empty()) std::fprintf(stderr, "slurm: %s\n", plan.gpu_type_reason.c_str());
  const std::vector<std::string> flags = plan_flags(spec);
  std::string numbers(api_type_label(spec.api_type));
  if (!flags.empty()) numbers += " " + shell_join(flags);
  auto bytes = [](std::int64_t b) { return format_bytes(static_cast<std::uint64_t>(b)); };
  std::fprintf(stderr, "numbers: %s; GPU memory %s on the fullest GPU, host memory %s, /dev/shm %s, model %s on disk\n",
               numbers.c_str(), bytes(spec.plan.gpu_bytes_needed).c_str(), bytes(spec.plan.host_memory_bytes).c_str(),
               bytes(spec.plan.shm_bytes).c_str(), bytes(spec.plan.model_bytes).c_str());
  std::fflush(stderr);

  const std::vector<GeneratedFile> files = generate_files(spec);
  if (args.get_flag("--dry-run")) {
    std::string text = dry_run_text(files);
    if (spec.target == Target::kDocker) text += "\n==> docker run <==\n" + docker_run_command(spec) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  write_deployment(files, out_dir);
  std::printf("wrote %s (%s, %s):\n", out_dir.c_str(), std::string(target_name(spec.target)).c_str(),
              std::string(api_type_name(spec.api_type)).c_str());
  for (const GeneratedFile& f : files) std::printf("  %s/%s\n", out_dir.c_str(), f.path.c_str());
  return 0;
}

}  // namespace plexus::cli
