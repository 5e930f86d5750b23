// Names of targets and api types, and each engine's published image.
#include "deploy/deploy_spec.h"

#include "core/error.h"

namespace plexus::deploy {

std::string_view target_name(Target t) {
  switch (t) {
    case Target::kDocker: return "docker";
    case Target::kCompose: return "compose";
    case Target::kKubernetes: return "kubernetes";
    case Target::kSlurm: return "slurm";
  }
  return "?";
}

std::string_view api_type_name(ApiType a) {
  switch (a) {
    case ApiType::kPlexus: return "plexus";
    case ApiType::kVllm: return "vllm";
    case ApiType::kTgi: return "tgi";
    case ApiType::kTei: return "tei";
  }
  return "?";
}

std::string_view api_type_label(ApiType a) {
  switch (a) {
    case ApiType::kPlexus: return "plexus";
    case ApiType::kVllm: return "vLLM";
    case ApiType::kTgi: return "TGI";
    case ApiType::kTei: return "TEI";
  }
  return "?";
}

Target parse_target(std::string_view text) {
  for (Target t : {Target::kDocker, Target::kCompose, Target::kKubernetes, Target::kSlurm}) {
    if (text == target_name(t)) return t;
  }
  throw InputError("--target " + std::string(text) + " is not a deployment target: give " + kTargetChoices);
}

ApiType parse_api_type(std::string_view text) {
  for (ApiType a : {ApiType::kPlexus, ApiType::kVllm, ApiType::kTgi, ApiType::kTei}) {
    if (text == api_type_name(a)) return a;
  }
  throw InputError("--api-type " + std::string(text) + " is not a server plexus deploys: give " + kApiTypeChoices);
}

std::string default_image(ApiType a) {
  switch (a) {
    case ApiType::kPlexus: return "plexus:latest";
    case ApiType::kVllm: return "vllm/vllm-openai:latest";
    case ApiType::kTgi: return "ghcr.io/huggingface/text-generation-inference:latest";
    case ApiType::kTei: return "ghcr.io/huggingface/text-embeddings-inference:latest";
  }
  return "";
}

}  // namespace plexus::deploy
