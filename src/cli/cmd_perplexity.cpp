// `plexus perplexity`: per-token negative log-likelihood of a text under a model.
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_argument.h"
#include "cli/model_options.h"
#include "cli/mpi_tensor.h"
#include "core/error.h"
#include "model/token_id.h"
#include "core/json.h"
#include "core/mmap_file.h"
#include "runtime/generate.h"

namespace plexus::cli {

namespace {

// `mpi`: this process is one rank of a tensor-parallel group across processes; rank 0 reads the
// text and its ids are everyone's.
int score(const Args& args, MpiTensorGroup* mpi) {
  const std::string dir = model_argument(args, ModelNeeds::kWeights);
  const int sources = args.has("--ids") + args.has("--text") + args.has("--file");
  if (sources != 1) throw InputError("give exactly one of --ids LIST, --text TEXT or --file PATH");
  const bool reads = !mpi || mpi->root();
  if (reads && args.has("--file")) read_utf8_file(args.get("--file"), "--file");  // a bad file fails before the model loads

  const std::unique_ptr<ModelRun> run = open_model_run(args, dir, {}, 0, mpi);
  Runner& runner = *run->runner;
  const bool verbose = args.get_flag("--verbose");
  if (verbose && !run->plan_text.empty()) std::fprintf(stderr, "%s", run->plan_text.c_str());
  std::vector<std::int32_t> ids;
  if (reads) {
    std::unique_ptr<Tokenizer> tok = load_tokenizer_if_any(dir);
    if (args.has("--ids")) ids = ids_from_ids_option(args.get("--ids"));
    else if (args.has("--text")) ids = ids_from_text(tok.get(), args.get("--text"), dir, "--text");
    else ids = ids_from_text(tok.get(), read_utf8_file(args.get("--file"), "--file"), dir, "--file");
  }
  if (mpi) mpi->share(ids);
  check_token_ids(ids, runner.vocab_size(), args.has("--ids")    ? "--ids"
                                            : args.has("--text") ? "--text (as the tokenizer encodes it)"
                                                                 : "--file (as the tokenizer encodes it)");
  const PerplexityResult r = perplexity(runner, ids);
  // Execution statistics: a plan's devices, or (across processes) rank 0's.
  const bool execution = run->planned() || run->tensor;
  if (args.get_flag("--json")) {
    Json j = {{"nll", r.nll}, {"ppl", r.ppl}, {"n_tokens", r.n_tokens}, {"tokens_per_s", r.tokens_per_s}};
    if (execution) j["execution"] = exec_stats_to_json(run->stats());
    std::printf("%s\n", j.dump().c_str());
  } else {
    double sum = 0;
    for (double x : r.nll) sum += x;
    std::printf("tokens %lld  mean nll %.6f  perplexity %.4f  (%.1f tok/s)\n", static_cast<long long>(r.n_tokens),
                sum / static_cast<double>(r.nll.size()), r.ppl, r.tokens_per_s);
    if (verbose && execution) std::fprintf(stderr, "%s", exec_stats_to_text(run->stats()).c_str());
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

int cmd_perplexity(int argc, char** argv) {
  Args args("perplexity",
            "Score a text: the natural-log negative log-likelihood of every token given the ones before\n"
            "it, and the perplexity exp(mean NLL). Text is tokenized with special tokens added.");
  add_model_argument(args, "MODEL", "model directory or .gguf file");
  args.option("--ids", "LIST", "token ids, e.g. 1,2,3")
      .option("--text", "TEXT", "text (needs the model's tokenizer.json)")
      .option("--file", "PATH", "read the text from a file")
      .flag("--json", "print {nll, ppl, n_tokens, tokens_per_s} (+ execution stats on several devices)");
  add_run_options(args);
  args.epilog(
      "Under mpirun (`mpirun -np N plexus perplexity MODEL --tp N ...`) every process is one tensor-parallel\n"
      "rank on its host's CPU; rank 0 reads the text and prints the result. See docs/parallel.md.");
  if (!args.parse(argc, argv)) return 0;
  const std::unique_ptr<MpiTensorGroup> mpi = MpiTensorGroup::join(args, "perplexity");
  if (mpi) return mpi->run("perplexity", [&] { return score(args, mpi.get()); });
  return score(args, nullptr);
}

}  // namespace plexus::cli
