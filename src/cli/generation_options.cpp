// The generation flags shared by `generate` and `batch`.
#include "cli/generation_options.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace plexus::cli {

void add_generation_options(Args& args, const GenerationHelp& help) {
  args.option("--max-tokens", "N", help.max_tokens, "32")
      .flag("--greedy", "always take the most likely token (the default)")
      .option("--temperature", "T", help.temperature)
      .option("--top-k", "K", "sample among the K most likely tokens (0: all)", "0")
      .option("--top-p", "P", "sample among the smallest set of tokens with probability >= P", "1.0")
      .option("--min-p", "P", "drop tokens less likely than P x the likeliest (0..1)", "0")
      .option("--presence-penalty", "X", "subtract X from tokens already generated (-2..2)", "0")
      .option("--frequency-penalty", "X", "subtract X per time a token was generated (-2..2)", "0")
      .option("--repetition-penalty", "X",
              "divide positive logits (multiply others) of prompt and generated tokens by X (> 0; 1: off)", "1")
      .option("--seed", "S", help.seed, "0")
      .flag("--ignore-eos", "keep generating after an end-of-sequence token");
}

GenerateOptions generation_options(const Args& args) {
  GenerateOptions o;
  o.max_tokens = args.get_int_in("--max-tokens", 1, kMaxNewTokens);
  if (args.get_flag("--greedy") && args.has("--temperature")) throw InputError("--greedy and --temperature exclude each other");
  if (args.has("--temperature")) set_temperature(o.sampling, args.get_double_in("--temperature", 0, kMaxTemperature));
  // Checked whether or not they are used (greedy decoding ignores them), so a typo never passes.
  o.sampling.top_k = args.get_int_in("--top-k", 0, kMaxTopK);
  o.sampling.top_p = args.get_double("--top-p");
  if (!(o.sampling.top_p > 0 && o.sampling.top_p <= 1)) {
    throw InputError("--top-p must be more than 0 and at most 1, got " + args.get("--top-p"));
  }
  o.sampling.min_p = args.get_double_in("--min-p", 0, 1);
  o.sampling.presence_penalty = args.get_double_in("--presence-penalty", -kMaxPenalty, kMaxPenalty);
  o.sampling.frequency_penalty = args.get_double_in("--frequency-penalty", -kMaxPenalty, kMaxPenalty);
  o.sampling.repetition_penalty = args.get_double("--repetition-penalty");
  if (!(o.sampling.repetition_penalty > 0 && std::isfinite(o.sampling.repetition_penalty))) {
    throw InputError("--repetition-penalty must be more than 0, got " + args.get("--repetition-penalty"));
  }
  o.sampling.seed = static_cast<std::uint64_t>(args.get_int_in("--seed", 0, std::numeric_limits<long long>::max()));
  return o;
}

std::vector<std::int64_t> stop_ids(const Args& args, const ModelConfig& config, const Tokenizer* tokenizer) {
  if (args.get_flag("--ignore-eos")) return {};
  return end_of_sequence_ids(config, tokenizer ? tokenizer->eos_id() : std::nullopt);
}

}  // namespace plexus::cli
