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
  EXPECT_EQ(batch->content.find("--gpus-per-node"), std::string::npos);
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
  EXPECT_NE(s.find("#SBATCH --nodes=2\n#SBATCH --ntasks=9\n#SBATCH --ntasks-per-node=5\n#SBATCH --gpus-per-node=8\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("--threads 64 --dtype bfloat16"), std::string::npos) << s;
  EXPECT_NE(s.find("8 replicas"), std::string::npos) << s;
  expect_bash_parses(files, "two-nodes");
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
