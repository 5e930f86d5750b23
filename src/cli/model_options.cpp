// Shared model-loading options of the run commands.
#include "cli/model_options.h"

#include <algorithm>
#include <limits>
#include <thread>

#include "runtime/engine_runner.h"

#include "cli/plan_options.h"
#include "core/error.h"
#include "exec/run_devices.h"
#include "planner/plan_report.h"

namespace plexus::cli {

void add_engine_options(Args& args) {
  args.option("--threads", "N", "CPU threads (0: one per hardware thread)", "0")
      .option("--batch-tokens", "N", "tokens per forward pass when prefilling (larger uses more memory)", "256");
}

EngineOptions engine_options(const Args& args) {
  EngineOptions o;
  const long long threads = args.get_int("--threads");
  if (threads < 0 || threads > 1024) throw InputError("--threads must be between 0 and 1024, got " + std::to_string(threads));
  o.threads = static_cast<int>(threads);
  o.max_batch_tokens = args.get_int("--batch-tokens");
  if (o.max_batch_tokens < 1 || o.max_batch_tokens > 65536) {
    throw InputError("--batch-tokens must be between 1 and 65536, got " + std::to_string(o.max_batch_tokens));
  }
  return o;
}

void add_run_options(Args& args) {
  add_engine_options(args);
  add_plan_options(args);
  args.option("--micro-batches", "N", "micro-batches per forward pass on several devices (0: one per stage, 1 when weights stream)", "0")
      .flag("--verbose", "print the plan in use and per-device busy time, peak memory and streaming to stderr");
}

namespace {

// The share-th group of the accelerators' budgets, renumbered from 0; cpu (and disk) budgets
// divided between the replicas.
Budgets replica_budgets(const Budgets& all, const ReplicaShare& share) {
  const std::vector<DeviceId> acc = all.accelerators();
  const std::size_t count = static_cast<std::size_t>(share.count);
  if (acc.size() < count || acc.size() % count != 0) {
    throw InputError(std::to_string(share.count) +
                     " replicas on this machine (--replicas, or mpirun worker ranks) need the accelerators split into equal groups, but there are " +
                     std::to_string(acc.size()) + ": use a replica count that divides the device count (e.g. --virtual-devices " +
                     std::to_string(count * std::max<std::size_t>(1, acc.size() / count)) + ")");
  }
  const std::size_t k = acc.size() / count;
  Budgets kept;
  for (std::size_t i = 0; i < k; ++i) {
    kept.set(DeviceId::accelerator(static_cast<int>(i)), *all.get(acc[static_cast<std::size_t>(share.index) * k + i]));
  }
  for (const DeviceBudget& b : all.list()) {
    if (!b.device.is_accelerator()) kept.set(b.device, b.bytes / static_cast<std::uint64_t>(count));
  }
  return kept;
}

}  // namespace

std::unique_ptr<ModelRun> open_model_run(const Args& args, const std::string& model_dir, const ReplicaShare& share) {
  auto run = std::make_unique<ModelRun>();
  EngineOptions eo = engine_options(args);
  if (share.count > 1) {
    const int total = eo.threads > 0 ? eo.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    eo.threads = std::max(1, total / share.count);
  }
  const bool multi = args.get_optional("--virtual-devices") || args.get_optional("--max-memory") ||
                     args.get_optional("--devices") || args.get_optional("--device-map");
  if (!multi) {
    run->engine = std::make_unique<Engine>(model_dir, eo);
    run->engine_runner = std::make_unique<EngineRunner>(*run->engine);
    run->runner = run->engine_runner.get();
    run->threads = run->engine->threads();
    run->isa = run->engine->kernels().name;
    return run;
  }
  const long long micro = args.get_int("--micro-batches");
  if (micro < 0 || micro > 4096) throw InputError("--micro-batches must be between 0 and 4096, got " + std::to_string(micro));
  const ModuleTree tree = load_module_tree(model_dir);
  PlanOptions po = plan_options_from(args, tree.config());
  // The executor computes in the checkpoint's dtype: plan for it.
  WeightDType stored = po.request.dtype;
  if (const ParamInfo* p = tree.find("model.embed_tokens.weight"); p && p->dtype) parse_weight_dtype(dtype_torch_name(*p->dtype), &stored);
  if (args.get_optional("--dtype") && !(stored == po.request.dtype)) {
    throw InputError("--dtype " + args.get("--dtype") + ": generate and perplexity run the checkpoint's own dtype; leave --dtype out");
  }
  po.request.dtype = stored;
  if (share.count > 1) po.request.budgets = replica_budgets(po.request.budgets, share);
  const Plan plan = po.device_map_file ? plan_from_device_map(tree, load_device_map_file(*po.device_map_file), po.request)
                                       : plan_model(tree, po.request);
  run->devices = make_run_devices(po.request.budgets, eo.threads, host_available_memory());
  ExecutorOptions xo;
  xo.max_batch_tokens = eo.max_batch_tokens;
  xo.max_context = eo.max_context;
  xo.micro_batches = static_cast<int>(micro);
  run->executor = std::make_unique<Executor>(model_dir, plan.device_map, run->devices, xo);
  run->runner = run->executor.get();
  run->threads = run->executor->threads();
  run->isa = run->executor->kernels().name;
  run->plan_text = "budgets: " + po.request.budgets.to_string() + " (" + po.budgets_source + ")\n" + plan_to_table(plan) +
                   describe_layout(run->executor->layout()) + "micro-batches per forward: " +
                   std::to_string(run->executor->micro_batches()) + "\n";
  return run;
}

std::unique_ptr<Tokenizer> load_tokenizer_if_any(const std::string& model_dir) {
  if (!Tokenizer::exists_in(model_dir)) return nullptr;
  return Tokenizer::load(model_dir);
}

std::vector<std::int32_t> ids_from_ids_option(const std::string& list) {
  std::vector<std::int32_t> ids;
  for (long long v : parse_int_list(list, "--ids")) {
    if (v < 0 || v > std::numeric_limits<std::int32_t>::max()) {
      throw InputError("--ids: token id " + std::to_string(v) + " is negative or too large");
    }
    ids.push_back(static_cast<std::int32_t>(v));
  }
  return ids;
}

std::vector<std::int32_t> ids_from_text(const Tokenizer* tokenizer, const std::string& text,
                                        const std::string& model_dir, const std::string& option) {
  if (!tokenizer) {
    throw InputError(option + " needs a tokenizer, but '" + model_dir +
                     "' has no tokenizer.json: pass token ids with --ids, or make the model with --tokenizer DIR");
  }
  return tokenizer->encode(text, /*add_special_tokens=*/true);
}

}  // namespace plexus::cli
