// Writes the slurm target's files for a CPU deployment of MODEL into OUT (for the real-Slurm test,
// run_slurm_test.sh, where `plexus deploy` cannot be used): example_cpu_spec with the model's
// path, CPUS cores per task, the server on PORT and no plan flags beyond the dtype.
// Usage: deploy_write_slurm_files OUT MODEL [CPUS [PORT]]
#include <cstdio>
#include <exception>
#include <string>

#include "deploy/deployment.h"
#include "deploy/slurm.h"
#include "deploy_fixture.h"

int main(int argc, char** argv) {
  using namespace plexus::deploy;
  if (argc < 3 || argc > 5) {
    std::fprintf(stderr, "usage: %s OUT MODEL [CPUS [PORT]]\n", argv[0]);
    return 2;
  }
  try {
    DeploySpec spec = testing::example_cpu_spec(Target::kSlurm);
    spec.model_path = argv[2];
    spec.model_name = "test-model";
    spec.app_name = "plexus-slurm-test";
    spec.env = {{"PLEXUS_SLURM_TEST", "1"}};
    spec.cpus = argc >= 4 ? std::stoi(argv[3]) : 1;
    if (argc == 5) spec.port = std::stoi(argv[4]);
    spec.plan.plexus_plan_args = {"--dtype", "bfloat16"};
    write_deployment(slurm_files(spec), argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deploy_write_slurm_files: %s\n", e.what());
    return 1;
  }
  return 0;
}
