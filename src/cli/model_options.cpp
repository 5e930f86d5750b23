// Shared model-loading options of the run commands.
#include "cli/model_options.h"

#include <cstdio>
#include <limits>

#include "cli/interrupt_guard.h"
#include "cli/mpi_tensor.h"
#include "cli/plan_options.h"
#include "core/error.h"
#include "core/mmap_file.h"
#include "tokenizer/utf8.h"

namespace plexus::cli {

void add_engine_options(Args& args) {
  args.option("--threads", "N", "CPU threads, never exceeded, split over the devices of a run (0: one per hardware thread)", "0")
      .option("--batch-tokens", "N", "tokens per forward pass when prefilling (larger uses more memory)", "256");
}

EngineOptions engine_options(const Args& args) {
  EngineOptions o;
  const long long threads = args.get_int("--threads");
  if (threads < 0 || threads > 1024) throw InputError("--threads must be between 0 and 1024, got " + std::to_string(threads));
  o.threads = static_cast<int>(threads);
  o.max_batch_tokens = args.get_int("--batch-tokens");
  if (o.max_batch_tokens < 1 || o.max_batch_tokens > 65536) {
    throw InputError("--batch-tokens must be between 1 and 65536, got " + std::to_string(o.max_batch_tokens));
  }
  return o;
}

void add_run_options(Args& args, PlanFlagChoices choices) {
  add_engine_options(args);
  args.option("--wait", "POLICY",
              "how idle CPU threads wait: spin (lowest latency on an idle machine), passive (sleep at once: a busy "
              "machine), auto (spin briefly; not at all while the cores are seen contended)",
              "auto");
  choices.runs = true;
  add_plan_options(args, choices);
  args.option("--micro-batch", "M", "on several devices: sequences per micro-batch, the forward pass of --max-sequences N moving "
                                    "through the stages in N/M parts (0: one part per stage, 1 when weights stream)", "0")
      .option("--micro-batches", "K", "the old spelling: the number of parts").hidden()
      .flag("--verbose", "print the plan in use and per-device busy time, peak memory and streaming to stderr");
}

RunInputs run_inputs_from(const Args& args) {
  RunInputs in;
  in.engine = engine_options(args);
  in.engine.wait = wait_policy_flag(args.get("--wait"));
  in.plan = plan_inputs_from(args);
  if (args.given("--micro-batch") && args.given("--micro-batches")) {
    throw InputError("--micro-batch (sequences per micro-batch) and --micro-batches (their number, its old spelling) say the "
                     "same thing: give --micro-batch");
  }
  in.micro_batch = static_cast<int>(args.get_int_in("--micro-batch", 0, 65536));
  if (args.given("--micro-batches")) in.micro_batches = static_cast<int>(args.get_int_in("--micro-batches", 0, 4096));
  in.stop_requested = [] { return InterruptGuard::requested(); };
  return in;
}

std::unique_ptr<ModelRun> open_model_run(const Args& args, const std::string& model_dir, const ReplicaShare& share,
                                         std::int64_t run_context, MpiTensorGroup* mpi) {
  RunInputs in = run_inputs_from(args);
  in.replica = share;
  if (run_context > 0) in.engine.max_context = run_context;
  if (mpi) mpi->configure(in);
  std::unique_ptr<ModelRun> run = plexus::open_model_run(in, model_dir);
  if (!run->device_note.empty() && share.index == 0) std::fprintf(stderr, "note: %s\n", run->device_note.c_str());
  return run;
}

std::unique_ptr<Tokenizer> load_tokenizer_if_any(const std::string& model_dir) {
  if (!Tokenizer::exists_in(model_dir)) return nullptr;
  return Tokenizer::load(model_dir);
}

std::vector<std::int32_t> ids_from_ids_option(const std::string& list) {
  std::vector<std::int32_t> ids;
  for (long long v : parse_int_list(list, "--ids")) {
    if (v < 0 || v > std::numeric_limits<std::int32_t>::max()) {
      throw InputError("--ids: token id " + std::to_string(v) + " is negative or too large");
    }
    ids.push_back(static_cast<std::int32_t>(v));
  }
  return ids;
}

void check_utf8(const std::string& text, const std::string& what) {
  const std::size_t bad = utf8::find_invalid(text);
  if (bad == std::string::npos) return;
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
  throw InputError(what + ": not valid UTF-8 at byte offset " + std::to_string(bad) + " (byte " + byte +
                   "): plexus reads UTF-8 text; convert it first, e.g. iconv -f latin1 -t utf-8");
}

std::string read_utf8_file(const std::string& path, const std::string& option) {
  const std::string text = read_text_file(path);
  check_utf8(text, option + " " + path);
  return text;
}

std::vector<std::int32_t> ids_from_text(const Tokenizer* tokenizer, const std::string& text,
                                        const std::string& model_dir, const std::string& option) {
  check_utf8(text, option);
  if (!tokenizer) {
    throw InputError(option + " needs a tokenizer, but '" + model_dir +
                     "' has no tokenizer.json: pass token ids with --ids, or make the model with --tokenizer DIR");
  }
  return tokenizer->encode(text, /*add_special_tokens=*/true);
}

}  // namespace plexus::cli
