// The kubernetes target: a Deployment (nvidia.com/gpu limits, /dev/shm as a memory emptyDir,
// startup, readiness and liveness probes on /health, requests from the plan's host memory), a
// Service, a PersistentVolumeClaim holding the model and a pod that copies the model into it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

// pvc.yaml, model-copy-pod.yaml, deployment.yaml, service.yaml (one object each; docs/deploy.md
// "kubernetes" gives the order to apply them). InputError when spec.app_name is not a DNS-1035
// label (Service names must be one).
std::vector<GeneratedFile> kubernetes_files(const DeploySpec& spec);

// A byte count as a Kubernetes quantity, rounded up to whole MiB: "4Gi" when it is whole GiB,
// else "1536Mi"; "0" for 0.
std::string k8s_bytes_quantity(std::int64_t bytes);

// The model volume's size: the checkpoint plus a quarter for filesystem overhead and files added
// later, rounded up to whole GiB, at least 1Gi.
std::string k8s_model_volume_quantity(std::int64_t model_bytes);

}  // namespace plexus::deploy
