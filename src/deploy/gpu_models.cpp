// The table of GPU models (docs/deploy.md: "CUDA architectures" and "slurm").
#include "deploy/gpu_models.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "deploy/escape.h"

namespace plexus::deploy {

namespace {

// Compute capabilities from NVIDIA's CUDA GPUs table (developer.nvidia.com/cuda-gpus). Slurm's
// GPU types are whatever a site's gres.conf names them; the lowercase model is the common choice
// (`--gpu-type` overrides it). Keys that hold another key come first ("gh200" before "h200",
// "a100" before "a10", "l40s" before "l40" before "l4").
constexpr GpuModel kModels[] = {
    {"gh200", "90", "gh200"},      {"h200", "90", "h200"},       {"h100", "90", "h100"},
    {"h800", "90", "h800"},        {"gb200", "100", "gb200"},    {"b200", "100", "b200"},
    {"a100", "80", "a100"},        {"a800", "80", "a800"},       {"a30", "80", "a30"},
    {"a40", "86", "a40"},          {"a10", "86", "a10"},         {"l40s", "89", "l40s"},
    {"l40", "89", "l40"},          {"l4", "89", "l4"},           {"rtx 4090", "89", "rtx_4090"},
    {"rtx 6000 ada", "89", "rtx_6000_ada"}, {"rtx 3090", "86", "rtx_3090"}, {"rtx a6000", "86", "rtx_a6000"},
    {"v100", "70", "v100"},        {"t4", "75", "t4"},
};

bool whole_word_at(const std::string& name, std::size_t at, std::size_t length) {
  const bool start = at == 0 || !std::isalnum(static_cast<unsigned char>(name[at - 1]));
  const std::size_t end = at + length;
  return start && (end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end])));
}

}  // namespace

const GpuModel* gpu_model_of(const std::string& gpu_name) {
  std::string name = gpu_name;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const GpuModel& m : kModels) {
    const std::string key(m.key);
    for (std::size_t at = name.find(key); at != std::string::npos; at = name.find(key, at + 1)) {
      if (whole_word_at(name, at, key.size())) return &m;
    }
  }
  return nullptr;
}

SlurmGpuType slurm_gpu_type(const std::vector<SelectedGpu>& gpus, const std::optional<std::string>& flag) {
  SlurmGpuType out;
  if (flag) {
    const std::string& t = *flag;
    const bool ok = !t.empty() && t.size() <= 64 && std::all_of(t.begin(), t.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    });
    if (!ok) {
      throw InputError("--gpu-type '" + one_line(t) + "' is no Slurm GPU type: give the type your cluster's gres.conf names "
                       "(letters, digits, '_', '.', '-'; `sinfo -o \"%N %G\"` lists them), or none");
    }
    if (gpus.empty()) throw InputError("--gpu-type " + t + ": the deployment has no GPU (CPU only)");
    if (t != "none") out.type = t;
    out.reason = t == "none" ? "no GPU type (--gpu-type none)" : "GPU type " + t + " as --gpu-type named it";
    return out;
  }
  if (gpus.empty()) return out;
  const GpuModel* model = nullptr;
  for (const SelectedGpu& g : gpus) {
    const GpuModel* m = gpu_model_of(g.name);
    if (!m) {
      out.reason = "no GPU type: plexus does not know the model of GPU " + std::to_string(g.index) + " (" + one_line(g.name) +
                   "); --gpu-type TYPE names it";
      return out;
    }
    if (model && m != model) {
      out.reason = std::string("no GPU type: the selected GPUs are of different models (") + model->gres_type + ", " + m->gres_type +
                   "); --gpu-type TYPE names one";
      return out;
    }
    model = m;
  }
  out.type = model->gres_type;
  out.reason = "GPU type " + out.type + " from the inventory's \"" + one_line(gpus.front().name) +
               "\" (docs/deploy.md#slurm; --gpu-type overrides it, --gpu-type none leaves it out)";
  return out;
}

}  // namespace plexus::deploy
