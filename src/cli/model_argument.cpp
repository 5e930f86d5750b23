// The MODEL argument: local paths first, then Hugging Face ids in the local cache.
#include "cli/model_argument.h"

namespace plexus::cli {

void add_model_argument(Args& args, const std::string& name, const std::string& help) {
  args.positional(name, help + "; or a Hugging Face id (org/name) already in the local Hugging Face cache")
      .option("--revision", "REV", "with a Hugging Face id: the branch, tag or commit to use (default: main)");
}

std::string model_argument(const Args& args, ModelNeeds needs, const std::string& name) {
  return locate_model(args.get(name), args.get_optional("--revision"), needs);
}

}  // namespace plexus::cli
