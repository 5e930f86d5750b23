// deploy_write_examples OUT_DIR [TARGET ...]: writes the fixture's deployments (example_spec for
// every api type, example_cpu_spec) as files, so the independent validators (docker-compose,
// the npm linters and schemas, bash -n, Slurm) can check them on disk. One directory per case:
// OUT_DIR/<target>-<api>/ (plexus, vllm, tgi, tei) and OUT_DIR/<target>-cpu/. No TARGET: all.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "deploy/deploy_spec.h"
#include "deploy/deployment.h"
#include "deploy_fixture.h"

namespace {

using namespace plexus::deploy;

void write_case(const DeploySpec& spec, const std::string& dir) {
  write_deployment(generate_files(spec), dir);
  std::printf("%s\n", dir.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: deploy_write_examples OUT_DIR [docker|compose|kubernetes|slurm ...]\n");
    return 2;
  }
  const std::string out = argv[1];
  try {
    std::vector<Target> targets;
    for (int i = 2; i < argc; ++i) targets.push_back(parse_target(argv[i]));
    if (targets.empty()) targets = {Target::kDocker, Target::kCompose, Target::kKubernetes, Target::kSlurm};
    for (Target t : targets) {
      const std::string prefix = out + "/" + std::string(target_name(t)) + "-";
      for (ApiType a : {ApiType::kPlexus, ApiType::kVllm, ApiType::kTgi, ApiType::kTei}) {
        write_case(testing::example_spec(t, a), prefix + std::string(api_type_name(a)));
      }
      write_case(testing::example_cpu_spec(t), prefix + "cpu");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deploy_write_examples: %s\n", e.what());
    return 1;
  }
  return 0;
}
