// The docker and compose targets: golden files for the fixed example (every api type, and CPUs
// only), and the parts users rely on checked directly (devices, mounts, health check, user).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "deploy/compose.h"
#include "deploy/container_common.h"
#include "deploy/docker.h"
#include "deploy_fixture.h"
#include "golden_files.h"

namespace plexus::deploy {
namespace {

using testing::example_cpu_spec;
using testing::example_spec;
using testing::expect_golden;

constexpr ApiType kApis[] = {ApiType::kPlexus, ApiType::kVllm, ApiType::kTgi, ApiType::kTei};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const GeneratedFile* find_docker_file(const std::vector<GeneratedFile>& files, const std::string& path) {
  for (const GeneratedFile& f : files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

TEST(DockerTarget, GoldenFilesForEveryApiType) {
  for (ApiType a : kApis) {
    SCOPED_TRACE(std::string(api_type_name(a)));
    expect_golden(docker_files(example_spec(Target::kDocker, a)), "docker-" + std::string(api_type_name(a)));
  }
  expect_golden(docker_files(example_cpu_spec(Target::kDocker)), "docker-cpu");
}

TEST(ComposeTarget, GoldenFilesForEveryApiType) {
  for (ApiType a : kApis) {
    SCOPED_TRACE(std::string(api_type_name(a)));
    expect_golden(compose_files(example_spec(Target::kCompose, a)), "compose-" + std::string(api_type_name(a)));
  }
  expect_golden(compose_files(example_cpu_spec(Target::kCompose)), "compose-cpu");
}

TEST(DockerTarget, PlexusGetsADockerfileOthersRunTheirImages) {
  const auto plexus = docker_files(example_spec(Target::kDocker, ApiType::kPlexus));
  ASSERT_NE(find_docker_file(plexus, "Dockerfile"), nullptr);
  ASSERT_NE(find_docker_file(plexus, "run.sh"), nullptr);
  EXPECT_TRUE(find_docker_file(plexus, "run.sh")->executable);
  for (ApiType a : {ApiType::kVllm, ApiType::kTgi, ApiType::kTei}) {
    const auto files = docker_files(example_spec(Target::kDocker, a));
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0].path, "run.sh");
  }
}

TEST(DockerTarget, RunLineNamesTheSelectedGpusShmMountAndPort) {
  DeploySpec spec = example_spec(Target::kDocker, ApiType::kVllm);
  spec.devices.gpus[0].index = 2;
  spec.devices.gpus[1].index = 5;
  spec.port = 9000;
  spec.env.push_back({"NOTE", "two words"});
  const std::string run = docker_run_command(spec);
  EXPECT_TRUE(contains(run, "--gpus '\"device=2,5\"'")) << run;
  EXPECT_TRUE(contains(run, "--shm-size 16g")) << run;
  EXPECT_TRUE(contains(run, "--volume /srv/models/tiny-llama:/models/tiny-llama:ro")) << run;
  EXPECT_TRUE(contains(run, "--publish 9000:9000")) << run;
  EXPECT_TRUE(contains(run, "--env 'NOTE=two words'")) << run;
  EXPECT_TRUE(contains(run, "--entrypoint vllm")) << run;
  EXPECT_TRUE(contains(run, "serve /models/tiny-llama --host 0.0.0.0 --port 9000")) << run;
  EXPECT_TRUE(contains(run, "--tensor-parallel-size 2")) << run;
  EXPECT_TRUE(contains(run, "--health-cmd 'curl -fsS http://localhost:9000/health || exit 1'")) << run;
}

TEST(DockerTarget, TeiProbesHealthWithoutCurl) {
  // TEI's image has no curl: bash asks /health over /dev/tcp (validators/health_probes.mjs runs
  // every probe against a real HTTP server); plexus's image installs curl and has its own HEALTHCHECK.
  const DeploySpec tei = example_spec(Target::kDocker, ApiType::kTei);
  const std::vector<std::string> probe = health_probe(tei);
  ASSERT_EQ(probe.size(), 3u);
  EXPECT_EQ(probe[0], "bash");
  EXPECT_TRUE(contains(probe[2], "/dev/tcp/localhost/8080")) << probe[2];
  EXPECT_TRUE(contains(probe[2], "GET /health HTTP/1.0")) << probe[2];
  EXPECT_FALSE(contains(docker_run_command(example_spec(Target::kDocker, ApiType::kPlexus)), "--health-cmd"));
}

TEST(DockerTarget, CpuOnlyHasNoGpusAndBuildsOnDebian) {
  const DeploySpec spec = example_cpu_spec(Target::kDocker);
  EXPECT_FALSE(contains(docker_run_command(spec), "--gpus"));
  const std::string df = plexus_dockerfile(spec);
  EXPECT_TRUE(contains(df, "FROM debian:12 AS build"));
  EXPECT_TRUE(contains(df, "FROM debian:12-slim"));
  EXPECT_TRUE(contains(df, "-DPLEXUS_CUDA=OFF"));
  EXPECT_FALSE(contains(df, "nvidia/cuda"));
}

TEST(DockerTarget, DockerfileBuildsForTheSelectedArchitectures) {
  DeploySpec spec = example_spec(Target::kDocker, ApiType::kPlexus);
  spec.cuda_architectures = {"80", "90"};
  const std::string df = plexus_dockerfile(spec);
  EXPECT_TRUE(contains(df, "FROM nvidia/cuda:13.0.0-devel-ubuntu24.04 AS build"));
  EXPECT_TRUE(contains(df, "FROM nvidia/cuda:13.0.0-runtime-ubuntu24.04"));
  EXPECT_TRUE(contains(df, "\"-DCMAKE_CUDA_ARCHITECTURES=80;90\""));
  EXPECT_TRUE(contains(df, "USER plexus"));
  EXPECT_TRUE(contains(df, "CMD curl -fsS http://localhost:8080/health || exit 1"));
  EXPECT_TRUE(contains(df, "CMD [\"serve\",\"/models/tiny-llama\",\"--host\",\"0.0.0.0\",\"--port\",\"8080\""));
}

TEST(ContainerCommon, SizesAndStartPeriod) {
  EXPECT_EQ(docker_size(16LL << 30), "16g");
  EXPECT_EQ(docker_size(512LL << 20), "512m");
  EXPECT_EQ(docker_size(1000), "1000");
  DeploySpec spec = example_spec(Target::kDocker, ApiType::kPlexus);
  spec.plan.model_bytes = 0;
  EXPECT_EQ(health_start_period_s(spec), 60);
  spec.plan.model_bytes = 140'000'000'000;  // a 70B model in bf16: 700 s to read at 200 MB/s
  EXPECT_EQ(health_start_period_s(spec), 760);
}

TEST(ComposeTarget, DollarsAreLiteral) {
  DeploySpec spec = example_spec(Target::kCompose, ApiType::kPlexus);
  spec.env = {{"TOKEN", "a$b${c}"}};
  const auto files = compose_files(spec);
  const GeneratedFile* compose = find_docker_file(files, "compose.yaml");
  ASSERT_NE(compose, nullptr);
  EXPECT_TRUE(contains(compose->content, "TOKEN: a$$b$${c}")) << compose->content;
}

TEST(ComposeTarget, CpuOnlyReservesNoDevices) {
  const auto files = compose_files(example_cpu_spec(Target::kCompose));
  const GeneratedFile* compose = find_docker_file(files, "compose.yaml");
  ASSERT_NE(compose, nullptr);
  EXPECT_FALSE(contains(compose->content, "devices"));
  EXPECT_FALSE(contains(compose->content, "nvidia"));
  EXPECT_TRUE(contains(compose->content, "healthcheck:"));
}

}  // namespace
}  // namespace plexus::deploy

namespace plexus::deploy {
namespace {

// docs/deploy.md shows the generated files for the example: they must be the golden ones.
TEST(DeployDocs, ShowTheGeneratedDockerAndComposeFiles) {
  std::ifstream in(std::string(PLEXUS_SOURCE_DIR) + "/docs/deploy.md");
  ASSERT_TRUE(in) << "docs/deploy.md is missing";
  std::ostringstream text;
  text << in.rdbuf();
  for (const auto& [name, path] : std::vector<std::pair<std::string, std::string>>{
           {"docker-plexus", "Dockerfile"}, {"docker-plexus", "run.sh"}, {"docker-vllm", "run.sh"},
           {"compose-plexus", "compose.yaml"}}) {
    EXPECT_TRUE(contains(text.str(), testing::golden_text(name, path)))
        << "docs/deploy.md does not show tests/deploy/golden/" << name << "/" << path << " as generated";
  }
}

}  // namespace
}  // namespace plexus::deploy
