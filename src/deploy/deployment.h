// A deployment's files for its target, and how they reach the user: written into --out
// atomically (a temporary sibling directory renamed into place, so nothing is half-written), or
// printed by --dry-run.
#pragma once
#include <string>
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

// The target's generator (docker_files, compose_files, kubernetes_files, slurm_files), after
// check_spec_strings.
std::vector<GeneratedFile> generate_files(const DeploySpec& spec);

// The strings of `spec` that reach the files, checked: an image reference (image_reference.h),
// the app name a DNS-1123 label (app_name_for makes one), --env entries as parse_env_entry takes
// them, the model's path and GPU names UTF-8 without NUL (check_text); InputError naming the flag
// otherwise. Every generator escapes whatever else they hold.
void check_spec_strings(const DeploySpec& spec);

// Writes every file under `out_dir` at once: into a temporary directory beside it, then renamed
// into place. An existing `out_dir` is replaced only when it holds nothing but files a deploy
// wrote (else InputError naming it). RuntimeError when the disk refuses; nothing is left behind.
void write_deployment(const std::vector<GeneratedFile>& files, const std::string& out_dir);

// --dry-run: each file under a "==> PATH <==" header, as `head` prints several files.
std::string dry_run_text(const std::vector<GeneratedFile>& files);

}  // namespace plexus::deploy
