// `plexus estimate MODEL`: weight bytes per dtype, the largest unsplittable layer, memory to
// train with Adam, and KV-cache bytes per token and for a few contexts × batch sizes.
#include <cstdio>

#include "cli/commands.h"
#include "cli/plan_options.h"
#include "core/args.h"
#include "planner/plan_report.h"

namespace plexus::cli {

int cmd_estimate(int argc, char** argv) {
  Args args("estimate", "Memory a model needs, from config.json (or safetensors headers) alone: per dtype the total "
                        "size, the largest layer, Adam training memory; KV cache per token and per context × batch.");
  args.positional("MODEL", "model directory (config.json [+ safetensors]), a config.json file or a .gguf file");
  args.flag("--json", "print the estimate as JSON");
  if (!args.parse(argc, argv)) return 0;
  const ModuleTree tree = load_module_tree(args.get("MODEL"));
  const ModelEstimate e = estimate_model(tree);
  if (args.get_flag("--json")) std::printf("%s\n", estimate_to_json(e, tree.config()).dump(2).c_str());
  else std::printf("%s", estimate_to_table(e, tree.config()).c_str());
  return 0;
}

}  // namespace plexus::cli
