// `plexus plan MODEL`: where every weight goes under per-device budgets, by accelerate's
// strategies or plexus's own; or the check of a custom --device-map.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "cli/model_argument.h"
#include "cli/model_options.h"
#include "cli/plan_options.h"
#include "backend/detect.h"
#include "backend/device_options.h"
#include "core/args.h"
#include "core/error.h"
#include "exec/fastest.h"
#include "exec/model_run.h"
#include "exec/plan_facts.h"
#include "model/tensor_split.h"
#include "planner/cost_model.h"
#include "planner/parallel_plan.h"
#include "planner/plan_report.h"

namespace plexus::cli {

int cmd_plan(int argc, char** argv) {
  Args args("plan", "Place a model's weights on devices without loading them: a device map (module prefix -> "
                    "0, 1, …, \"cpu\", \"disk\") and a per-device table of layers, weights, KV cache and budget.");
  add_model_argument(args, "MODEL", "model directory (config.json [+ safetensors]), a config.json file or a .gguf file");
  add_plan_options(args);
  add_engine_options(args);  // --threads and --batch-tokens size the run buffers as the run will
  args.option("--gpu", "NAME", "predict the accelerators as this GPU (a100-40gb, a100-80gb, h100-sxm, h100-pcie, h200, "
                              "l40s, rtx-4090, mi300x); default: this host's virtual devices (plexus calibrate)");
  args.option("--objective", "O", "with --strategy fastest: throughput (decode tokens/s at --max-sequences, default) | latency "
                                  "(one sequence's decode tokens/s) | energy (joules per token)");
  args.flag("--json", "print {strategy, dtype, device_map, placement, devices} as JSON");
  args.epilog(
      "Strategies sequential, balanced, balanced_low_0 and auto reproduce Hugging Face accelerate's\n"
      "device_map=… placement exactly (auto = balanced). stages, plexus's own, cuts the layers into\n"
      "contiguous stages over every accelerator, minimising the largest per-device load with room kept\n"
      "for the run buffers. Run buffers (KV cache for --context × --max-sequences, workspace, activations,\n"
      "logits, weight-streaming slots) are sized as `generate`/`perplexity` with the same flags allocate\n"
      "them: within each budget for stages and custom maps; on top of max_memory (which limits the\n"
      "weights, as in accelerate) for accelerate's strategies. See docs/planner.md.\n"
      "With --tp N [--pp M] the plan is one tensor-parallel rank's (its devices the M stages), and the\n"
      "report lists each of the N x M devices: device s*N + r holds rank r's shard of stage s's layers\n"
      "(docs/parallel.md). --ep N is --tp N whose ranks hold 1/N of a mixture's experts whole.");
  if (!args.parse(argc, argv)) return 0;
  PlanInputs in = plan_inputs_from(args);
  const ModuleTree full_tree = load_module_tree(model_argument(args, ModelNeeds::kConfig), quantize_type(in));
  const WorldConfig world = in.world();
  // --tp N: planned as a run plans it, on one rank's shard (InputError naming the heads and the
  // sizes that work when N cannot split the model, before any budget is looked at).
  const ModuleTree tree = world.tp > 1 ? shard_module_tree(full_tree, TensorSplit{0, world.tp, world.expert_parallel}) : full_tree;
  const EngineOptions eo = engine_options(args);
  in.batch_tokens = eo.max_batch_tokens;
  in.threads = eo.threads;
  PlanOptions o = plexus::plan_options_from(in, tree.config());
  if (args.get_optional("--objective") && !o.fastest) {
    throw InputError("--objective " + *args.get_optional("--objective") + " ranks the plans of --strategy fastest, but --strategy is " +
                     in.strategy + ": pass --strategy fastest or leave --objective out");
  }
  // --tp N --pp M: N × M devices (without device flags and no accelerator detected, N × M virtual
  // devices, as a run makes them); the plan is one rank's, on group budgets.
  Budgets run_budgets;
  if (in.parallel()) {
    if (!in.names_devices() && o.request.budgets.accelerators().empty()) {
      in.virtual_devices = world.size();
      o = plexus::plan_options_from(in, tree.config());
    }
    if (world.tp > 1 && o.fastest) {
      throw InputError("--strategy fastest ranks plans of whole layers; with " + std::string(world.group_flag()) + " give a strategy (" +
                       std::string(kStrategyChoices) + ")");
    }
    run_budgets = o.request.budgets;
    o.request.budgets = group_budgets(run_budgets, world, o.accelerators.cuda);
  }
  // Budgets from the detected GPUs: predict them as what they are.
  std::optional<Inventory> detected;
  if (!args.get_optional("--gpu") && o.budgets_source.rfind("detected", 0) == 0) {
    detected = detect_devices(device_options_from_env());
  }
  std::optional<FastestChoice> fastest;
  if (o.fastest) {
    fastest = choose_fastest(tree, o.request, parse_objective(args.get_optional("--objective").value_or("throughput")),
                             args.get_optional("--gpu"), detected ? &*detected : nullptr);
  }
  const Plan plan = plan_for_group(world, [&] {
    return o.device_map_file ? plan_from_device_map(tree, load_device_map_file(*o.device_map_file), o.request)
           : fastest         ? fastest->ranked.front().plan
                             : plan_model(tree, o.request);
  });
  std::optional<ParallelPlan> parallel;
  if (in.parallel()) parallel = parallel_plan(full_tree, plan, o.request, world.tp, world.pp, run_budgets, world.expert_parallel);
  // Predicted speed and energy (a plan with run buffers, i.e. --context > 0).
  std::optional<Prediction> predicted;
  std::string facts_note;
  if (fastest) {
    predicted = fastest->ranked.front().predicted;
    facts_note = fastest->facts_note;
  } else if (plan.runtime.context > 0) {
    const PlanPrediction p = predict_for_plan(tree, plan, o.request.budgets, world.tp, args.get_optional("--gpu"),
                                              detected ? &*detected : nullptr);
    predicted = p.predicted;
    facts_note = p.note;
  }
  if (args.get_flag("--json")) {
    Json j = plan_to_json(plan);
    j["budgets_source"] = o.budgets_source;
    // Quantise on load: the projections' block format (the plan sized them in it).
    j["quantize"] = in.quantize ? Json(quant_mix_lower_name(*quantize_type(in))) : Json(nullptr);
    if (predicted) {
      j["predicted"] = prediction_to_json(*predicted);
      if (!facts_note.empty()) j["predicted"]["note"] = facts_note;
    }
    if (fastest) j["fastest"] = fastest_to_json(*fastest);
    if (parallel) {
      j["tensor_parallel"] = world.tp;
      j["expert_parallel"] = world.expert_parallel ? world.tp : 1;
      j["pipeline_parallel"] = world.pp;
      j["parallel_devices"] = parallel_devices_to_json(*parallel);
    }
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    if (parallel) {
      std::printf("run budgets: %s (%s)\n", run_budgets.to_string().c_str(), o.budgets_source.c_str());
      std::printf("%s\n", parallel_plan_to_table(*parallel).c_str());
      std::printf("the plan of one rank (its devices are the pipeline stages; budgets: %s):\n",
                  o.request.budgets.to_string().c_str());
    } else {
      std::printf("budgets: %s (%s)\n", o.request.budgets.to_string().c_str(), o.budgets_source.c_str());
    }
    if (in.quantize) {
      std::printf("quantised on load: mix %s (norms and biases as stored)\n",
                  quant_mix_lower_name(*quantize_type(in)).c_str());
    }
    std::printf("%s", plan_to_table(plan).c_str());
    if (predicted) std::printf("%s", prediction_to_text(*predicted).c_str());
    if (fastest) std::printf("%s", runner_ups_to_text(*fastest).c_str());
    if (!facts_note.empty()) std::printf("note: %s\n", facts_note.c_str());
  }
  return 0;
}

}  // namespace plexus::cli
