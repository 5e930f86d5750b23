// `plexus generate`: continue a prompt, printing text (or ids) as it comes, or JSON at the end.
#include <cstdio>
#include <limits>
#include <optional>

#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/interrupt_guard.h"
#include "cli/model_argument.h"
#include "cli/model_options.h"
#include "cli/mpi_tensor.h"
#include "cli/structured_flags.h"
#include "core/error.h"
#include "model/token_id.h"
#include "core/json.h"
#include "core/timer.h"
#include "bench/bench_metrics.h"
#include "monitor/monitor_session.h"
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

// --max-sequences N: every sequence's ids (and text), then the totals. `monitor` is set for --json.
int print_batch(const ModelRun& run, const BatchGenerateResult& r, const Tokenizer* tok, MonitorSession* monitor,
                bool verbose, bool interrupted, double load_seconds) {
  if (monitor) {
    Json seqs = Json::array();
    for (const GenerateResult& g : r.sequences) {
      Json s = {{"ids", g.ids}, {"finish_reason", g.finish_reason}, {"prompt_tokens", g.prompt_tokens}};
      if (tok) s["text"] = tok->decode(g.ids);
      seqs.push_back(s);
    }
    Json j = {{"sequences", seqs},
              {"prompt_tokens", r.prompt_tokens},
              {"completion_tokens", r.generated_tokens},
              {"prefill_tokens_per_s", r.prefill_tokens_per_s},
              {"decode_tokens_per_s", r.decode_tokens_per_s},
              {"decode_steps", r.steps.count},
              {"host_ms_per_step", r.steps.host_ms_per_step(r.decode_s)},
              {"load_seconds", load_seconds},
              {"threads", run.threads},
              {"wait", std::string(wait_policy_name(run.wait))},
              {"isa", run.isa},
              {"interrupted", interrupted}};
    if (run.planned() || run.tensor) j["execution"] = exec_stats_to_json(run.stats());
    const MonitorSummary summary = monitor->stop();
    j["monitor"] = to_json(summary);
    j["energy"] = bench::energy_json(summary, r.generated_tokens);  // GPU energy (NVML) and J/token
    std::printf("%s\n", j.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
    return 0;
  }
  for (std::size_t i = 0; i < r.sequences.size(); ++i) {
    const GenerateResult& g = r.sequences[i];
    std::string text;
    if (tok) {
      text = tok->decode(g.ids);
    } else {
      for (std::int32_t id : g.ids) text += std::to_string(id) + " ";
    }
    std::printf("[%zu] %s\n", i, text.c_str());
  }
  std::fflush(stdout);
  std::fprintf(stderr, "[%zu sequences, %lld prompt tokens, %lld generated; prefill %.1f tok/s, decode %.1f tok/s; %d threads, %s]\n",
               r.sequences.size(), static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.generated_tokens),
               r.prefill_tokens_per_s, r.decode_tokens_per_s, run.threads, run.isa.c_str());
  if (verbose && (run.planned() || run.tensor)) std::fprintf(stderr, "%s", exec_stats_to_text(run.stats()).c_str());
  return 0;
}

// The command once its flags are parsed; `mpi`: this process is one rank of a tensor-parallel
// group across processes (cli/mpi_tensor.h).
int generate_run(const Args& args, MpiTensorGroup* mpi) {
  // With --json, SIGINT / SIGTERM end the generation early and the JSON of what was generated
  // is still printed, with "interrupted": true (exit 130) — from here on, loading included.
  // (Under mpirun the ranks must stop together: mpirun's own signal handling ends the job.)
  std::optional<InterruptGuard> guard;
  if (args.get_flag("--json") && !(mpi && mpi->parallel())) guard.emplace();
  const std::string dir = model_argument(args, ModelNeeds::kWeights);
  if (args.has("--prompt") == args.has("--ids")) throw InputError("give exactly one of --prompt TEXT or --ids LIST");
  GenerateOptions o = generation_options(args);
  // Structured output: the grammar checked before the model loads; masks on the host, where
  // generate samples (the logits come back from any device).
  const std::optional<StructuredGrammar> structured = structured_grammar(args);
  if (structured && mpi && mpi->parallel()) throw InputError("--grammar, --json-schema and --json-object are not supported under mpirun");

  // Under mpirun rank 0 reads the input and prints; the other ranks take its prompt (and stop ids).
  const bool root = !mpi || mpi->root();
  std::unique_ptr<Tokenizer> tok = root ? load_tokenizer_if_any(dir) : nullptr;
  std::vector<std::int32_t> prompt;
  if (root) {
    prompt = args.has("--ids") ? ids_from_ids_option(args.get("--ids")) : ids_from_text(tok.get(), args.get("--prompt"), dir, "--prompt");
  }
  if (mpi) mpi->share(prompt);
  // Scratch for this run's sequences only (a 6-token run on a 2·10^8-position config took 3 GB);
  // a sum past the model's context is left to the context check, which names both.
  const auto prompt_len = static_cast<std::int64_t>(prompt.size());
  const std::int64_t run_context = o.max_tokens <= std::numeric_limits<std::int64_t>::max() - prompt_len ? prompt_len + o.max_tokens : 0;
  // Load time: mapping (and prefaulting) the weights, planning, allocating the run's buffers.
  Timer load_timer;
  const std::unique_ptr<ModelRun> run = open_model_run(args, dir, {}, run_context, mpi);
  const double load_seconds = load_timer.seconds();
  Runner& runner = *run->runner;
  const bool verbose = args.get_flag("--verbose");
  if (verbose) std::fprintf(stderr, "[model loaded in %.3f s]\n", load_seconds);
  if (verbose && !run->plan_text.empty()) std::fprintf(stderr, "%s", run->plan_text.c_str());
  const long long batch = args.get_int("--max-sequences");
  check_token_ids(prompt, runner.vocab_size(), args.has("--ids") ? "--ids" : "--prompt (as the tokenizer encodes it)");
  if (root) o.stop_ids = stop_ids(args, runner.config(), tok.get());
  if (mpi) mpi->share(o.stop_ids);
  structured::GrammarCache grammars(1);
  if (structured) o.constraint = structured_constraint(*structured, tok.get(), runner.vocab_size(), o.stop_ids, grammars);

  const bool json = args.get_flag("--json");
  // With --json, the run is wrapped in a monitoring session (GPUs through NVML / ROCm SMI when
  // present, and the host) whose summary goes into the output as "monitor".
  std::unique_ptr<MonitorSession> monitor;
  if (json) {
    // The GPUs the run computes on (all of them for a CPU run: what else draws power is still shown).
    monitor = std::make_unique<MonitorSession>(make_sources(source_options_for_run(device_options_from_env(), run->cuda_gpus)));
    monitor->start(MonitorOptions{});
  }
  if (batch > 1) {
    const BatchGenerateResult br = generate_batch(runner, std::vector(static_cast<std::size_t>(batch), prompt), o);
    const bool interrupted = json && InterruptGuard::requested();  // N sequences stop only after them all
    const int code = print_batch(*run, br, tok.get(), monitor.get(), verbose, interrupted, load_seconds);
    return interrupted ? static_cast<int>(ExitCode::kInterrupted) : code;
  }
  std::unique_ptr<TextStreamer> streamer;
  if (!json && tok) streamer = std::make_unique<TextStreamer>(*tok);
  struct Stop {};  // thrown from the token callback to end an interrupted --json generation
  std::vector<std::int32_t> so_far;
  GenerateResult r;
  try {
    r = generate(runner, prompt, o, [&](std::int32_t id) {
      if (json) {
        so_far.push_back(id);
        if (InterruptGuard::requested()) throw Stop{};
        return;
      }
      if (streamer) {
        streamer->push(id);
      } else {
        std::printf("%d ", id);
        std::fflush(stdout);
      }
    });
  } catch (const Stop&) {
    r.ids = so_far;
    r.prompt_tokens = static_cast<std::int64_t>(prompt.size());
    r.finish_reason = "interrupted";
  }
  const bool interrupted = json && InterruptGuard::requested();
  if (json) {
    Json j = {{"ids", r.ids},
              {"prompt_tokens", r.prompt_tokens},
              {"completion_tokens", r.ids.size()},
              {"finish_reason", r.finish_reason},
              {"prefill_tokens_per_s", r.prefill_tokens_per_s},
              {"decode_tokens_per_s", r.decode_tokens_per_s},
              {"decode_steps", r.steps.count},
              {"host_ms_per_step", r.steps.host_ms_per_step(r.decode_s)},
              {"ttft_ms", r.ttft_ms},
              {"load_seconds", load_seconds},
              {"threads", run->threads},
              {"wait", std::string(wait_policy_name(run->wait))},
              {"isa", run->isa},
              {"interrupted", interrupted}};
    if (tok) j["text"] = tok->decode(r.ids);
    if (run->planned() || run->tensor) j["execution"] = exec_stats_to_json(run->stats());
    const MonitorSummary summary = monitor->stop();
    j["monitor"] = to_json(summary);
    j["energy"] = bench::energy_json(summary, static_cast<std::int64_t>(r.ids.size()));  // GPU energy (NVML) and J/token
    std::printf("%s\n", j.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
    if (interrupted) return static_cast<int>(ExitCode::kInterrupted);
  } else {
    std::printf("\n");
    std::fflush(stdout);
    std::fprintf(stderr, "[%lld prompt tokens, %zu generated (%s); prefill %.1f tok/s, decode %.1f tok/s, ttft %.1f ms; %d threads, %s]\n",
                 static_cast<long long>(r.prompt_tokens), r.ids.size(), r.finish_reason.c_str(), r.prefill_tokens_per_s,
                 r.decode_tokens_per_s, r.ttft_ms, run->threads, run->isa.c_str());
    if (verbose && (run->planned() || run->tensor)) std::fprintf(stderr, "%s", exec_stats_to_text(run->stats()).c_str());
  }
  return 0;
}

}  // namespace

int cmd_generate(int argc, char** argv) {
  Args args("generate",
            "Continue a prompt with a model. Greedy by default; --temperature switches to sampling\n"
            "(temperature, then top-k, then top-p, seeded by --seed). Text is printed as it is\n"
            "generated, timings go to stderr; --json prints one JSON object at the end instead.");
  add_model_argument(args, "MODEL", "model directory (config.json + safetensors [+ tokenizer.json]) or a .gguf file");
  args.option("--prompt", "TEXT", "prompt text (needs the model's tokenizer.json)")
      .option("--ids", "LIST", "prompt as comma-separated token ids, e.g. 1,2,3")
      .flag("--json", "print {ids, text, prefill_tokens_per_s, decode_tokens_per_s, ttft_ms, ...}");
  add_generation_options(args);
  add_structured_flags(args);
  add_run_options(args, {.max_sequences_help = "sequences in flight: generate N copies of the prompt together, the plan "
                                               "keeping KV-cache room for each"});
  args.epilog(
      "With --virtual-devices N, --virtual-gpus N, --max-memory LIST, --devices LIST or --device-map FILE the\n"
      "model is planned as `plexus plan` would (same flags) and run across those devices (CUDA GPUs when the\n"
      "CUDA runtime sees them), offloaded modules streaming in; --max-sequences N then generates N copies of\n"
      "the prompt together, pipelined in micro-batches (--micro-batch). Without device flags the run takes every GPU CUDA sees\n"
      "(CUDA_VISIBLE_DEVICES= keeps it on the CPU), else the CPU. See docs/execution.md.\n"
      "Under mpirun (`mpirun -np N plexus generate MODEL --tp N ...`) every process is one tensor-parallel rank\n"
      "on its host's CPU; rank 0 reads the prompt and prints. See docs/parallel.md.");
  if (!args.parse(argc, argv)) return 0;
  const std::unique_ptr<MpiTensorGroup> mpi = MpiTensorGroup::join(args, "generate");
  if (mpi) return mpi->run("generate", [&] { return generate_run(args, mpi.get()); });
  return generate_run(args, nullptr);
}

}  // namespace plexus::cli
