// Dispatch to the target's generator; --dry-run text. (write_deployment: output_dir.cpp)
#include "deploy/deployment.h"

#include "core/error.h"
#include "deploy/compose.h"
#include "deploy/docker.h"
#include "deploy/escape.h"
#include "deploy/image_reference.h"
#include "deploy/kubernetes.h"
#include "deploy/model_facts.h"
#include "deploy/slurm.h"

namespace plexus::deploy {

namespace {

// Lowercase letters, digits and '-', 1 to 63 of them, a letter or digit at either end.
bool dns_label(const std::string& s) {
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

}  // namespace

void check_spec_strings(const DeploySpec& spec) {
  check_image_reference(spec.image);
  check_text(spec.model_path, "MODEL");
  if (!dns_label(spec.app_name)) throw InputError("the app name '" + one_line(spec.app_name) + "' is not a DNS-1123 label");
  for (const auto& [key, value] : spec.env) parse_env_entry(key + "=" + value);
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
