// Issue 32's hostile strings through the real `plexus deploy`: a model directory named with a
// newline, U+2028, U+0085, quotes, `$(...)`; --env values with DEL and other controls; --image
// values that are no image reference. The scripts run under real bash (with `docker`, `srun` and
// `hostname` replaced by stubs that record their argv) and inject nothing; every file stays
// printable text that yaml-cpp reads back to the exact strings; bad image references exit 2.
// (The random strings and the external validators: hostile_strings.py, deploy_hostile_strings_*.)
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "test_util.h"

namespace plexus::deploy {
namespace {

namespace fs = std::filesystem;
using plexus::testing::ProcessResult;
using plexus::testing::run_command;
using plexus::testing::run_plexus;
using plexus::testing::shell_quote;
using plexus::testing::TempDir;

const std::string kHostileData = std::string(PLEXUS_SOURCE_DIR) + "/tests/deploy/data";

std::string read_generated(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first character a generated file must not hold raw, described; "" when it has none: C0
// controls but '\n', DEL, C1 controls (U+0080-U+009F), U+2028 and U+2029 (line breaks to YAML 1.1
// readers, terminals and editors).
std::string unprintable(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    const auto third = i + 2 < text.size() ? static_cast<unsigned char>(text[i + 2]) : 0;
    if ((b < 0x20 && b != '\n') || b == 0x7F) return "byte " + std::to_string(b) + " at " + std::to_string(i);
    if (b == 0xC2 && next >= 0x80 && next <= 0x9F) return "a C1 control (U+0080-U+009F) at " + std::to_string(i);
    if (b == 0xE2 && next == 0x80 && (third == 0xA8 || third == 0xA9)) return "U+2028/U+2029 at " + std::to_string(i);
  }
  return "";
}

// argv a stub recorded (NUL-separated).
std::vector<std::string> recorded_argv(const fs::path& file) {
  std::vector<std::string> argv;
  std::string all = read_generated(file), word;
  for (char c : all) {
    if (c == '\0') {
      argv.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  return argv;
}

bool has_pair(const std::vector<std::string>& argv, const std::string& flag, const std::string& value) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag + "=" + value) return true;
    if (argv[i] == flag && i + 1 < argv.size() && argv[i + 1] == value) return true;
  }
  return false;
}

std::vector<std::string> yaml_strings(const YAML::Node& n) {
  std::vector<std::string> out;
  for (const auto& v : n) out.push_back(v.as<std::string>());
  return out;
}

std::set<std::string> top_keys(const YAML::Node& n) {
  std::set<std::string> keys;
  for (const auto& kv : n) keys.insert(kv.first.as<std::string>());
  return keys;
}

// A model directory (a link to the 8B config) whose name is `name`, deployed on 2 × H100 into
// OUT/<target>; a scratch directory where scripts run, with stubs of docker, srun, mpirun and
// hostname on PATH that record their argv (and $FUZZ) and create nothing else.
class HostileNames : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "bin");
    fs::create_directories(run_dir_);
    for (const char* tool : {"docker", "srun", "mpirun"}) {
      const fs::path stub = fs::path(dir_ / "bin") / tool;
      std::ofstream(stub) << "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$STUB_OUT/" << tool
                                         << ".argv\"\nprintf '%s' \"${FUZZ-}\" > \"$STUB_OUT/" << tool << ".env\"\n";
      fs::permissions(stub, fs::perms::owner_all);
    }
    std::ofstream(dir_ / "bin/hostname") << "#!/bin/sh\necho node1\n";
    fs::permissions(dir_ / "bin/hostname", fs::perms::owner_all);
  }

  // Deploys a model directory named `name`; returns the output directory.
  ProcessResult deploy(const std::string& name, const std::string& target, const std::string& extra = "") {
    const fs::path parent = dir_ / ("m" + std::to_string(++models_));
    fs::create_directories(parent);
    model_ = (parent / name).string();
    // plexus plans from config.json alone; the other engines are sized from the weights' headers
    // (here the index's metadata.total_size).
    const bool other_engine = extra.find("--api-type") != std::string::npos && extra.find("--api-type plexus") == std::string::npos;
    fs::create_directory_symlink(kHostileData + (other_engine ? "/llama-8b-hub" : "/llama-8b-config"), model_);
    out_ = dir_ / ("out" + std::to_string(models_));
    return run_plexus("deploy " + shell_quote(model_) + " --target " + target + " --inventory " +
                      shell_quote(kHostileData + "/h100x2.json") + " --out " + shell_quote(out_) + " " + extra);
  }

  // Runs `bash SCRIPT ARGS` in the scratch directory with the stubs first on PATH.
  ProcessResult run_script(const std::string& script, const std::string& args = "") {
    return run_command("cd " + shell_quote(run_dir_) + " && env PATH=" + shell_quote(dir_ / "bin") + ":\"$PATH\" SLURM_NTASKS=3 STUB_OUT=" +
                       shell_quote(dir_.path()) + " bash " + shell_quote(out_ + "/" + script) + " " + args);
  }

  // Every file of the output directory is printable text; the scratch directory stayed empty.
  void expect_clean() {
    for (const auto& e : fs::directory_iterator(out_)) {
      EXPECT_EQ(unprintable(read_generated(e.path())), "") << e.path();
    }
    EXPECT_TRUE(fs::is_empty(run_dir_)) << "a script created files: " << fs::begin(fs::directory_iterator(run_dir_))->path();
  }

  TempDir dir_{"deploy_hostile"};
  std::string run_dir_ = dir_ / "run";
  std::string model_, out_;
  int models_ = 0;
};

const std::string kNewline = "m\ntouch injected\n";
const std::string kLineSeparator = "m\u2028kind: Injected";

TEST_F(HostileNames, NewlineInTheModelNameRunsNothingFromRunSh) {
  for (const char* api : {"plexus", "vllm"}) {
    SCOPED_TRACE(api);
    const ProcessResult r = deploy(kNewline, "docker", std::string("--api-type ") + api);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const ProcessResult run = run_script("run.sh");
    EXPECT_EQ(run.exit_code, 0) << run.err;
    expect_clean();
    const std::vector<std::string> argv = recorded_argv(dir_ / "docker.argv");
    EXPECT_TRUE(has_pair(argv, "--served-model-name", kNewline));
    EXPECT_TRUE(has_pair(argv, "--volume", model_ + ":/models/" + kNewline + ":ro"));
    fs::remove(dir_ / "docker.argv");
  }
}

TEST_F(HostileNames, NewlineInTheModelNameAddsNoDockerfileInstruction) {
  const ProcessResult r = deploy(kNewline, "docker");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_clean();
  // Instructions: every line that is not a comment and does not continue the line before.
  std::istringstream in(read_generated(out_ + "/Dockerfile"));
  std::vector<std::string> instructions;
  bool continued = false;
  Json cmd;
  for (std::string line; std::getline(in, line);) {
    const bool comment = line.rfind("#", 0) == 0;
    if (!continued && !comment && !line.empty()) {
      instructions.push_back(line.substr(0, line.find(' ')));
      if (line.rfind("CMD ", 0) == 0) cmd = parse_json(line.substr(4), "Dockerfile CMD");
    }
    continued = !comment && !line.empty() && line.back() == '\\';
  }
  const std::vector<std::string> expected = {"FROM", "ARG",  "RUN", "WORKDIR", "COPY",        "RUN",        "RUN", "FROM",
                                             "ARG",  "COPY", "RUN", "COPY",    "USER",        "EXPOSE",     "HEALTHCHECK",
                                             "ENTRYPOINT", "CMD"};
  EXPECT_EQ(instructions, expected);
  ASSERT_TRUE(cmd.is_array());
  std::vector<std::string> args = cmd.get<std::vector<std::string>>();
  EXPECT_TRUE(has_pair(args, "--served-model-name", kNewline));
}

TEST_F(HostileNames, NewlineInTheModelNameRunsNothingFromTheSbatchScripts) {
  const ProcessResult r = deploy(kNewline, "slurm", "--env FUZZ=" + shell_quote("a\nb'c"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ProcessResult run = run_script("serve.sbatch");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(has_pair(recorded_argv(dir_ / "srun.argv"), "--served-model-name", kNewline));
  EXPECT_EQ(read_generated(dir_ / "srun.env"), "a\nb'c");
  run = run_script("batch.sbatch", shell_quote(kHostileData + "/h100x2.json") + " " + shell_quote(dir_ / "results.jsonl"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const std::vector<std::string> argv = recorded_argv(dir_ / "mpirun.argv");
  EXPECT_TRUE(has_pair(argv, "batch", model_)) << argv.size();
  EXPECT_EQ(read_generated(dir_ / "mpirun.env"), "a\nb'c");
  expect_clean();
}

TEST_F(HostileNames, NewlineInTheModelNameKeepsComposeYaml) {
  const ProcessResult r = deploy(kNewline, "compose", "--env FUZZ=" + shell_quote("$HOME `x` $(y)"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_clean();
  const YAML::Node doc = YAML::LoadFile(out_ + "/compose.yaml");
  EXPECT_EQ(top_keys(doc), std::set<std::string>{"services"});
  const YAML::Node svc = doc["services"]["plexus-m-touch-injected"];
  ASSERT_TRUE(svc.IsMap());
  EXPECT_TRUE(has_pair(yaml_strings(svc["command"]), "--served-model-name", kNewline));
  // Compose reads "$$" as "$": the value reaches the container as given.
  EXPECT_EQ(svc["environment"]["FUZZ"].as<std::string>(), "$$HOME `x` $$(y)");
}

TEST_F(HostileNames, LineSeparatorAndNelInTheModelNameKeepTheManifests) {
  for (const std::string& name : std::vector<std::string>{kLineSeparator, "m\u0085kind: Injected", "m\x7f\x01\x1b[31m"}) {
    const ProcessResult r = deploy(name, "kubernetes");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_clean();
    for (const char* file : {"deployment.yaml", "pvc.yaml", "model-copy-pod.yaml", "service.yaml"}) {
      SCOPED_TRACE(file);
      const YAML::Node doc = YAML::LoadFile(out_ + "/" + file);
      EXPECT_EQ(top_keys(doc), (std::set<std::string>{"apiVersion", "kind", "metadata", "spec"}));
    }
    const YAML::Node c = YAML::LoadFile(out_ + "/deployment.yaml")["spec"]["template"]["spec"]["containers"][0];
    EXPECT_TRUE(has_pair(yaml_strings(c["command"]), "--served-model-name", name));
  }
}

TEST_F(HostileNames, ControlCharactersInEnvValuesReadBackExactly) {
  const std::vector<std::string> values = {"x\x7fy", "\xc2\x85", "a\u2028b", "\x01\x02\t\r\n", "\"q\" 'q' \\", "- x", "---", "#c"};
  std::string flags;
  for (std::size_t i = 0; i < values.size(); ++i) flags += " --env V" + std::to_string(i) + "=" + shell_quote(values[i]);
  ProcessResult r = deploy("tiny", "kubernetes", flags);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_clean();
  const YAML::Node env = YAML::LoadFile(out_ + "/deployment.yaml")["spec"]["template"]["spec"]["containers"][0]["env"];
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(env[i + 1]["name"].as<std::string>(), "V" + std::to_string(i));
    EXPECT_EQ(env[i + 1]["value"].as<std::string>(), values[i]) << i;
  }
  r = deploy("tiny", "docker", flags);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(run_script("run.sh").exit_code, 0);
  expect_clean();
  const std::vector<std::string> argv = recorded_argv(dir_ / "docker.argv");
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_TRUE(has_pair(argv, "--env", "V" + std::to_string(i) + "=" + values[i])) << i;
}

TEST_F(HostileNames, ALeadingDashNameIsOneArgumentOfTheServer) {
  const ProcessResult r = deploy("-rf", "kubernetes", "--api-type vllm");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const YAML::Node c = YAML::LoadFile(out_ + "/deployment.yaml")["spec"]["template"]["spec"]["containers"][0];
  const std::vector<std::string> command = yaml_strings(c["command"]);
  EXPECT_NE(std::find(command.begin(), command.end(), "--served-model-name=-rf"), command.end());
}

TEST_F(HostileNames, ImagesThatAreNoReferenceExitTwo) {
  for (const std::string& image : std::vector<std::string>{"my model", "img\nRUN touch injected", "Upper", "team/Model", "a:b:c", "", "x:" + std::string(129, 't'),
                                  "-x", "$(touch injected)", "ok@sha256:abc", "a//b", "ghcr.io/a/b\u2028"}) {
    SCOPED_TRACE(image);
    const ProcessResult r = deploy("tiny", "compose", "--image " + shell_quote(image));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--image"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out_));
  }
  for (const std::string& image : std::vector<std::string>{"plexus", "registry.example.com:5000/team/plexus:1.0-rc_1", "localhost/a__b/c.d/e-f",
                                  "[::1]:5000/x@sha256:" + std::string(64, 'a'), "UPPER.example.com/x:Tag"}) {
    SCOPED_TRACE(image);
    const ProcessResult r = deploy("tiny", "compose", "--image " + shell_quote(image));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(YAML::LoadFile(out_ + "/compose.yaml")["services"]["plexus-tiny"]["image"].as<std::string>(), image);
  }
}

TEST_F(HostileNames, InvalidUtf8IsRefusedNamingIt) {
  ProcessResult r = deploy("m\xff", "kubernetes");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("MODEL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.err;
  r = deploy("tiny", "slurm", "--env A=" + shell_quote("x\xc0y"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--env A"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out_));
}

}  // namespace
}  // namespace plexus::deploy
