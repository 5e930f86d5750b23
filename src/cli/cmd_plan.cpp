// `plexus plan MODEL`: where every weight goes under per-device budgets, by accelerate's
// strategies or plexus's own; or the check of a custom --device-map.
#include <cstdio>

#include "cli/commands.h"
#include "cli/plan_options.h"
#include "core/args.h"
#include "planner/plan_report.h"

namespace plexus::cli {

int cmd_plan(int argc, char** argv) {
  Args args("plan", "Place a model's weights on devices without loading them: a device map (module prefix -> "
                    "0, 1, …, \"cpu\", \"disk\") and a per-device table of layers, weights, KV cache and budget.");
  args.positional("MODEL", "model directory (config.json [+ safetensors]) or a config.json file");
  add_plan_options(args);
  args.flag("--json", "print {strategy, dtype, device_map, placement, devices} as JSON");
  args.epilog(
      "Strategies sequential, balanced, balanced_low_0 and auto reproduce Hugging Face accelerate's\n"
      "device_map=… placement exactly (auto = balanced). stages, plexus's own, cuts the layers into\n"
      "contiguous stages over every accelerator, minimising the largest per-device load with room kept\n"
      "for the KV cache (--context, --batch) and activations. See docs/planner.md.");
  if (!args.parse(argc, argv)) return 0;
  const ModuleTree tree = load_module_tree(args.get("MODEL"));
  const PlanOptions o = plan_options_from(args, tree.config());
  const Plan plan = o.device_map_file
                        ? plan_from_device_map(tree, load_device_map_file(*o.device_map_file), o.request)
                        : plan_model(tree, o.request);
  if (args.get_flag("--json")) {
    Json j = plan_to_json(plan);
    j["budgets_source"] = o.budgets_source;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("budgets: %s (%s)\n%s", o.request.budgets.to_string().c_str(), o.budgets_source.c_str(),
                plan_to_table(plan).c_str());
  }
  return 0;
}

}  // namespace plexus::cli
