// Where a command's MODEL argument points: a local directory or file, or a Hugging Face model id
// (`org/name`, with a revision) found offline in the local Hugging Face cache, laid out as
// huggingface_hub lays it out; and the errors that say what is missing where.
#pragma once
#include <optional>
#include <string>

namespace plexus {

// The Hugging Face hub cache as huggingface_hub finds it: HF_HUB_CACHE, else the older
// HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub (a leading ~ expanded). `source` says which of these decided it.
struct HubCache {
  std::string dir;
  std::string source;  // "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME" or "the default"
};
HubCache hub_cache();

// "org/name" as the Hub spells a repository id: two parts of letters, digits, '.', '_', '-', not
// starting with '.' or '-', without "--" or "..". A path-looking argument (starting with '/', '.'
// or '~', ending with '/', naming a file (.gguf, .json, .safetensors), or whose first part is a
// local directory, like models/x) never is one.
bool looks_like_hub_id(const std::string& text);

// What a command needs in the model directory.
enum class ModelNeeds {
  kFiles,    // the path itself (tokenize, chat-template: tokenizer files, or a .gguf)
  kConfig,   // config.json, or a .gguf (plan, estimate)
  kWeights,  // config.json and model.safetensors / model.safetensors.index.json, or a .gguf (runs)
};

// MODEL as given → a local path. A local file or directory of that name comes first (a
// `revision` then is bad input); else a Hugging Face id resolves to snapshots/COMMIT of
// models--ORG--NAME in hub_cache(), COMMIT read from refs/REVISION (default "main") or REVISION
// itself when it is a commit with a snapshot. Then what `needs` asks for is checked. InputError
// (exit 2) otherwise, naming the path and what is missing, or for an id, where plexus looked and
// the command that downloads it.
std::string locate_model(const std::string& model, const std::optional<std::string>& revision, ModelNeeds needs);

// The InputError for a MODEL path that does not exist: "no such directory" naming its nearest
// sibling for a path, the Hugging Face cache for an id (where the id's snapshot is, when a caller
// that reads local paths only, such as deploy, is given one the cache holds).
[[noreturn]] void throw_model_not_found(const std::string& model);

}  // namespace plexus
