// The kubernetes target: golden manifests for each engine and the CPU spec, the quantities and
// names the generator writes, read back by an independent YAML parser (yaml-cpp). The manifests
// are checked against the Kubernetes OpenAPI schemas by deploy_k8s_validate (validate_k8s.mjs).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/error.h"
#include "deploy/kubernetes.h"
#include "deploy/deploy_plan.h"  // kGiB
#include "deploy_fixture.h"
#include "golden_files.h"

namespace plexus::deploy {
namespace {

using testing::example_cpu_spec;
using testing::example_spec;

constexpr std::int64_t kMiB = 1LL << 20;

std::map<std::string, YAML::Node> parsed(const DeploySpec& spec) {
  std::map<std::string, YAML::Node> out;
  for (const GeneratedFile& f : kubernetes_files(spec)) {
    EXPECT_FALSE(f.executable) << f.path;
    out[f.path] = YAML::Load(f.content);
  }
  return out;
}

TEST(Kubernetes, GoldenPerApiType) {
  for (ApiType a : {ApiType::kPlexus, ApiType::kVllm, ApiType::kTgi, ApiType::kTei}) {
    SCOPED_TRACE(std::string(api_type_name(a)));
    testing::expect_golden(kubernetes_files(example_spec(Target::kKubernetes, a)),
                           "kubernetes-" + std::string(api_type_name(a)));
  }
}

TEST(Kubernetes, GoldenCpu) { testing::expect_golden(kubernetes_files(example_cpu_spec(Target::kKubernetes)), "kubernetes-cpu"); }

// docs/deploy.md shows the plexus example's files as generated (update them with the golden files).
TEST(Kubernetes, DocsShowTheGeneratedFiles) {
  std::ifstream in(std::string(PLEXUS_SOURCE_DIR) + "/docs/deploy.md");
  std::stringstream doc;
  doc << in.rdbuf();
  for (const GeneratedFile& f : kubernetes_files(example_spec(Target::kKubernetes, ApiType::kPlexus))) {
    EXPECT_NE(doc.str().find("`" + f.path + "`\n```yaml\n" + f.content + "```\n"), std::string::npos)
        << "docs/deploy.md does not show " << f.path << " as generated";
  }
}

TEST(Kubernetes, Quantities) {
  EXPECT_EQ(k8s_bytes_quantity(0), "0");
  EXPECT_EQ(k8s_bytes_quantity(1), "1Mi");
  EXPECT_EQ(k8s_bytes_quantity(4 * kGiB), "4Gi");
  EXPECT_EQ(k8s_bytes_quantity(4 * kGiB + 1), "4097Mi");
  EXPECT_EQ(k8s_bytes_quantity(1536 * kMiB), "1536Mi");
  EXPECT_EQ(k8s_model_volume_quantity(0), "1Gi");
  EXPECT_EQ(k8s_model_volume_quantity(2 * kGiB + kGiB / 2), "4Gi");  // 2.5 GiB + 25% = 3.125 GiB
  EXPECT_EQ(k8s_model_volume_quantity(8 * kGiB), "10Gi");
  EXPECT_EQ(k8s_model_volume_quantity(140 * kGiB), "175Gi");
}

TEST(Kubernetes, DeploymentFromThePlan) {
  DeploySpec spec = example_spec(Target::kKubernetes, ApiType::kVllm);
  auto docs = parsed(spec);
  ASSERT_EQ(docs.size(), 4u);
  const YAML::Node d = docs["deployment.yaml"];
  EXPECT_EQ(d["kind"].as<std::string>(), "Deployment");
  EXPECT_EQ(d["spec"]["strategy"]["type"].as<std::string>(), "Recreate");
  const YAML::Node c = d["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["command"][0].as<std::string>(), "vllm");
  EXPECT_EQ(c["command"][2].as<std::string>(), "/models/tiny-llama");
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<std::string>(), "2");
  EXPECT_EQ(c["resources"]["requests"]["nvidia.com/gpu"].as<std::string>(), "2");
  EXPECT_EQ(c["resources"]["requests"]["memory"].as<std::string>(), "4Gi");
  EXPECT_EQ(c["resources"]["limits"]["memory"].as<std::string>(), "20Gi");  // host 4 GiB + /dev/shm 16 GiB
  EXPECT_EQ(c["resources"]["requests"]["cpu"].as<std::string>(), "16");
  EXPECT_EQ(c["ports"][0]["containerPort"].as<int>(), 8080);
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/health");
  EXPECT_EQ(c["volumeMounts"][0]["mountPath"].as<std::string>(), "/models");
  EXPECT_TRUE(c["volumeMounts"][0]["readOnly"].as<bool>());
  EXPECT_EQ(d["spec"]["template"]["spec"]["volumes"][2]["emptyDir"]["medium"].as<std::string>(), "Memory");
  EXPECT_EQ(d["spec"]["template"]["spec"]["volumes"][2]["emptyDir"]["sizeLimit"].as<std::string>(), "16Gi");
  // The Service selects the server pods, not the copy pod.
  const YAML::Node svc = docs["service.yaml"];
  EXPECT_EQ(svc["spec"]["selector"]["app.kubernetes.io/component"].as<std::string>(), "server");
  EXPECT_EQ(docs["model-copy-pod.yaml"]["metadata"]["labels"]["app.kubernetes.io/component"].as<std::string>(), "model-copy");
  EXPECT_EQ(docs["pvc.yaml"]["spec"]["resources"]["requests"]["storage"].as<std::string>(), "4Gi");
}

TEST(Kubernetes, CpuSpecAsksForNoGpu) {
  auto docs = parsed(example_cpu_spec(Target::kKubernetes));
  const YAML::Node pod = docs["deployment.yaml"]["spec"]["template"]["spec"];
  EXPECT_FALSE(pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]);
  EXPECT_FALSE(pod["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]);
  EXPECT_FALSE(pod["tolerations"]);
  EXPECT_EQ(pod["containers"][0]["resources"]["requests"]["memory"].as<std::string>(), "6Gi");
}

TEST(Kubernetes, NoShmVolumeWithoutShm) {
  DeploySpec spec = example_spec(Target::kKubernetes, ApiType::kPlexus);
  spec.plan.shm_bytes = 0;
  auto docs = parsed(spec);
  const YAML::Node pod = docs["deployment.yaml"]["spec"]["template"]["spec"];
  EXPECT_EQ(pod["volumes"].size(), 2u);
  EXPECT_EQ(pod["containers"][0]["resources"]["limits"]["memory"].as<std::string>(), "4Gi");
}

TEST(Kubernetes, UserHomeWins) {
  DeploySpec spec = example_spec(Target::kKubernetes, ApiType::kPlexus);
  spec.env.push_back({"HOME", "/data"});
  auto docs = parsed(spec);
  const YAML::Node env = docs["deployment.yaml"]["spec"]["template"]["spec"]["containers"][0]["env"];
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[1]["name"].as<std::string>(), "HOME");
  EXPECT_EQ(env[1]["value"].as<std::string>(), "/data");
}

TEST(Kubernetes, BadAppNameIsAnInputError) {
  for (const char* name : {"", "Plexus", "9lives", "a_b", "ends-", "x123456789012345678901234567890123456789012345678901234567890abc"}) {
    DeploySpec spec = example_spec(Target::kKubernetes, ApiType::kPlexus);
    spec.app_name = name;
    EXPECT_THROW(kubernetes_files(spec), InputError) << name;
  }
}

}  // namespace
}  // namespace plexus::deploy
