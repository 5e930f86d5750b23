// plexus: plan, run and measure large language models across devices. Dispatches subcommands.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/args.h"
#include "core/error.h"
#include "core/nearest_name.h"
#include "core/version.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int, char**);
};

// One line per subcommand; keep in the order `plexus --help` should list them.
const Command kCommands[] = {
    {"generate", "generate text or token ids from a prompt", plexus::cli::cmd_generate},
    {"batch", "generate for a JSON-lines file of requests with data-parallel replicas, resumably", plexus::cli::cmd_batch},
    {"serve", "serve a model over an OpenAI-compatible HTTP API (continuous batching, energy per request)", plexus::cli::cmd_serve},
    {"deploy", "write Docker, Compose, Kubernetes or Slurm deployment files from the plan (plexus, vLLM, TGI, TEI)", plexus::cli::cmd_deploy},
    {"train", "fine-tune a model with data-parallel replicas on CPU devices (checkpoints, --resume, mpirun)", plexus::cli::cmd_train},
    {"perplexity", "per-token negative log-likelihood and perplexity of a text", plexus::cli::cmd_perplexity},
    {"quantize", "write a Hugging Face checkpoint as a GGUF file in a llama.cpp mix (Q4_K_M, Q8_0, IQ4_XS, ...)", plexus::cli::cmd_quantize},
    {"make-model", "write a random-weight Hugging Face checkpoint for tests and demos", plexus::cli::cmd_make_model},
    {"version", "print the plexus version and commit", plexus::cli::cmd_version},
    {"estimate", "model size per dtype, largest layer, training and KV-cache memory", plexus::cli::cmd_estimate},
    {"plan", "place a model's weights on devices (accelerate-compatible or stages)", plexus::cli::cmd_plan},
    {"calibrate", "measure this machine for plan's speed and energy predictions", plexus::cli::cmd_calibrate},
    {"tokenize", "encode text with a Hugging Face tokenizer.json (ids, decoded)", plexus::cli::cmd_tokenize},
    {"chat-template", "render a model's chat template for conversations (JSON lines)", plexus::cli::cmd_chat_template},
    {"detect", "list devices (GPUs or virtual), their links and the host", plexus::cli::cmd_detect},
    {"doctor", "pre-flight check of devices for a multi-device run", plexus::cli::cmd_doctor},
    {"monitor", "live per-device utilisation, memory, power; energy summary", plexus::cli::cmd_monitor},
    {"bench", "run a YAML benchmark (throughput, latency, energy per device); bench compare", plexus::cli::cmd_bench},
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "plexus %s — plan, run and measure large language models across devices\n\n"
               "usage: plexus <command> [arguments] [--help]\n\ncommands:\n",
               PLEXUS_VERSION);
  // The summaries in one column after the longest name, wrapped under themselves.
  int width = 0;
  for (const Command& c : kCommands) width = std::max(width, static_cast<int>(std::strlen(c.name)));
  for (const Command& c : kCommands) {
    char name[64];
    std::snprintf(name, sizeof name, "  %-*s  ", width, c.name);
    std::fprintf(out, "%s\n", plexus::wrap_text(name + std::string(c.summary)).c_str());
  }
  std::fprintf(out, "\n'plexus <command> --help' describes each command.\n"
                    "exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad input, 130 interrupted (SIGINT/SIGTERM)\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return 0;
  }
  if (name == "--version") {
    std::printf("plexus %s (%s)\n", PLEXUS_VERSION, PLEXUS_GIT_COMMIT);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.run(argc - 2, argv + 2);
    } catch (const plexus::Error& e) {
      std::fprintf(stderr, "plexus %s: error: %s\n", c.name, e.what());
      return static_cast<int>(e.code());
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "plexus %s: error: out of memory\n", c.name);
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "plexus %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::vector<std::string> names{"help", "--help", "--version"};
  for (const Command& c : kCommands) names.push_back(c.name);
  std::fprintf(stderr, "plexus: unknown command '%s'%s\n\n", name.c_str(), plexus::did_you_mean(name, names).c_str());
  print_usage(stderr);
  return 2;
}
