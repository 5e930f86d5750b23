// Dispatch to the target's generator; --dry-run text. (write_deployment: output_dir.cpp)
#include "deploy/deployment.h"

#include "deploy/compose.h"
#include "deploy/docker.h"
#include "deploy/escape.h"
#include "deploy/image_reference.h"
#include "deploy/kubernetes.h"
#include "deploy/slurm.h"

namespace plexus::deploy {

void check_spec_strings(const DeploySpec& spec) {
  check_image_reference(spec.image);
  check_text(spec.model_path, "MODEL");
  check_text(spec.model_name, "MODEL");
  for (const auto& [key, value] : spec.env) {
    check_text(key, "--env");
    check_text(value, "--env " + key);
  }
  for (const SelectedGpu& g : spec.devices.gpus) check_text(g.name, "--inventory: GPU " + std::to_string(g.index) + "'s name");
}

std::vector<GeneratedFile> generate_files(const DeploySpec& spec) {
  check_spec_strings(spec);
  switch (spec.target) {
    case Target::kDocker: return docker_files(spec);
    case Target::kCompose: return compose_files(spec);
    case Target::kKubernetes: return kubernetes_files(spec);
    case Target::kSlurm: return slurm_files(spec);
  }
  return {};
}

std::string dry_run_text(const std::vector<GeneratedFile>& files) {
  std::string out;
  for (const GeneratedFile& f : files) {
    if (!out.empty()) out += "\n";
    out += "==> " + f.path + " <==\n" + f.content;
    if (!f.content.empty() && f.content.back() != '\n') out += "\n";
  }
  return out;
}

}  // namespace plexus::deploy
