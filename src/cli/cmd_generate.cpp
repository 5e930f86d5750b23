// `plexus generate`: continue a prompt, printing text (or ids) as it comes, or JSON at the end.
#include <cstdio>
#include <set>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "core/error.h"
#include "core/json.h"
#include "runtime/generate.h"

namespace plexus::cli {

namespace {

// Prints the newly completed part of the decoded text; holds back a trailing partial
// UTF-8 character (decoded as U+FFFD) until the next token completes it.
class TextStreamer {
 public:
  explicit TextStreamer(const Tokenizer& tok) : tok_(tok) {}
  void push(std::int32_t id) {
    ids_.push_back(id);
    const std::string text = tok_.decode(ids_);
    if (text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0) return;
    if (text.size() > printed_ && text.compare(0, printed_, text, 0, printed_) == 0) {
      std::fwrite(text.data() + printed_, 1, text.size() - printed_, stdout);
      std::fflush(stdout);
      printed_ = text.size();
    }
  }

 private:
  const Tokenizer& tok_;
  std::vector<std::int32_t> ids_;
  std::size_t printed_ = 0;
};

}  // namespace

int cmd_generate(int argc, char** argv) {
  Args args("generate",
            "Continue a prompt with a model. Greedy by default; --temperature switches to sampling\n"
            "(temperature, then top-k, then top-p, seeded by --seed). Text is printed as it is\n"
            "generated, timings go to stderr; --json prints one JSON object at the end instead.");
  args.positional("MODEL", "model directory (config.json + safetensors [+ tokenizer.json])")
      .option("--prompt", "TEXT", "prompt text (needs the model's tokenizer.json)")
      .option("--ids", "LIST", "prompt as comma-separated token ids, e.g. 1,2,3")
      .option("--max-tokens", "N", "tokens to generate at most", "32")
      .flag("--greedy", "always take the most likely token (the default)")
      .option("--temperature", "T", "sample with this temperature (> 0)")
      .option("--top-k", "K", "sample among the K most likely tokens (0: all)", "0")
      .option("--top-p", "P", "sample among the smallest set of tokens with probability >= P", "1.0")
      .option("--seed", "S", "random seed for sampling", "0")
      .flag("--ignore-eos", "keep generating after an end-of-sequence token")
      .flag("--json", "print {ids, text, prefill_tokens_per_s, decode_tokens_per_s, ttft_ms, ...}");
  add_engine_options(args);
  if (!args.parse(argc, argv)) return 0;
  const std::string dir = args.get("MODEL");
  if (args.has("--prompt") == args.has("--ids")) throw InputError("give exactly one of --prompt TEXT or --ids LIST");
  if (args.get_flag("--greedy") && args.has("--temperature")) throw InputError("--greedy and --temperature exclude each other");

  GenerateOptions o;
  o.max_tokens = args.get_int("--max-tokens");
  if (o.max_tokens < 1) throw InputError("--max-tokens must be at least 1");
  o.sampling.greedy = !args.has("--temperature");
  if (!o.sampling.greedy) o.sampling.temperature = args.get_double("--temperature");
  o.sampling.top_k = args.get_int("--top-k");
  o.sampling.top_p = args.get_double("--top-p");
  const long long seed = args.get_int("--seed");
  if (seed < 0) throw InputError("--seed must be >= 0");
  o.sampling.seed = static_cast<std::uint64_t>(seed);

  Engine engine(dir, engine_options(args));
  std::unique_ptr<Tokenizer> tok = load_tokenizer_if_any(dir);
  const std::vector<std::int32_t> prompt =
      args.has("--ids") ? ids_from_ids_option(args.get("--ids")) : ids_from_text(tok.get(), args.get("--prompt"), dir, "--prompt");
  for (std::int32_t id : prompt) {
    if (id >= engine.vocab_size()) {
      throw InputError("--ids: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                       std::to_string(engine.vocab_size()) + ")");
    }
  }
  if (!args.get_flag("--ignore-eos")) {
    std::set<std::int64_t> stops(engine.config().eos_token_ids.begin(), engine.config().eos_token_ids.end());
    if (tok && tok->eos_id()) stops.insert(*tok->eos_id());
    o.stop_ids.assign(stops.begin(), stops.end());
  }

  const bool json = args.get_flag("--json");
  std::unique_ptr<TextStreamer> streamer;
  if (!json && tok) streamer = std::make_unique<TextStreamer>(*tok);
  const GenerateResult r = generate(engine, prompt, o, [&](std::int32_t id) {
    if (json) return;
    if (streamer) {
      streamer->push(id);
    } else {
      std::printf("%d ", id);
      std::fflush(stdout);
    }
  });
  if (json) {
    Json j = {{"ids", r.ids},
              {"prompt_tokens", r.prompt_tokens},
              {"completion_tokens", r.ids.size()},
              {"finish_reason", r.finish_reason},
              {"prefill_tokens_per_s", r.prefill_tokens_per_s},
              {"decode_tokens_per_s", r.decode_tokens_per_s},
              {"ttft_ms", r.ttft_ms},
              {"threads", engine.threads()},
              {"isa", std::string(engine.kernels().name)}};
    if (tok) j["text"] = tok->decode(r.ids);
    std::printf("%s\n", j.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    std::fflush(stdout);
    std::fprintf(stderr, "[%lld prompt tokens, %zu generated (%s); prefill %.1f tok/s, decode %.1f tok/s, ttft %.1f ms; %d threads, %s]\n",
                 static_cast<long long>(r.prompt_tokens), r.ids.size(), r.finish_reason.c_str(), r.prefill_tokens_per_s,
                 r.decode_tokens_per_s, r.ttft_ms, engine.threads(), std::string(engine.kernels().name).c_str());
  }
  return 0;
}

}  // namespace plexus::cli
