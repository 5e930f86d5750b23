// MODEL arguments → local paths: local directories and files first, then Hugging Face ids in the
// local hub cache (models--ORG--NAME/refs/REVISION → snapshots/COMMIT/, files linked into blobs/).
#include "model/model_location.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/gguf_file.h"
#include "core/nearest_name.h"
#include "model/config.h"

namespace plexus {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

// "~" and "~/x" as the shell (and Python's expanduser) reads them.
std::string expand_home(const std::string& path) {
  if (path != "~" && path.rfind("~/", 0) != 0) return path;
  return env("HOME").value_or("") + path.substr(1);
}

// One path component: not empty, not "." or "..", no '/' (nor NUL).
bool is_path_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

bool hub_name_part(const std::string& part) {
  if (part.empty() || part.size() > 96 || part[0] == '.' || part[0] == '-') return false;
  if (part.find("--") != std::string::npos || part.find("..") != std::string::npos) return false;
  return std::all_of(part.begin(), part.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}

std::string download_command(const std::string& id, const std::optional<std::string>& revision) {
  const std::string args = id + (revision ? " --revision " + *revision : "");
  return "download it with `hf download " + args + "` (huggingface_hub; older versions: `huggingface-cli download " + args +
         "`), or pass a local directory";
}

std::string where_the_cache_is(const HubCache& c) {
  return "the Hugging Face cache " + c.dir + " (" + (c.source == "the default" ? "the default; HF_HUB_CACHE or HF_HOME move it" : "from " + c.source) + ")";
}

// Names under `dir` (files, recursively: refs/pr/1), sorted, for a message; "none" when empty.
std::string names_under(const fs::path& dir, bool files) {
  std::vector<std::string> names;
  std::error_code ec;
  if (files) {
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec)) names.push_back(it->path().lexically_relative(dir).string());
    }
  } else {
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// snapshots/COMMIT of `id` at `revision` in the hub cache; InputError saying what is missing.
std::string hub_snapshot(const std::string& id, const std::optional<std::string>& revision) {
  const HubCache cache = hub_cache();
  const fs::path repo = fs::path(cache.dir) / ("models--" + id.substr(0, id.find('/')) + "--" + id.substr(id.find('/') + 1));
  const std::string rev = revision.value_or("main");
  // A branch or tag is a file under refs/ (one with '/', such as refs/pr/1, in folders), a commit
  // a folder of snapshots/: never "." or "..", which would name refs/ or snapshots/ itself or
  // leave the repository.
  for (std::size_t start = 0;;) {
    const std::size_t slash = rev.find('/', start);
    if (!is_path_name(rev.substr(start, slash == std::string::npos ? std::string::npos : slash - start))) {
      throw InputError("--revision '" + rev + "': a branch, tag or commit of " + id + " (e.g. main, or a 40-digit commit hash)");
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  std::error_code ec;
  if (!fs::is_directory(repo, ec)) {
    throw InputError("model '" + id + "' is neither a local directory nor in " + where_the_cache_is(cache) + ": looked for " +
                     repo.string() + "; " + download_command(id, revision));
  }
  const fs::path ref = repo / "refs" / rev;
  if (fs::is_regular_file(ref, ec)) {
    std::ifstream in(ref);
    std::string commit;
    in >> commit;
    const fs::path snapshot = repo / "snapshots" / commit;
    if (!is_path_name(commit)) {
      throw InputError(ref.string() + " names commit '" + commit + "', which is not a commit (a folder name of " +
                       (repo / "snapshots").string() + "): the Hugging Face cache of " + id + " is damaged; " +
                       download_command(id, revision));
    }
    if (!fs::is_directory(snapshot, ec)) {
      throw InputError(ref.string() + " names commit '" + commit + "', but " + snapshot.string() +
                       " is missing: the Hugging Face cache of " + id + " is incomplete; " + download_command(id, revision));
    }
    return snapshot.string();
  }
  const fs::path snapshot = repo / "snapshots" / rev;
  if (rev.find('/') == std::string::npos && fs::is_directory(snapshot, ec)) return snapshot.string();  // a commit hash given as the revision
  throw InputError("model '" + id + "' has no revision '" + rev + "' in " + where_the_cache_is(cache) + ": " +
                   (repo / "refs").string() + " holds " + names_under(repo / "refs", true) + ", " + (repo / "snapshots").string() +
                   " holds " + names_under(repo / "snapshots", false) + "; " + download_command(id, revision));
}

// What `needs` asks of an existing `path`; InputError naming the path and what is missing.
void check_model_files(const std::string& path, ModelNeeds needs) {
  if (needs == ModelNeeds::kFiles) return;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (needs == ModelNeeds::kWeights && !path.ends_with(".gguf") && !GgufFile::is_gguf(path)) {
      throw InputError("model '" + path + "' is a file but not a GGUF file: give a model directory (config.json + "
                       "model.safetensors) or a .gguf file");
    }
    return;  // config.json itself (plan, estimate), or a GGUF file, read by the loader
  }
  const fs::path dir(path);
  if (!fs::exists(dir / "config.json", ec)) {
    throw InputError("'" + path + "' is not a model directory: it has no config.json (plexus reads a directory with "
                     "config.json and model.safetensors, or a .gguf file)");
  }
  if (needs == ModelNeeds::kWeights && !fs::exists(dir / "model.safetensors", ec) &&
      !fs::exists(dir / "model.safetensors.index.json", ec)) {
    throw InputError("'" + path + "' has config.json but no weights (model.safetensors or model.safetensors.index.json)");
  }
}

}  // namespace

HubCache hub_cache() {
  if (auto v = env("HF_HUB_CACHE")) return {expand_home(*v), "HF_HUB_CACHE"};
  if (auto v = env("HUGGINGFACE_HUB_CACHE")) return {expand_home(*v), "HUGGINGFACE_HUB_CACHE"};
  if (auto v = env("HF_HOME")) return {(fs::path(expand_home(*v)) / "hub").string(), "HF_HOME"};
  if (auto v = env("XDG_CACHE_HOME")) return {(fs::path(expand_home(*v)) / "huggingface" / "hub").string(), "XDG_CACHE_HOME"};
  return {(fs::path(env("HOME").value_or("")) / ".cache" / "huggingface" / "hub").string(), "the default"};
}

bool looks_like_hub_id(const std::string& text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos || text.find('/', slash + 1) != std::string::npos) return false;
  const std::string org = text.substr(0, slash);
  if (!hub_name_part(org) || !hub_name_part(text.substr(slash + 1))) return false;
  for (const char* file : {".gguf", ".json", ".safetensors"}) {
    if (text.ends_with(file)) return false;  // a file's name, not a repository's
  }
  std::error_code ec;
  return !fs::is_directory(org, ec);  // models/x is a path when ./models is a directory
}

void throw_model_not_found(const std::string& model) {
  if (looks_like_hub_id(model)) {
    const std::string snapshot = hub_snapshot(model, std::nullopt);  // throws unless the cache holds it
    throw InputError("model '" + model + "' is in the Hugging Face cache, but this command reads a local path only: pass " +
                     snapshot);
  }
  const fs::path path(model);
  fs::path parent = path.parent_path();
  const std::string shown_parent = parent.empty() ? "." : parent.string();
  if (parent.empty()) parent = ".";
  const std::string what = model.ends_with(".gguf") ? "no such GGUF file" : "no such directory";
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) {
    throw InputError("model '" + model + "' not found: " + what + " ('" + shown_parent + "' does not exist either); expected a " +
                     "directory with config.json and model.safetensors, or a .gguf file");
  }
  std::vector<std::string> siblings;
  for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    siblings.push_back(it->path().filename().string());
  }
  const std::string near = nearest_name(path.filename().string(), siblings);
  const std::string hint = near.empty() ? "" : " (did you mean '" + (path.parent_path() / near).string() + "'?)";
  throw InputError("model '" + model + "' not found: " + what + hint + "; expected a directory with config.json and "
                   "model.safetensors, or a .gguf file");
}

std::string locate_model(const std::string& model, const std::optional<std::string>& revision, ModelNeeds needs) {
  if (model.empty()) throw InputError("MODEL is empty: give a model directory, a .gguf file or a Hugging Face id (org/name)");
  std::error_code ec;
  if (fs::exists(model, ec)) {
    if (revision) {
      throw InputError("--revision " + *revision + " selects a revision of a Hugging Face model id, but '" + model +
                       "' is a local " + (fs::is_directory(model, ec) ? "directory" : "file") + ": leave --revision out");
    }
    check_model_files(model, needs);
    return model;
  }
  if (!looks_like_hub_id(model)) {
    if (revision) throw InputError("--revision " + *revision + ": '" + model + "' is not a Hugging Face model id (org/name)");
    throw_model_not_found(model);
  }
  const std::string snapshot = hub_snapshot(model, revision);
  try {
    check_model_files(snapshot, needs);
  } catch (const InputError& e) {
    throw InputError(std::string(e.what()) + ": the Hugging Face cache holds only part of " + model + "; " +
                     download_command(model, revision));
  }
  return snapshot;
}

void require_model_path(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw_model_not_found(path);
}

}  // namespace plexus
