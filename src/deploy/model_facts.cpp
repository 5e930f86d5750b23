// The model's kind and size on disk, the deployment's DNS name, and --env entries.
#include "deploy/model_facts.h"

#include <filesystem>

#include "core/error.h"
#include "core/json.h"
#include "deploy/escape.h"

namespace plexus::deploy {

namespace fs = std::filesystem;

std::string model_architecture(const std::string& model) {
  std::error_code ec;
  if (!fs::is_directory(model, ec)) return "";
  const std::string path = model + "/config.json";
  if (!fs::exists(path, ec)) return "";
  const Json j = read_json_file(path);
  if (j.is_object() && j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string()) {
    return j["architectures"][0].get<std::string>();
  }
  return "";
}

bool is_embedding_architecture(const std::string& a) {
  if (a.empty()) return false;
  if (a.ends_with("ForSequenceClassification")) return true;
  // "BertModel", "XLMRobertaModel", "NomicBertModel", "MistralModel" (e5-mistral), "Qwen2Model"
  // (gte-Qwen2): the base model, no head that generates. "GPT2LMHeadModel", "OpenAIGPTLMHeadModel",
  // "GPT2DoubleHeadsModel" end in "Model" too, but carry a language-model head.
  if (a.find("LMHead") != std::string::npos || a.find("HeadsModel") != std::string::npos) return false;
  return a.ends_with("Model") && a.find("For") == std::string::npos;
}

std::int64_t model_disk_bytes(const std::string& model) {
  std::error_code ec;
  if (fs::is_regular_file(model, ec)) return static_cast<std::int64_t>(fs::file_size(model, ec));
  std::int64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(model, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) total += static_cast<std::int64_t>(it->file_size(e2));
  }
  return total;
}

void set_model_names(DeploySpec& spec, const std::string& model) {
  fs::path abs = fs::absolute(fs::path(model)).lexically_normal();
  if (abs.has_parent_path() && abs.filename().empty()) abs = abs.parent_path();  // "dir/" -> "dir"
  spec.model_path = abs.string();
  check_text(spec.model_path, "MODEL");
  // Docker's --volume and compose's short volume syntax split SRC:DST:MODE at every ':'.
  if ((spec.target == Target::kDocker || spec.target == Target::kCompose) && spec.model_path.find(':') != std::string::npos) {
    throw InputError("MODEL " + one_line(spec.model_path) + " has a ':' in its path, which --target " +
                     std::string(target_name(spec.target)) + " cannot mount (SRC:DST:ro): move or link the model to a path without ':'");
  }
  spec.model_name = abs.filename().string();
  spec.app_name = app_name_for(spec.model_name);
  spec.model_mount = "/models/" + spec.model_name;
}

std::string app_name_for(const std::string& model_name) {
  std::string label = "plexus-";
  for (char c : model_name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (ok) {
      label += c;
    } else if (label.back() != '-') {
      label += '-';
    }
  }
  if (label.size() > 63) label.resize(63);
  while (label.back() == '-') label.pop_back();
  return label;
}

std::pair<std::string, std::string> parse_env_entry(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) {
    throw InputError("--env " + one_line(text) + " has no '=': give NAME=VALUE (e.g. --env HF_HUB_OFFLINE=1)");
  }
  const std::string name = text.substr(0, eq);
  bool ok = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) ok = false;
  }
  if (!ok) {
    throw InputError("--env " + one_line(text) + ": '" + one_line(name) + "' is not an environment variable name (letters, digits and _, not starting with a digit)");
  }
  std::string value = text.substr(eq + 1);
  check_text(value, "--env " + name);
  return {name, std::move(value)};
}

}  // namespace plexus::deploy
