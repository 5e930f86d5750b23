// `plexus estimate MODEL`: weight bytes per dtype, the largest unsplittable layer, memory to
// train with Adam, and KV-cache bytes per token and for a few contexts × batch sizes; with
// --training, the per-device memory of `plexus train` (train/training_memory).
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_argument.h"
#include "cli/plan_options.h"
#include "core/args.h"
#include "core/error.h"
#include "model/quant_policy.h"
#include "planner/plan_report.h"
#include "train/batch_choice.h"
#include "train/training_memory.h"

namespace plexus::cli {

namespace {

// --training: the shape of the run from --global-batch, --micro-batch, --seq-len, --replicas, --zero,
// --checkpoint-activations.
int estimate_training(const Args& args, const ModelConfig& config) {
  if (args.given("--quantize")) throw InputError("--quantize does not apply to --training: training keeps f32 weights");
  const long long replicas = args.get_int_in("--replicas", 1, 4096);
  const long long batch = args.get_int_in("--global-batch", 1, 1LL << 30);
  const BatchLayout layout = fixed_batch_layout(
      batch, static_cast<int>(replicas), args.given("--micro-batch") ? args.get_int_in("--micro-batch", 1, 1LL << 30) : 0);
  TrainingShape shape;
  shape.micro_batch = layout.micro_batch;
  shape.seq_len = args.get_int_in("--seq-len", 2, 1LL << 24);
  shape.replicas = static_cast<int>(replicas);
  shape.zero1 = args.get_int_in("--zero", 0, 1) == 1;
  shape.checkpoint_activations = args.get_flag("--checkpoint-activations");
  const TrainingMemory m = training_memory(config, shape);
  if (args.get_flag("--json")) {
    std::printf("%s\n", training_memory_json(m, shape, batch).dump(2).c_str());
  } else {
    std::printf("%s", training_memory_table(m, shape, batch).c_str());
  }
  return 0;
}

}  // namespace

int cmd_estimate(int argc, char** argv) {
  Args args("estimate", "Memory a model needs, from config.json (or safetensors headers) alone: per dtype the total "
                        "size, the largest layer, Adam training memory; KV cache per token and per context × batch. "
                        "With --training: what `plexus train` holds on each device.");
  add_model_argument(args, "MODEL", "model directory (config.json [+ safetensors]), a config.json file or a .gguf file");
  args.flag("--json", "print the estimate as JSON");
  args.option("--quantize", "TYPE", "list only this named mix (Q4_K_M, Q8_0, ...: see plexus quantize --help) instead of every one");
  args.flag("--training", "per device: f32 weights, gradients, AdamW state and the activations of one micro-batch");
  args.option("--global-batch", "G", "with --training: sequences per optimizer step, over every replica", "1").old_name("--batch-size");
  args.option("--micro-batch", "M", "with --training: sequences per forward/backward (default: G / replicas)");
  args.option("--seq-len", "T", "with --training: tokens per sequence", "256");
  args.option("--replicas", "R", "with --training: data-parallel replicas (devices)", "1");
  args.option("--zero", "S", "with --training: 1 shards the optimizer state across replicas (ZeRO-1); 0 does not", "0");
  args.flag("--checkpoint-activations", "with --training: activations as train --checkpoint-activations keeps them (the "
                                        "layer inputs and one layer's); both ways are printed");
  if (!args.parse(argc, argv)) return 0;
  if (!args.get_flag("--training")) {
    for (const char* flag : {"--global-batch", "--micro-batch", "--seq-len", "--replicas", "--zero", "--checkpoint-activations"}) {
      if (args.given(flag)) throw InputError(std::string(flag) + " applies to the training estimate: add --training");
    }
  }
  const ModuleTree tree = load_module_tree(model_argument(args, ModelNeeds::kConfig));
  if (args.get_flag("--training")) return estimate_training(args, tree.config());
  std::optional<QuantMix> quantize;
  if (auto q = args.get_optional("--quantize")) quantize = quantize_flag("--quantize", *q);
  const ModelEstimate e = estimate_model(tree, quantize);
  if (args.get_flag("--json")) std::printf("%s\n", estimate_to_json(e, tree.config()).dump(2).c_str());
  else std::printf("%s", estimate_to_table(e, tree.config()).c_str());
  return 0;
}

}  // namespace plexus::cli
