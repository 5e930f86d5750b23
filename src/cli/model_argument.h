// The MODEL argument of every command that takes a model: a local directory or file, or a
// Hugging Face id (org/name) in the local Hugging Face cache, with --revision (model/model_location.h).
#pragma once
#include <string>

#include "core/args.h"
#include "model/model_location.h"

namespace plexus::cli {

// Declares the positional `name` (with `help`) and --revision.
void add_model_argument(Args& args, const std::string& name, const std::string& help);

// The local path the argument names, checked for what the command `needs`: InputError (exit 2)
// naming the path and what is missing, or for an id where plexus looked and how to download it.
std::string model_argument(const Args& args, ModelNeeds needs, const std::string& name = "MODEL");

}  // namespace plexus::cli
