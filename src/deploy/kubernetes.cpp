// Kubernetes manifests for a deployment: one object per file, built as ordered JSON and written as
// YAML. Field names and semantics from the Kubernetes API reference (docs/deploy.md cites them).
#include "deploy/kubernetes.h"

#include <algorithm>

#include "core/error.h"
#include "deploy/container_common.h"
#include "deploy/deploy_plan.h"
#include "deploy/engine_command.h"
#include "deploy/escape.h"
#include "deploy/yaml_text.h"

namespace plexus::deploy {

namespace {

constexpr std::int64_t kMiB = 1LL << 20;
// The containers run as the plexus image's non-root user (kImageUid); other engines' images run
// any uid once $HOME is writable.
constexpr const char* kHome = "/home/server";
constexpr const char* kPortName = "http";
// Loading a model (reading weights from a network volume, vLLM's compile and CUDA graphs) may take
// many minutes: the startup probe allows 30 minutes before liveness takes over.
constexpr int kStartupPeriodS = 10;
constexpr int kStartupFailures = 180;
constexpr const char* kCopyImage = "busybox:1.36";

// Service names are DNS-1035 labels: lower-case letters, digits and '-', a letter first, no '-'
// last, at most 63 characters. Every other name here is app_name plus a suffix (DNS-1123 subdomain).
void check_app_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 63 && name.front() >= 'a' && name.front() <= 'z' && name.back() != '-';
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) ok = false;
  }
  if (!ok) {
    throw InputError("kubernetes: the app name '" + name +
                     "' is not a DNS-1035 label (lower-case letters, digits and '-', a letter first, at most 63 "
                     "characters): rename the model directory or give a name that is one");
  }
}

std::string parent_dir(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return path;  // "/name": mount the volume there
  return path.substr(0, slash);
}

YamlDoc labels(const DeploySpec& spec, const char* component) {
  return YamlDoc{{"app.kubernetes.io/name", spec.app_name}, {"app.kubernetes.io/component", component}};
}

YamlDoc metadata(const std::string& name, const DeploySpec& spec, const char* component) {
  return YamlDoc{{"name", name}, {"labels", labels(spec, component)}};
}

std::string pvc_name(const DeploySpec& spec) { return spec.app_name + "-model"; }
std::string copy_pod_name(const DeploySpec& spec) { return spec.app_name + "-model-copy"; }

// Non-root, no privilege escalation, no capabilities, the runtime's seccomp profile: the Pod
// Security Standards' "restricted" profile.
YamlDoc container_security() {
  return YamlDoc{{"allowPrivilegeEscalation", false},
                 {"capabilities", {{"drop", YamlDoc::array({"ALL"})}}},
                 {"runAsNonRoot", true},
                 {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

// `writable_volumes`: fsGroup makes the volumes group-writable by the pod's group (the copy pod
// fills a freshly provisioned, root-owned volume); the server only reads its volume.
YamlDoc pod_security(bool writable_volumes) {
  YamlDoc s{{"runAsUser", kImageUid}, {"runAsGroup", kImageUid}};
  if (writable_volumes) s["fsGroup"] = kImageUid;
  s["runAsNonRoot"] = true;
  return s;
}

YamlDoc http_probe(int period_s, int failures) {
  return YamlDoc{{"httpGet", {{"path", kHealthPath}, {"port", kPortName}}},
                 {"periodSeconds", period_s},
                 {"timeoutSeconds", 5},
                 {"failureThreshold", failures}};
}

// The toleration of the nvidia.com/gpu taint that GPU node pools carry on GKE and AKS (and that
// the NVIDIA GPU operator documents); harmless where no node has it.
YamlDoc gpu_tolerations() {
  return YamlDoc::array({YamlDoc{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
}

// Comment lines above a manifest (a line break or control in a name or path is escaped: one_line).
std::string header(const std::string& what, const std::vector<std::string>& lines) {
  std::string out = "# " + one_line(what) + "\n";
  for (const std::string& l : lines) out += "#   " + one_line(l) + "\n";
  return out;
}

std::string pvc_yaml(const DeploySpec& spec) {
  YamlDoc doc{{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata", metadata(pvc_name(spec), spec, "model")},
              {"spec",
               {{"accessModes", YamlDoc::array({"ReadWriteOnce"})},
                {"resources", {{"requests", {{"storage", k8s_model_volume_quantity(spec.plan.model_bytes)}}}}}}}};
  return header("The volume holding the model " + spec.model_name + " (" + k8s_bytes_quantity(spec.plan.model_bytes) +
                    " on disk), in the cluster's default StorageClass.",
                {"ReadWriteOnce: every provisioner offers it; the copy pod writes the model once, the server mounts it read-only.",
                 "Add spec.storageClassName to choose another class."}) +
         to_yaml(doc);
}

// A pod that mounts the volume writable so that `kubectl cp` can fill it (busybox has the tar
// that kubectl cp runs), then waits; deleted once the copy is done.
std::string copy_pod_yaml(const DeploySpec& spec) {
  const std::string mount_dir = parent_dir(spec.model_mount);
  YamlDoc container{{"name", "copy"},
                    {"image", kCopyImage},
                    {"command", YamlDoc::array({"sleep", "86400"})},
                    {"securityContext", container_security()},
                    {"volumeMounts", YamlDoc::array({YamlDoc{{"name", "model"}, {"mountPath", mount_dir}}})}};
  YamlDoc doc{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", metadata(copy_pod_name(spec), spec, "model-copy")},
              {"spec",
               {{"restartPolicy", "Never"},
                {"securityContext", pod_security(true)},
                {"containers", YamlDoc::array({container})},
                {"volumes",
                 YamlDoc::array({YamlDoc{{"name", "model"}, {"persistentVolumeClaim", {{"claimName", pvc_name(spec)}}}}})}}}};
  const std::string pod = copy_pod_name(spec);
  return header("Copies the model into the volume, before the server starts:",
                {"kubectl apply -f pvc.yaml -f model-copy-pod.yaml",
                 "kubectl wait --for=condition=Ready pod/" + pod + " --timeout=300s",
                 "kubectl cp " + shell_quote(spec.model_path) + " " + shell_quote(pod + ":" + spec.model_mount),
                 "kubectl delete -f model-copy-pod.yaml"}) +
         to_yaml(doc);
}

std::string deployment_yaml(const DeploySpec& spec) {
  const PlanNumbers& plan = spec.plan;
  const int gpus = static_cast<int>(spec.devices.gpus.size());

  YamlDoc command = YamlDoc::array();
  for (const std::string& word : server_command(spec, spec.model_mount)) command.push_back(word);

  // $HOME on a writable emptyDir: vLLM, Triton and the Hugging Face libraries keep caches there,
  // and images whose user is root have no home the non-root uid can write.
  YamlDoc env = YamlDoc::array();
  bool user_home = false;
  for (const auto& [key, value] : spec.env) user_home = user_home || key == "HOME";
  if (!user_home) env.push_back(YamlDoc{{"name", "HOME"}, {"value", kHome}});
  for (const auto& [key, value] : spec.env) env.push_back(YamlDoc{{"name", key}, {"value", value}});

  // Requests: the plan's host memory and the cores asked for. The memory limit adds /dev/shm,
  // whose pages count against the container's memory; no CPU limit (throttling stalls decoding).
  YamlDoc requests{{"cpu", std::to_string(spec.cpus)}, {"memory", k8s_bytes_quantity(plan.host_memory_bytes)}};
  YamlDoc limits{{"memory", k8s_bytes_quantity(plan.host_memory_bytes + plan.shm_bytes)}};
  if (gpus > 0) {
    // Extended resources: the request must equal the limit (the device plugin allocates whole GPUs).
    requests["nvidia.com/gpu"] = std::to_string(gpus);
    limits["nvidia.com/gpu"] = std::to_string(gpus);
  }

  YamlDoc mounts = YamlDoc::array(
      {YamlDoc{{"name", "model"}, {"mountPath", parent_dir(spec.model_mount)}, {"readOnly", true}},
       YamlDoc{{"name", "home"}, {"mountPath", kHome}}});
  YamlDoc volumes = YamlDoc::array(
      {YamlDoc{{"name", "model"}, {"persistentVolumeClaim", {{"claimName", pvc_name(spec)}, {"readOnly", true}}}},
       YamlDoc{{"name", "home"}, {"emptyDir", YamlDoc::object()}}});
  if (plan.shm_bytes > 0) {
    // /dev/shm (NCCL and the engines' worker processes share tensors there): the runtime's
    // default is 64 MiB.
    mounts.push_back(YamlDoc{{"name", "shm"}, {"mountPath", "/dev/shm"}});
    volumes.push_back(YamlDoc{{"name", "shm"},
                              {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", k8s_bytes_quantity(plan.shm_bytes)}}}});
  }

  YamlDoc container{{"name", "server"},
                    {"image", spec.image},
                    {"imagePullPolicy", "IfNotPresent"},
                    {"command", command},
                    {"ports", YamlDoc::array({YamlDoc{{"name", kPortName}, {"containerPort", spec.port}, {"protocol", "TCP"}}})},
                    {"env", env},
                    {"resources", {{"requests", requests}, {"limits", limits}}},
                    {"volumeMounts", mounts},
                    {"startupProbe", http_probe(kStartupPeriodS, kStartupFailures)},
                    {"readinessProbe", http_probe(10, 3)},
                    {"livenessProbe", http_probe(20, 3)},
                    {"securityContext", container_security()}};

  YamlDoc pod_spec{{"securityContext", pod_security(false)}, {"containers", YamlDoc::array({container})}, {"volumes", volumes}};
  if (gpus > 0) pod_spec["tolerations"] = gpu_tolerations();

  YamlDoc meta = metadata(spec.app_name, spec, "server");
  meta["annotations"] = YamlDoc{{"plexus-plan", plan.summary}};
  YamlDoc doc{{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", meta},
              {"spec",
               {{"replicas", 1},
                // The old pod's GPUs are freed before the new pod asks for them.
                {"strategy", {{"type", "Recreate"}}},
                {"selector", {{"matchLabels", labels(spec, "server")}}},
                {"template", {{"metadata", {{"labels", labels(spec, "server")}}}, {"spec", pod_spec}}}}}};
  std::string what = "The server: " + std::string(api_type_name(spec.api_type)) + " on " +
                     (gpus > 0 ? std::to_string(gpus) + " GPU" + (gpus > 1 ? "s" : "") : std::string("CPUs")) +
                     ", the model read-only at " + spec.model_mount + ".";
  return header(what, {"Plan: " + plan.summary,
                       "kubectl apply -f deployment.yaml -f service.yaml",
                       "kubectl rollout status deployment/" + spec.app_name + " --timeout=30m"}) +
         to_yaml(doc);
}

std::string service_yaml(const DeploySpec& spec) {
  YamlDoc doc{{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", metadata(spec.app_name, spec, "server")},
              {"spec",
               {{"type", "ClusterIP"},
                {"selector", labels(spec, "server")},
                {"ports", YamlDoc::array({YamlDoc{{"name", kPortName},
                                                  {"port", spec.port},
                                                  {"targetPort", kPortName},
                                                  {"protocol", "TCP"}}})}}}};
  const std::string port = std::to_string(spec.port);
  return header("The server inside the cluster at http://" + spec.app_name + ":" + port + "; from your machine:",
                {"kubectl port-forward service/" + spec.app_name + " " + port + ":" + port}) +
         to_yaml(doc);
}

}  // namespace

std::string k8s_bytes_quantity(std::int64_t bytes) {
  if (bytes <= 0) return "0";
  const std::int64_t mib = (bytes + kMiB - 1) / kMiB;
  if (mib % 1024 == 0) return std::to_string(mib / 1024) + "Gi";
  return std::to_string(mib) + "Mi";
}

std::string k8s_model_volume_quantity(std::int64_t model_bytes) {
  const std::int64_t with_headroom = model_bytes + model_bytes / 4;
  const std::int64_t gib = std::max<std::int64_t>(1, (with_headroom + kGiB - 1) / kGiB);
  return std::to_string(gib) + "Gi";
}

std::vector<GeneratedFile> kubernetes_files(const DeploySpec& spec) {
  check_app_name(spec.app_name);
  return {{"pvc.yaml", pvc_yaml(spec), false},
          {"model-copy-pod.yaml", copy_pod_yaml(spec), false},
          {"deployment.yaml", deployment_yaml(spec), false},
          {"service.yaml", service_yaml(spec), false}};
}

}  // namespace plexus::deploy
