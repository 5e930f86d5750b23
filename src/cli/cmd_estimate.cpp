// `plexus estimate MODEL`: weight bytes per dtype, the largest unsplittable layer, memory to
// train with Adam, and KV-cache bytes per token and for a few contexts × batch sizes.
#include <cstdio>

#include "cli/commands.h"
#include "cli/plan_options.h"
#include "core/args.h"
#include "model/quant_policy.h"
#include "planner/plan_report.h"

namespace plexus::cli {

int cmd_estimate(int argc, char** argv) {
  Args args("estimate", "Memory a model needs, from config.json (or safetensors headers) alone: per dtype the total "
                        "size, the largest layer, Adam training memory; KV cache per token and per context × batch.");
  args.positional("MODEL", "model directory (config.json [+ safetensors]), a config.json file or a .gguf file");
  args.flag("--json", "print the estimate as JSON");
  args.option("--quantize", "TYPE", "add a row for the projections quantised on load: q8_0 | q4_0 | q4_k");
  if (!args.parse(argc, argv)) return 0;
  const ModuleTree tree = load_module_tree(args.get("MODEL"));
  std::optional<DType> quantize;
  if (auto q = args.get_optional("--quantize")) quantize = quantize_flag("--quantize", *q);
  const ModelEstimate e = estimate_model(tree, quantize);
  if (args.get_flag("--json")) std::printf("%s\n", estimate_to_json(e, tree.config()).dump(2).c_str());
  else std::printf("%s", estimate_to_table(e, tree.config()).c_str());
  return 0;
}

}  // namespace plexus::cli
