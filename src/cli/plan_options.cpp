// Planning options: the flags of `plexus plan`, read into PlanInputs.
#include "cli/plan_options.h"

#include "backend/device_options.h"
#include "core/error.h"

namespace plexus::cli {

void add_plan_options(Args& args, const PlanFlagChoices& choices) {
  args.option("--strategy", "S", "stages (plexus) | fastest (of every strategy and device subset, the plan predicted "
                                 "fastest) | sequential | balanced | balanced_low_0 | auto (accelerate)", "stages")
      .option("--dtype", "D", choices.runs
                                  ? "float32 | bfloat16 | float16: must be the checkpoint's own dtype, which a run computes in "
                                    "(--quantize quantises the weights; `plexus plan --dtype int8|int4` sizes quantised projections)"
                                  : "float32 | bfloat16 | float16 | int8 (q8_0 projections) | int4 (q4_k projections) "
                                    "(default: the config's torch_dtype, else bfloat16)")
      .option("--quantize", "MIX", "quantise the weights on load to a named mix, as `plexus quantize --type` writes it: "
                                   "Q8_0 | Q6_K | Q5_K_M | Q5_K_S | Q5_1 | Q5_0 | Q4_K_M | Q4_K_S | Q4_1 | Q4_0 | IQ4_XS | "
                                   "IQ4_NL | Q3_K_M | Q2_K (any case; q4_k = Q4_K_M); norms and biases keep their dtype")
      .option("--max-memory", "LIST", "budgets as accelerate writes them, e.g. \"0=10GiB,1=10GiB,cpu=64GiB\"; devices may be hypothetical")
      .option("--devices", "LIST", "accelerator ordinals to use, e.g. 0,1 (default: all budgeted)")
      .option("--virtual-devices", "N", "plan for N accelerators that split the host's available memory equally")
      .option("--tensor-parallel", "N", "split every layer across N devices (heads, MLP columns, vocabulary; "
                                        "docs/parallel.md); without device flags on a CPU, N x M virtual devices", "1")
      .alias("--tp")
      .option("--pipeline-parallel", "M", "split the layers into M stages, each on its own device (or tensor-parallel "
                                          "group of N devices)", "1")
      .alias("--pp")
      .option("--expert-parallel", "N", "a tensor-parallel group of N devices whose ranks each hold 1/N of a mixture's "
                                        "experts whole (--tp N otherwise; docs/parallel.md)", "1")
      .alias("--ep");
  add_virtual_gpus_option(args);
  args
      .option("--context", "N", "tokens of KV cache to keep room for per sequence (0: weights only)", "4096")
      .option("--max-sequences", "N", choices.max_sequences_help, choices.max_sequences);
  for (const std::string& old : choices.max_sequences_old_names) args.old_name(old);
  args.flag("--cpu-moe", "keep every mixture-of-experts layer's experts in host memory and compute them on the CPU "
                        "(the rest where the plan puts it), as llama.cpp's --cpu-moe")
      .option("--n-cpu-moe", "N", "as --cpu-moe for the experts of the first N layers only");
  args.flag("--offload-disk", "allow the stages strategy to offload weights to disk when cpu is full")
      .option("--device-map", "FILE|STRATEGY", "check and report a custom device map (JSON: module prefix -> device); a strategy "
                                        "name (auto, balanced, ...) is taken as --strategy, as accelerate's device_map=\"auto\"");
}

PlanInputs plan_inputs_from(const Args& args) {
  PlanInputs in;
  in.strategy = args.get("--strategy");
  in.dtype = args.get_optional("--dtype");
  in.quantize = args.get_optional("--quantize");
  in.context = args.get_int("--context");
  in.context_given = args.given("--context");
  in.batch = args.get_int("--max-sequences");
  in.max_memory = args.get_optional("--max-memory");
  if (args.get_optional("--virtual-devices")) in.virtual_devices = args.get_int("--virtual-devices");
  // --virtual-gpus, else PLEXUS_VIRTUAL_GPUS (which --virtual-devices on the command line overrides).
  if (args.get_optional("--virtual-gpus") || !in.virtual_devices) {
    if (const int n = virtual_gpus_from(args); n > 0) in.virtual_gpus = n;
  }
  if (auto list = args.get_optional("--devices")) in.devices = parse_device_list(*list, "--devices");
  in.offload_disk = args.get_flag("--offload-disk");
  in.tensor_parallel = args.get_int("--tensor-parallel");
  in.pipeline_parallel = args.get_int("--pipeline-parallel");
  in.expert_parallel = args.get_int("--expert-parallel");
  in.cpu_moe = args.get_flag("--cpu-moe");
  if (args.given("--n-cpu-moe")) in.n_cpu_moe = args.get_int("--n-cpu-moe");
  if (auto map = args.get_optional("--device-map")) {
    // accelerate's device_map="auto" (or another strategy name) is a strategy, not a file.
    Strategy named;
    if (parse_strategy(*map, &named)) {
      if (args.given("--strategy") && in.strategy != *map) {
        throw InputError("--device-map " + *map + " and --strategy " + in.strategy +
                         " name two strategies: give one of them");
      }
      in.strategy = *map;
    } else {
      in.device_map_file = *map;
    }
  }
  check_plan_inputs(in);
  return in;
}

PlanOptions plan_options_from(const Args& args, const ModelConfig& config) {
  return plexus::plan_options_from(plan_inputs_from(args), config);
}

}  // namespace plexus::cli
