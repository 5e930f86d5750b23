// Options shared by the commands that load and run a model (generate, perplexity, ...):
// declared once, read once.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/device_registry.h"
#include "core/args.h"
#include "exec/executor.h"
#include "runtime/engine.h"
#include "runtime/runner.h"
#include "tokenizer/tokenizer.h"

namespace plexus::cli {

// Adds --threads and --batch-tokens to `args`.
void add_engine_options(Args& args);
EngineOptions engine_options(const Args& args);

// Adds the engine options, the planning options of `plexus plan` (devices, budgets, strategy,
// device map) and --micro-batches, --verbose: the run commands' option group.
void add_run_options(Args& args);

// What runs the model. Without device options (--virtual-devices, --max-memory, --devices,
// --device-map): one Engine, exactly as before. With them: the plan they describe, run by an
// Executor across the devices (virtual CPU devices today).
struct ModelRun {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Runner> engine_runner;
  DeviceRegistry devices;
  std::unique_ptr<Executor> executor;  // after `devices`: destroyed first
  Runner* runner = nullptr;
  std::string plan_text;  // budgets, plan table and stages (multi-device runs)
  int threads = 0;
  std::string isa;
};
// One of `count` replicas run side by side in this process (plexus batch): it gets
// 1/count of the threads and, on several devices, the index-th of `count` equal groups of the
// accelerators, renumbered from 0 (and 1/count of the cpu budget).
struct ReplicaShare {
  int index = 0;
  int count = 1;
};
std::unique_ptr<ModelRun> open_model_run(const Args& args, const std::string& model_dir, const ReplicaShare& share = {});

// The model directory's tokenizer, or null when it has none.
std::unique_ptr<Tokenizer> load_tokenizer_if_any(const std::string& model_dir);

// Token ids from --ids LIST, or from text through the tokenizer (InputError when text is
// given and the model has no tokenizer.json). Exactly one source must be given.
std::vector<std::int32_t> ids_from_ids_option(const std::string& list);
std::vector<std::int32_t> ids_from_text(const Tokenizer* tokenizer, const std::string& text,
                                        const std::string& model_dir, const std::string& option);


}  // namespace plexus::cli
