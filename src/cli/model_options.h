// Options shared by the commands that load and run a model (generate, perplexity, ...):
// declared once, read once.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/device_registry.h"
#include "cli/plan_options.h"
#include "core/args.h"
#include "exec/model_run.h"
#include "runtime/engine.h"
#include "runtime/runner.h"
#include "tokenizer/tokenizer.h"

namespace plexus::cli {

// Adds --threads and --batch-tokens to `args`.
void add_engine_options(Args& args);
EngineOptions engine_options(const Args& args);

// Adds the engine options, the planning options of `plexus plan` (devices, budgets, strategy,
// device map; `choices.runs` is set here), --wait, --micro-batch and --verbose: the run commands'
// option group.
void add_run_options(Args& args, PlanFlagChoices choices = {});

// What runs the model (exec/model_run.h), from the run options: without device options
// (--virtual-devices, --max-memory, --devices, --device-map) an Executor of one stage on the
// host; with them, the plan they describe run by an Executor across the devices. `share`: one of several replicas side by
// side in this process (plexus batch), see ReplicaShare.
using plexus::ModelRun;
using plexus::ReplicaShare;
RunInputs run_inputs_from(const Args& args);
// `run_context` > 0: the longest sequence this run holds (prompt + max tokens), so that scratch
// is sized by the run, not by config.json's max_position_embeddings (0: the model's context).
// `mpi`: this process is one rank of a tensor-parallel group across processes (cli/mpi_tensor.h).
class MpiTensorGroup;
std::unique_ptr<ModelRun> open_model_run(const Args& args, const std::string& model_dir, const ReplicaShare& share = {},
                                         std::int64_t run_context = 0, MpiTensorGroup* mpi = nullptr);

// The model directory's tokenizer, or null when it has none.
std::unique_ptr<Tokenizer> load_tokenizer_if_any(const std::string& model_dir);

// Token ids from --ids LIST, or from text through the tokenizer (InputError when text is
// given and the model has no tokenizer.json). Exactly one source must be given.
std::vector<std::int32_t> ids_from_ids_option(const std::string& list);
std::vector<std::int32_t> ids_from_text(const Tokenizer* tokenizer, const std::string& text,
                                        const std::string& model_dir, const std::string& option);

// InputError "WHAT: not valid UTF-8 at byte offset N (byte 0xXX): ..." unless `text` is UTF-8.
void check_utf8(const std::string& text, const std::string& what);
// The file's text, checked as above with "OPTION PATH" named.
std::string read_utf8_file(const std::string& path, const std::string& option);


}  // namespace plexus::cli
