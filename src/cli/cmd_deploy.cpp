// `plexus deploy MODEL --target docker|compose|kubernetes|slurm`: deployment files generated from
// the plan. FOUNDATION: the flags are the interface (issue 20); the core helper fills in the rest.
#include <cstdio>

#include "cli/commands.h"
#include "cli/plan_options.h"
#include "core/args.h"
#include "core/error.h"
#include "deploy/deploy_spec.h"
#include "deploy/deployment.h"

namespace plexus::cli {

namespace {

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
      .option("--max-sequences", "N", "sequences the server decodes together (the plan keeps KV cache for them)", "8")
      .flag("--dry-run", "print the files (and the docker run line) instead of writing them");
  add_plan_options(args);
}

}  // namespace

int cmd_deploy(int argc, char** argv) {
  Args args("deploy", "Write ready-to-run deployment files for a model on the plan plexus makes for the selected "
                      "devices: a Dockerfile and docker run line, compose.yaml, Kubernetes manifests, or Slurm "
                      "sbatch scripts, for plexus serve / batch or for vLLM, TGI and TEI images.");
  add_deploy_options(args);
  if (!args.parse(argc, argv)) return 0;
  throw RuntimeError("plexus deploy: not built yet");
}

}  // namespace plexus::cli
