// `plexus batch`: generate for every request of a JSON-lines file with N model replicas fed from
// one dynamic queue, durably and resumably; under mpirun, one replica per rank.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <unistd.h>

#include "batch/coordinator.h"
#include "batch/fault_injection.h"
#include "batch/local_replicas.h"
#include "batch/mpi_transport.h"
#include "batch/request.h"
#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/model_argument.h"
#include "cli/model_options.h"
#include "core/error.h"
#include "core/json.h"
#include "model/config.h"
#include "serve/chat_template.h"
#include "serve/openai_request.h"
#include "serve/tool_calls.h"
#include "structured/vocabulary.h"

namespace plexus::cli {

namespace {

constexpr int kMaxBadLinesShown = 20;

void declare_batch_flags(Args& args) {
  add_model_argument(args, "MODEL", "model directory (config.json + safetensors [+ tokenizer.json]) or a .gguf file");
  args.option("--input", "FILE", "requests, one JSON object per line: {\"id\", \"prompt\" | \"ids\" | \"messages\", \"max_tokens\"?, "
                                 "\"temperature\"?, \"seed\"?, ...} or the OpenAI Batch API's {\"custom_id\", \"method\", \"url\", \"body\"}")
      .option("--output", "FILE", "results, one JSON line per request (appended durably; an existing file is resumed)")
      .option("--replicas", "N", "model replicas in this process, each on its own thread share and device group", "1")
      .option("--max-retries", "N", "tries of a failed request on other replicas after the first", "2")
      .option("--on-bad-line", "MODE", "a bad input line: fail (exit 2 before any work) | skip (report it and go on)", "fail")
      .option("--tool-call-parser", "NAME", "how the model writes tool calls (chat lines with \"tools\"): llama3_json, hermes, "
              "mistral, none, or auto (what the chat template asks for)", "auto")
      .flag("--json", "print the summary as one JSON object on stdout");
  add_generation_options(args, {.max_tokens = "tokens to generate per request unless it says \"max_tokens\"",
                                .temperature = "sample with this temperature unless a request says \"temperature\" (0, or below 1e-5: greedy)",
                                .seed = "seed of requests without \"seed\""});
  add_run_options(args, {.max_sequences = "8",
                         .max_sequences_help = "requests a replica takes from the queue and generates together at most "
                                               "(the plan keeps KV-cache room for each)",
                         .max_sequences_old_names = {"--batch", "--batch-size"}});
  args.epilog(
      "Output lines: {\"id\", \"ids\", \"text\" (with a tokenizer), \"finish_reason\", \"prompt_tokens\",\n"
      "\"completion_tokens\", \"replica\", \"latency_ms\"}; for OpenAI Batch API input lines, the Batch API's\n"
      "{\"id\", \"custom_id\", \"response\": {\"status_code\", \"request_id\", \"body\"}, \"error\"} with the body plexus\n"
      "serve would answer. Both take serve's n, echo, logprobs, response_format, grammar, tools and\n"
      "tool_choice. Running the same command again resumes: ids already\n"
      "in the output are skipped, a torn last line is cut. Requests that fail for good go to\n"
      "OUT.errors.jsonl (rewritten each run) and the exit code is 1. With --virtual-devices N (or other\n"
      "device flags) the devices are split into --replicas equal groups. Under mpirun / srun, rank 0\n"
      "coordinates and writes, every other rank runs one replica. See docs/batch.md.");
}

batch::RequestDefaults request_defaults(const Args& args) {
  const GenerateOptions o = generation_options(args);
  batch::RequestDefaults d;
  d.max_tokens = o.max_tokens;
  d.sampling = o.sampling;
  return d;
}

long long int_in(const Args& args, const char* name, long long lo, long long hi) {
  const long long v = args.get_int(name);
  if (v < lo || v > hi) {
    throw InputError(std::string(name) + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                     std::to_string(v));
  }
  return v;
}

// Reads and checks the input; prints bad lines as FILE:LINE: reason; InputError for the first
// one under --on-bad-line fail (before the output is touched).
batch::ParsedInput read_input(const Args& args, const std::string& model_dir, const Tokenizer* tok) {
  const std::string mode = args.get_choice("--on-bad-line", {"fail", "skip"});
  const ModelConfig config = load_model_config(model_dir);
  // "messages" are rendered with the model's template, as serve renders them; a malformed one
  // fails only the lines that need it.
  std::optional<ChatTemplate> chat_template;
  batch::ParseContext pc;
  try {
    chat_template = ChatTemplate::from_model(model_dir);
  } catch (const InputError& e) {
    pc.chat_template_error = e.what();
  }
  pc.tokenizer = tok;
  pc.chat_template = chat_template ? &*chat_template : nullptr;
  pc.eos_ids = stop_ids(args, config, tok);
  pc.vocab_size = config.vocab_size;
  pc.max_context = engine_options(args).max_context > 0 ? engine_options(args).max_context : config.max_position_embeddings;
  pc.defaults = request_defaults(args);
  // As serve: --tool-call-parser, by default what the template asks for; "n" at most 16 and no
  // more than the choices a replica generates together.
  const std::string parser = args.get("--tool-call-parser");
  pc.tool_format = parser != "auto" ? tool_call_format_named(parser)
                                    : chat_template ? tool_call_format(chat_template->source()) : ToolCallFormat::kNone;
  pc.max_choices = static_cast<int>(std::min<long long>(kMaxChoices, int_in(args, "--max-sequences", 1, 65536)));
  const std::string input = args.get("--input");
  batch::ParsedInput parsed = batch::read_requests(input, pc);
  if (!parsed.bad.empty() && mode == "fail") {
    std::string msg = batch::describe_bad_line(input, parsed.bad.front());
    if (parsed.bad.size() > 1) msg += " (and " + std::to_string(parsed.bad.size() - 1) + " more bad lines)";
    throw InputError(msg + "; nothing was run: fix the input or pass --on-bad-line skip");
  }
  int shown = 0;
  for (const batch::BadLine& b : parsed.bad) {
    if (shown++ == kMaxBadLinesShown) {
      std::fprintf(stderr, "plexus batch: ... and %zu more bad lines (all in the errors file)\n", parsed.bad.size() - kMaxBadLinesShown);
      break;
    }
    std::fprintf(stderr, "plexus batch: skipping %s\n", batch::describe_bad_line(input, b).c_str());
  }
  return parsed;
}

void print_summary(const Args& args, const batch::BatchSummary& s) {
  std::fprintf(stderr, "%s", batch::summary_to_text(s).c_str());
  if (args.get_flag("--json")) std::printf("%s\n", batch::summary_to_json(s).dump().c_str());
  std::fflush(stdout);
}

// The vocabulary grammars see, as serve's: every token's bytes (`tok`), the model's
// end-of-sequence ids. Made by a replica when its first structured request comes.
structured::Vocabulary grammar_vocabulary(const Tokenizer* tok, const std::string& dir) {
  if (!tok) throw InputError("structured output (\"response_format\", \"grammar\", \"tool_choice\") needs the model's tokenizer.json");
  const ModelConfig config = load_model_config(dir);
  return structured::vocabulary_from_tokenizer(*tok, config.vocab_size, end_of_sequence_ids(config, tok->eos_id()));
}

// A replica decodes up to --max-sequences requests together: plan their KV caches. `run_context` > 0:
// the longest request (prompt + max_tokens) sizes the scratch; 0: the model's context (MPI
// workers do not see the requests).
std::shared_ptr<Runner> open_runner(const Args& args, const std::string& dir, const ReplicaShare& share,
                                    std::int64_t run_context = 0) {
  RunInputs in = run_inputs_from(args);
  in.replica = share;
  if (run_context > 0) in.engine.max_context = run_context;
  std::shared_ptr<ModelRun> run = plexus::open_model_run(in, dir);
  if (!run->device_note.empty() && share.index == 0) std::fprintf(stderr, "note: %s\n", run->device_note.c_str());
  return std::shared_ptr<Runner>(run, run->runner);
}

// Rank 0 of an MPI run, or the single process: reads the input, owns the output.
int coordinate(const Args& args, const std::string& dir, const batch::FaultInjection& faults, const batch::MpiWorld* world) {
  run_inputs_from(args);  // every run flag checked before any work, even when nothing is left to run
  const std::unique_ptr<Tokenizer> tok = load_tokenizer_if_any(dir);
  const std::string input = args.get("--input"), output = args.get("--output");
  batch::check_output_is_not_input(input, output);
  batch::ParsedInput parsed = read_input(args, dir, tok.get());
  const ModelConfig config = load_model_config(dir);
  const std::vector<std::int64_t> stops = stop_ids(args, config, tok.get());
  const int replicas = world ? world->size() - 1 : static_cast<int>(int_in(args, "--replicas", 1, 1024));
  if (!world) check_thread_share(engine_options(args).threads, replicas);
  const std::size_t batch_size = static_cast<std::size_t>(int_in(args, "--max-sequences", 1, 65536));
  if (static_cast<std::int64_t>(batch_size) > engine_options(args).max_batch_tokens) {
    throw InputError("--max-sequences " + std::to_string(batch_size) + " is above --batch-tokens " +
                     std::to_string(engine_options(args).max_batch_tokens) + ": a decode step holds one token per request");
  }
  batch::CoordinatorOptions co;
  co.output = output;
  co.queue.replicas = replicas;
  co.queue.max_retries = static_cast<int>(int_in(args, "--max-retries", 0, 100));
  co.kill_after = faults.kill_after;
  co.progress = ::isatty(STDERR_FILENO) != 0;
  co.model = args.get("MODEL");

  if (world) {
    batch::Coordinator coordinator(std::move(parsed), input, tok.get(), co);
    batch::run_mpi_coordinator(coordinator, *world, batch_size, stops);
    const batch::BatchSummary s = coordinator.finish();
    print_summary(args, s);
    return s.failed > 0 ? 1 : 0;
  }
  // Open the replicas before the output, so bad device flags change nothing; skip loading when
  // the output already holds every request.
  std::set<std::string> done;
  std::unique_ptr<batch::Journal> journal;
  if (std::filesystem::exists(output)) {
    journal = std::make_unique<batch::Journal>(output, batch::Journal::Mode::kResume, &batch::output_format(parsed.format));
    for (const Json& line : journal->existing()) done.insert(batch::result_key(line));
  }
  bool pending = false;
  std::int64_t run_context = 0;  // requests are checked against the model's context already
  for (const batch::BatchRequest& r : parsed.requests) {
    pending = pending || !done.count(r.key);
    run_context = std::max(run_context, static_cast<std::int64_t>(r.seq.prompt.size()) + r.seq.max_tokens);
  }
  std::vector<std::string> open_errors;
  const std::vector<std::shared_ptr<Runner>> runners =
      pending ? batch::open_replicas(replicas, [&](int r) { return open_runner(args, dir, ReplicaShare{r, replicas}, run_context); }, &open_errors)
              : std::vector<std::shared_ptr<Runner>>{};
  batch::Coordinator coordinator(std::move(parsed), input, tok.get(), co, std::move(journal));
  const Tokenizer* tokenizer = tok.get();
  if (pending) {
    batch::run_local_replicas(coordinator, runners, open_errors, batch_size, stops,
                              [tokenizer, &dir] { return grammar_vocabulary(tokenizer, dir); }, faults);
  }
  const batch::BatchSummary s = coordinator.finish();
  print_summary(args, s);
  return s.failed > 0 ? 1 : 0;
}

}  // namespace

int cmd_batch(int argc, char** argv) {
  Args args("batch",
            "Generate for every request of a JSON-lines file with data-parallel model replicas fed from one\n"
            "dynamic queue. Each result is appended and synced before it counts; running the same command\n"
            "again resumes. Failed requests are retried on another replica (--max-retries); those that fail\n"
            "for good go to OUT.errors.jsonl and the exit code is 1.");
  declare_batch_flags(args);
  if (!args.parse(argc, argv)) return 0;
  // PLEXUS_VIRTUAL_DEVICES=N without device flags: as --virtual-devices N (split between replicas).
  const char* env_devices = std::getenv("PLEXUS_VIRTUAL_DEVICES");
  if (env_devices && *env_devices && !args.get_optional("--virtual-devices") && !args.get_optional("--max-memory") &&
      !args.get_optional("--devices") && !args.get_optional("--device-map")) {
    std::vector<std::string> again(argv, argv + argc);
    again.insert(again.end(), {"--virtual-devices", env_devices});
    args = Args("batch", "");
    declare_batch_flags(args);
    args.parse(again);
  }
  const std::string dir = model_argument(args, ModelNeeds::kWeights);
  if (!args.has("--input") || !args.has("--output")) throw InputError("give --input FILE and --output FILE");
  const char* spec = std::getenv("PLEXUS_BATCH_FAIL");
  const batch::FaultInjection faults = batch::parse_fault_injection(spec ? spec : "");

  if (!batch::launched_by_mpi()) {
    // Several srun tasks without MPI would each write the same output.
    const char* step_tasks = std::getenv("SLURM_STEP_NUM_TASKS");
    if (step_tasks && std::atoi(step_tasks) > 1) {
      throw InputError("started as one of " + std::string(step_tasks) +
                       " srun tasks without MPI: launch with srun --mpi=pmix (or mpirun) so the tasks share one queue");
    }
    return coordinate(args, dir, faults, nullptr);
  }
  batch::MpiWorld world(nullptr, nullptr);
  if (world.size() == 1) return coordinate(args, dir, faults, nullptr);
  try {
    if (args.get_optional("--replicas") && args.get_int("--replicas") != 1) {
      throw InputError("--replicas: under mpirun every rank but 0 runs one replica; leave --replicas out");
    }
    if (world.rank() == 0) return coordinate(args, dir, faults, &world);
    const ReplicaShare share{world.local_worker_index(), world.local_workers()};
    batch::run_mpi_worker(world, [&] { return open_runner(args, dir, share); },
                          [&dir] { return grammar_vocabulary(load_tokenizer_if_any(dir).get(), dir); }, faults);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "plexus batch (rank %d): error: %s\n", world.rank(), e.what());
    std::fflush(stderr);
    world.abort(static_cast<int>(e.code()));
  }
}

}  // namespace plexus::cli
