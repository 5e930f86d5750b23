// What deploy reads from the model and the command line besides the plan: whether config.json
// names an embedding model (TEI serves those), the checkpoint's size on disk, the deployment's
// names, and --env / --port checked.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "deploy/deploy_spec.h"

namespace plexus::deploy {

// config.json's architectures[0] ("LlamaForCausalLM", "BertModel", ...); "" when it names none.
// MODEL is a directory or a .gguf file (GGUF files are causal LMs here: "").
std::string model_architecture(const std::string& model);

// An encoder / embedding architecture TEI serves: a base model without an LM head (BertModel,
// XLMRobertaModel, NomicBertModel, MistralModel, ... any "...Model") or a classifier
// ("...ForSequenceClassification", rerankers); not a "...LMHeadModel" (GPT-2), which generates.
bool is_embedding_architecture(const std::string& architecture);

// Bytes of the model on disk: every regular file under the directory (or the .gguf file).
std::int64_t model_disk_bytes(const std::string& model);

// Sets spec.model_path (MODEL absolute and lexically normal, no trailing '/'), model_name (its last
// component), app_name and model_mount. InputError naming MODEL when the path is not UTF-8 (or holds
// NUL), or, for --target docker and compose (spec.target), holds a ':' (SRC:DST:ro cannot mount it).
void set_model_names(DeploySpec& spec, const std::string& model);

// "plexus-<name>" as a DNS-1123 label: lowercase, [a-z0-9-], at most 63 characters, starting and
// ending with a letter or digit.
std::string app_name_for(const std::string& model_name);

// --env K=V: InputError naming the entry when it has no '=', K is not a variable name
// ([A-Za-z_][A-Za-z0-9_]*) or V is not UTF-8. V may hold anything else (each file escapes it).
std::pair<std::string, std::string> parse_env_entry(const std::string& text);

}  // namespace plexus::deploy
