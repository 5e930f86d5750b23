// The slurm target: golden sbatch scripts for each engine and the CPU spec, every script parsed
// by a real bash (`bash -n`), and the task layout for several nodes. The scripts run under a real
// Slurm in tests/deploy/slurm/run_slurm_test.sh.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "deploy/slurm.h"
#include "deploy_fixture.h"
#include "golden_files.h"
#include "test_util.h"

namespace plexus::deploy {
namespace {

using testing::example_cpu_spec;
using testing::example_spec;

const GeneratedFile* find_file(const std::vector<GeneratedFile>& files, const std::string& path) {
  for (const GeneratedFile& f : files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

bool have_shellcheck() { return plexus::testing::run_command("command -v shellcheck").exit_code == 0; }

// `bash -n` on every file: the shell's own parser, not ours; and ShellCheck's linter (warnings and
// errors) where it is installed (scripts/setup.sh installs it).
void expect_bash_parses(const std::vector<GeneratedFile>& files, const std::string& tag) {
  plexus::testing::TempDir dir("slurm_bash_n_" + tag);
  static const bool shellcheck = have_shellcheck();
  for (const GeneratedFile& f : files) {
    const std::string path = dir / f.path;
    std::ofstream(path) << f.content;
    const auto r = plexus::testing::run_command("bash -n " + plexus::testing::shell_quote(path));
    EXPECT_EQ(r.exit_code, 0) << tag << "/" << f.path << ": " << r.err;
    if (shellcheck) {
      const auto c = plexus::testing::run_command("shellcheck --severity=warning " + plexus::testing::shell_quote(path));
      EXPECT_EQ(c.exit_code, 0) << tag << "/" << f.path << ":\n" << c.out << c.err;
    }
  }
}

// The checks above are real: a script bash cannot parse, and one ShellCheck warns about, fail.
TEST(SlurmTarget, TheShellChecksRejectBrokenScripts) {
  plexus::testing::TempDir dir("slurm_bash_n_bad");
  std::ofstream(dir / "bad.sbatch") << "#!/bin/bash\nif [ -e x ]; then\n  echo unterminated\n";
  EXPECT_NE(plexus::testing::run_command("bash -n " + plexus::testing::shell_quote(dir / "bad.sbatch")).exit_code, 0);
  if (!have_shellcheck()) GTEST_SKIP() << "shellcheck is not installed (scripts/setup.sh installs it)";
  std::ofstream(dir / "warn.sbatch") << "#!/bin/bash\nfiles=(a b)\necho $files\n";
  EXPECT_NE(plexus::testing::run_command("shellcheck --severity=warning " + plexus::testing::shell_quote(dir / "warn.sbatch"))
                .exit_code,
            0);
}

TEST(SlurmTarget, GoldenForEachEngine) {
  for (ApiType api : {ApiType::kPlexus, ApiType::kVllm, ApiType::kTgi, ApiType::kTei}) {
    const std::string name = "slurm-" + std::string(api_type_name(api));
    SCOPED_TRACE(name);
    const auto files = slurm_files(example_spec(Target::kSlurm, api));
    testing::expect_golden(files, name);
    expect_bash_parses(files, name);
  }
}

TEST(SlurmTarget, GoldenOnCpus) {
  const auto files = slurm_files(example_cpu_spec(Target::kSlurm));
  testing::expect_golden(files, "slurm-cpu");
  expect_bash_parses(files, "slurm-cpu");
  const GeneratedFile* batch = find_file(files, "batch.sbatch");
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(batch->content.find("--gres"), std::string::npos);
  // One replica and the coordinator on the one node.
  EXPECT_NE(batch->content.find("#SBATCH --ntasks=2\n#SBATCH --ntasks-per-node=2\n"), std::string::npos);
}

// Only plexus runs `plexus batch`; the other engines get the server script alone.
TEST(SlurmTarget, BatchScriptOnlyForPlexus) {
  EXPECT_NE(find_file(slurm_files(example_spec(Target::kSlurm, ApiType::kPlexus)), "batch.sbatch"), nullptr);
  for (ApiType api : {ApiType::kVllm, ApiType::kTgi, ApiType::kTei}) {
    const auto files = slurm_files(example_spec(Target::kSlurm, api));
    EXPECT_EQ(find_file(files, "batch.sbatch"), nullptr) << api_type_name(api);
    ASSERT_NE(find_file(files, "serve.sbatch"), nullptr) << api_type_name(api);
  }
}

// 2 nodes × 8 GPUs, a plan on 2 GPUs: 4 replicas per node, 8 in all + the coordinator; the
// coordinator shares the first node with 4 workers; each worker gets 16 threads.
TEST(SlurmTarget, ManyNodesPutReplicasPerNodeAndTheCoordinatorBesideThem) {
  DeploySpec spec = example_spec(Target::kSlurm, ApiType::kPlexus);
  spec.nodes = 2;
  spec.gpus_per_node = 8;
  const auto files = slurm_files(spec);
  const GeneratedFile* batch = find_file(files, "batch.sbatch");
  ASSERT_NE(batch, nullptr);
  const std::string& s = batch->content;
  EXPECT_NE(s.find("#SBATCH --nodes=2\n#SBATCH --ntasks=9\n#SBATCH --ntasks-per-node=5\n#SBATCH --cpus-per-task=16\n"), std::string::npos)
      << s;
  // 4 copies of the plan × (4 GiB of host memory + 2 GiB of weights) + rank 0's 2 GiB, +10 %: 28.6 GiB.
  EXPECT_NE(s.find("#SBATCH --gres=gpu:h100:8\n#SBATCH --mem=29G\n"), std::string::npos) << s;
  EXPECT_NE(s.find("--threads 64 --dtype bfloat16"), std::string::npos) << s;
  EXPECT_NE(s.find("8 replicas"), std::string::npos) << s;
  expect_bash_parses(files, "two-nodes");
}

// --mem from the plan: per copy its host memory and, with GPUs, the weights staged while loading;
// rank 0 beside batch.sbatch's copies; 10 % above, whole GiB. The GPU type where known.
TEST(SlurmTarget, ResourcesCarryMemoryAndTheGpuType) {
  const DeploySpec gpu = example_spec(Target::kSlurm, ApiType::kPlexus);  // 4 GiB host, 2 GiB of weights, 2 × H100
  const auto files = slurm_files(gpu);
  const std::string batch = find_file(files, "batch.sbatch")->content;
  const std::string serve = find_file(files, "serve.sbatch")->content;
  EXPECT_NE(batch.find("#SBATCH --gres=gpu:h100:2\n#SBATCH --mem=9G\n"), std::string::npos) << batch;  // (6 + 2) × 1.1 = 8.8
  EXPECT_NE(serve.find("#SBATCH --gres=gpu:h100:2\n#SBATCH --mem=7G\n"), std::string::npos) << serve;  // 6 × 1.1 = 6.6
  EXPECT_EQ(slurm_memory_gib(gpu, 1, true), 9);
  DeploySpec untyped = gpu;
  untyped.gpu_type.clear();
  EXPECT_NE(find_file(slurm_files(untyped), "serve.sbatch")->content.find("#SBATCH --gres=gpu:2\n"), std::string::npos);
  // On CPUs the weights are in the plan's host memory already (6 GiB): no staging, no --gres.
  const DeploySpec cpu = example_cpu_spec(Target::kSlurm);
  const std::string cpu_serve = find_file(slurm_files(cpu), "serve.sbatch")->content;
  EXPECT_NE(cpu_serve.find("#SBATCH --mem=7G\n"), std::string::npos) << cpu_serve;
  EXPECT_EQ(cpu_serve.find("--gres"), std::string::npos);
  for (ApiType api : {ApiType::kVllm, ApiType::kTgi, ApiType::kTei}) {
    const std::string s = find_file(slurm_files(example_spec(Target::kSlurm, api)), "serve.sbatch")->content;
    EXPECT_NE(s.find("#SBATCH --gres=gpu:h100:2\n#SBATCH --mem=7G\n"), std::string::npos) << api_type_name(api) << "\n" << s;
  }
}

// Through the real `plexus deploy`: the type from the inventory's GPU name (h100, l4), --gpu-type
// over it, none, a name it does not know (no type), and --gpu-type refused where it means nothing.
TEST(SlurmTarget, GpuTypeFromTheInventoryOrTheFlag) {
  plexus::testing::TempDir dir("slurm_gpu_type");
  using plexus::testing::run_plexus;
  using plexus::testing::shell_quote;
  ASSERT_EQ(run_plexus("make-model " + shell_quote(dir / "m") + " --preset tiny --tokenizer " +
                       shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral"))
                .exit_code,
            0);
  const std::string data = std::string(PLEXUS_SOURCE_DIR) + "/tests/deploy/data/";
  auto deploy = [&](const std::string& inventory, const std::string& args) {
    return run_plexus("deploy " + shell_quote(dir / "m") + " --target slurm --dry-run --inventory " + shell_quote(inventory) + " " + args);
  };
  struct Case {
    std::string inventory, args, gres;
  };
  std::string unknown = plexus::testing::run_command("cat " + shell_quote(data + "h100x2.json")).out;
  for (std::size_t at = unknown.find("NVIDIA H100 80GB HBM3"); at != std::string::npos; at = unknown.find("NVIDIA H100 80GB HBM3")) {
    unknown.replace(at, 21, "NVIDIA Graphics Device");
  }
  std::ofstream(dir / "unknown.json") << unknown;
  const std::vector<Case> cases = {
      {data + "h100x2.json", "", "#SBATCH --gres=gpu:h100:2\n"},
      {data + "l4x4.json", "--auto-select", "#SBATCH --gres=gpu:l4:1\n"},  // the tiny model fits the first
      {data + "h100x2.json", "--gpu-type h100_80gb", "#SBATCH --gres=gpu:h100_80gb:2\n"},
      {data + "h100x2.json", "--gpu-type none", "#SBATCH --gres=gpu:2\n"},
      {dir / "unknown.json", "", "#SBATCH --gres=gpu:2\n"},
  };
  for (const Case& c : cases) {
    const auto r = deploy(c.inventory, c.args);
    ASSERT_EQ(r.exit_code, 0) << c.args << "\n" << r.err;
    EXPECT_NE(r.out.find(c.gres), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find("#SBATCH --mem="), std::string::npos);
    EXPECT_NE(r.err.find("slurm: "), std::string::npos) << r.err;
  }
  EXPECT_NE(deploy(dir / "unknown.json", "").err.find("plexus does not know the model of GPU 0 (NVIDIA Graphics Device)"), std::string::npos);
  for (const auto& [inventory, bad] : {std::pair<std::string, std::string>{"h100x2.json", "--gpu-type 'a 100'"}, {"cpu_only.json", "--gpu-type a100"}}) {
    const auto r = deploy(data + inventory, bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--gpu-type"), std::string::npos) << r.err;
  }
  const auto docker = run_plexus("deploy " + shell_quote(dir / "m") + " --target docker --dry-run --gpu-type a100 --inventory " +
                                 shell_quote(data + "h100x2.json"));
  EXPECT_EQ(docker.exit_code, 2);
  EXPECT_NE(docker.err.find("--gpu-type names the GPU type of Slurm's --gres request: only --target slurm takes it"), std::string::npos);
}

// Values that need quoting stay one word in the script.
TEST(SlurmTarget, EnvAndPathsAreQuotedForTheShell) {
  DeploySpec spec = example_cpu_spec(Target::kSlurm);
  spec.model_path = "/shared/my models/it's";
  spec.env = {{"GREETING", "hello world; rm -rf /"}};
  const auto files = slurm_files(spec);
  for (const GeneratedFile& f : files) {
    EXPECT_NE(f.content.find("export GREETING='hello world; rm -rf /'\n"), std::string::npos) << f.path;
    EXPECT_NE(f.content.find("model='/shared/my models/it'\\''s'\n"), std::string::npos) << f.path;
    EXPECT_TRUE(f.executable) << f.path;
  }
  expect_bash_parses(files, "quoted");
}

// docs/deploy.md shows the scripts generated for the example: they must be the golden ones.
TEST(SlurmTarget, DocsShowTheGeneratedScripts) {
  std::ifstream in(std::string(PLEXUS_SOURCE_DIR) + "/docs/deploy.md");
  ASSERT_TRUE(in) << "docs/deploy.md is missing";
  std::ostringstream text;
  text << in.rdbuf();
  for (const char* path : {"batch.sbatch", "serve.sbatch"}) {
    EXPECT_NE(text.str().find(testing::golden_text("slurm-plexus", path)), std::string::npos)
        << "docs/deploy.md does not show tests/deploy/golden/slurm-plexus/" << path << " as generated";
  }
}

}  // namespace
}  // namespace plexus::deploy
