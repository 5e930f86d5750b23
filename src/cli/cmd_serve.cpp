// `plexus serve`: an OpenAI-compatible HTTP server for one model on any plan it can run, with
// continuous batching (serve/scheduler.h) and energy per request (serve/energy_ledger.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/interrupt_guard.h"
#include "cli/model_argument.h"
#include "cli/model_options.h"
#include "core/error.h"
#include "core/timer.h"
#include "monitor/monitor_session.h"
#include "runtime/generate.h"
#include "serve/chat_template.h"
#include "serve/tool_calls.h"
#include "structured/grammar_cache.h"
#include "structured/vocabulary.h"
#include "serve/energy_ledger.h"
#include "serve/http_server.h"
#include "serve/openai_api.h"
#include "serve/scheduler.h"

namespace plexus::cli {

namespace {

// How long past --drain-timeout the shutdown may take before the process exits regardless.
constexpr std::chrono::seconds kStopGrace{3};
// After the drain: how long the answers of the requests it finished may take to be written.
constexpr std::chrono::milliseconds kAnswerGrace{1000};

struct ServeFlags {
  HttpServerOptions http;
  SchedulerOptions scheduler;
  std::string model_name;
  std::chrono::milliseconds drain{10000};
  std::optional<ToolCallFormat> tool_format;  // --tool-call-parser; nullopt: auto (the template's)
};

ServeFlags serve_flags(const Args& args) {
  ServeFlags f;
  f.http.host = args.get("--host");
  if (f.http.host.empty()) throw InputError("--host must not be empty (e.g. 127.0.0.1, or 0.0.0.0 for every interface)");
  f.http.port = static_cast<int>(args.get_int_in("--port", 0, 65535));
  f.http.api_key = args.get_optional("--api-key").value_or("");
  if (args.given("--api-key") && f.http.api_key.empty()) throw InputError("--api-key must not be empty");
  f.http.max_body = static_cast<std::size_t>(args.get_int_in("--max-body", 1024, 1LL << 30));
  f.scheduler.max_sequences = static_cast<int>(args.get_int_in("--max-sequences", 1, 4096));
  f.scheduler.max_queue = static_cast<int>(args.get_int_in("--max-queue", 1, 1000000));
  f.scheduler.prefix_cache = !args.given("--no-prefix-cache");
  if (const std::string p = args.get("--tool-call-parser"); p != "auto") f.tool_format = tool_call_format_named(p);
  f.drain = std::chrono::milliseconds(static_cast<long long>(args.get_double_in("--drain-timeout", 0, 86400) * 1000));
  // Every running and waiting request's client holds a connection (streams for their whole
  // life), plus room for health checks, metrics and keep-alive connections between requests.
  f.http.threads = std::min(f.scheduler.max_sequences + f.scheduler.max_queue + 16, 8192);
  f.http.max_connections = args.given("--max-connections") ? static_cast<int>(args.get_int_in("--max-connections", 1, 1000000))
                                                            : default_max_connections(f.http.threads);
  f.http.request_timeout_s = args.get_double_in("--request-timeout", 0.001, 86400);
  return f;
}

int serve_run(const Args& args) {
  ServeFlags f = serve_flags(args);
  const std::string dir = model_argument(args, ModelNeeds::kWeights);
  f.model_name = args.get_optional("--served-model-name").value_or(args.get("MODEL"));
  if (f.model_name.empty()) throw InputError("--served-model-name must not be empty");
  RunInputs in = run_inputs_from(args);
  in.plan.batch = f.scheduler.max_sequences;  // the plan keeps KV-cache room for every running sequence
  if (in.plan.context > 0) in.engine.max_context = in.plan.context;
  std::optional<std::string> template_file = args.get_optional("--chat-template");
  std::string template_source;
  if (template_file) template_source = read_utf8_file(*template_file, "--chat-template");

  if (!Tokenizer::exists_in(dir)) {
    throw InputError("plexus serve needs the model's tokenizer, but '" + dir +
                     "' has no tokenizer.json (make test models with --tokenizer DIR)");
  }

  InterruptGuard guard;  // SIGINT / SIGTERM: drain and exit 0; a second one: exit 130 at once
  HttpServer server(f.http);
  const int port = server.bind();
  server.start();
  const bool ipv6 = f.http.host.find(':') != std::string::npos;  // "::1" is written [::1] in a URL
  char url[300];
  std::snprintf(url, sizeof url, "http://%s%s%s:%d", ipv6 ? "[" : "", f.http.host.c_str(), ipv6 ? "]" : "", port);
  std::fprintf(stderr, "plexus serve: loading '%s'; %s/health answers 503 until it is ready\n", args.get("MODEL").c_str(), url);
  if (server.max_connections() < f.http.max_connections) {
    std::fprintf(stderr, "note: --max-connections lowered from %d to %d: the open-file limit (ulimit -n) allows no more\n",
                 f.http.max_connections, server.max_connections());
  }
  std::fflush(stderr);

  // Loading: /health answers 503 meanwhile.
  Timer load_timer;
  std::unique_ptr<Tokenizer> tok = load_tokenizer_if_any(dir);
  std::optional<ChatTemplate> chat_template;
  if (template_file) {
    // The model's special tokens, as its own template would see them.
    ChatTemplateTokens special;
    if (auto bos = tok->bos_id()) special.bos_token = tok->id_to_piece(*bos);
    if (auto eos = tok->eos_id()) special.eos_token = tok->id_to_piece(*eos);
    chat_template.emplace(template_source, special);
  } else {
    chat_template = ChatTemplate::from_model(dir);
  }
  std::unique_ptr<ModelRun> run = plexus::open_model_run(in, dir);
  if (!run->device_note.empty()) std::fprintf(stderr, "note: %s\n", run->device_note.c_str());
  Runner& runner = *run->runner;
  // Every 50 ms: a request's usage waits for the sample after its last step (when a device
  // reports energy), so the interval bounds what energy accounting adds to its latency.
  constexpr double kEnergyIntervalMs = 50;
  EnergyLedger ledger(make_sources(source_options_for_run(device_options_from_env(), run->cuda_gpus)), kEnergyIntervalMs);
  Scheduler scheduler(runner, f.scheduler, &ledger);
  // The idle power: a few samples before the first request can come (before the listening line).
  constexpr int kIdleSamples = 5;
  ledger.wait_idle(kIdleSamples);

  ServedModel model;
  model.name = f.model_name;
  model.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  model.max_model_len = runner.max_context();
  model.vocab_size = runner.vocab_size();
  model.tokenizer = tok.get();
  model.chat_template = chat_template ? &*chat_template : nullptr;
  model.eos_ids = end_of_sequence_ids(runner.config(), tok->eos_id());
  // Structured output: every token's bytes in a trie, made once; compiled grammars kept for reuse.
  structured::GrammarCache grammars;
  model.vocabulary = std::make_shared<const structured::Vocabulary>(
      structured::vocabulary_from_tokenizer(*tok, model.vocab_size, model.eos_ids));
  model.grammars = &grammars;
  model.tool_format = f.tool_format.value_or(chat_template ? tool_call_format(chat_template->source()) : ToolCallFormat::kNone);
  model.max_choices = std::min(kMaxChoices, f.scheduler.max_sequences);
  model.submit = [&scheduler](ServeRequest r) { return scheduler.submit(std::move(r)); };
  OpenAiApi api(model, &server.metrics());
  server.set_ready(&api, [&scheduler, &ledger] {
    MetricsSnapshot s;
    s.scheduler = scheduler.stats();
    s.devices = ledger.devices();
    s.measured_j = ledger.measured_j();
    s.attributed_j = ledger.attributed_j();
    s.load = ledger.load();
    return s;
  });

  if (!run->plan_text.empty()) std::fprintf(stderr, "%s", run->plan_text.c_str());
  const SchedulerStats st = scheduler.stats();
  // Where it computes: the GPUs (CUDA's numbering), or the host's threads and instruction set.
  std::string where;
  for (int g : run->cuda_gpus) where += (where.empty() ? "GPU " : ",") + std::to_string(g);
  if (where.empty()) where = std::to_string(run->threads) + " threads, " + run->isa;
  std::fprintf(stderr,
               "plexus serve: model '%s' loaded in %.2f s (%s); context %lld tokens, up to %d sequences, "
               "KV budget %lld tokens, queue %d%s%s%s%s\n",
               model.name.c_str(), load_timer.seconds(), where.c_str(), static_cast<long long>(model.max_model_len),
               f.scheduler.max_sequences, static_cast<long long>(st.kv_budget_tokens), f.scheduler.max_queue,
               chat_template ? "" : "; no chat template (chat requests get 400)",
               model.tool_format == ToolCallFormat::kNone ? "" : "; tool calls: ", model.tool_format == ToolCallFormat::kNone ? "" : format_name(model.tool_format),
               f.http.api_key.empty() ? "" : "; API key required");
  std::fprintf(stderr, "plexus serve: listening on %s\n", url);  // only now: /health answers 200
  std::fflush(stderr);

  while (!InterruptGuard::requested()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::fprintf(stderr, "plexus serve: %s: finishing running requests (up to %.1f s; a second signal exits at once)\n",
               InterruptGuard::signal_number() == SIGINT ? "SIGINT" : "SIGTERM", static_cast<double>(f.drain.count()) / 1000);
  std::fflush(stderr);
  server.set_draining();
  // The drain, then every connection closed, on a thread of their own, so that a second signal —
  // or a stop that overruns the drain by far (a handler that does not return) — ends the process
  // here whatever they wait for.
  std::atomic<bool> stopped{false};
  std::thread stopping([&] {
    scheduler.drain(f.drain);
    server.stop(kAnswerGrace);  // the drained requests' answers are written, then all closes
    stopped = true;
  });
  const auto give_up = std::chrono::steady_clock::now() + f.drain + kStopGrace;
  while (!stopped) {
    if (InterruptGuard::count() > 1) {
      std::fprintf(stderr, "plexus serve: second signal: exiting now\n");
      std::_Exit(130);
    }
    if (std::chrono::steady_clock::now() > give_up) {
      std::fprintf(stderr, "plexus serve: not stopped %lld s after the drain timeout: exiting now\n",
                   static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(kStopGrace).count()));
      std::_Exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stopping.join();
  std::fprintf(stderr, "plexus serve: stopped\n");
  return 0;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  Args args("serve",
            "Serve a model over an OpenAI-compatible HTTP API: /v1/completions, /v1/chat/completions (streaming\n"
            "too), /v1/models, /tokenize, /detokenize, /health and Prometheus /metrics. Requests share the\n"
            "model through continuous batching; every response's usage carries its time_s and energy_j.");
  add_model_argument(args, "MODEL", "model directory (config.json + safetensors + tokenizer.json) or a .gguf file");
  args.option("--host", "ADDR", "address to listen on (0.0.0.0: every interface)", "127.0.0.1")
      .option("--port", "N", "TCP port (0: any free port, printed on stderr)", "8080")
      .option("--max-queue", "N", "requests waiting at most; beyond, 429", "64")
      .flag("--no-prefix-cache", "run every prompt whole: keep no finished prompt's KV cache for later requests "
            "starting with the same tokens")
      .option("--api-key", "KEY", "require 'Authorization: Bearer KEY' on every endpoint but /health")
      .option("--served-model-name", "NAME", "the model's name in the API (default: MODEL as given)")
      .option("--chat-template", "FILE", "a Jinja chat template to use instead of the model's")
      .option("--tool-call-parser", "NAME", "how the model writes tool calls: llama3_json, hermes, mistral, none, or auto "
              "(what the chat template asks for)", "auto")
      .option("--max-body", "BYTES", "largest request body; larger ones get 413", std::to_string(kDefaultMaxBody))
      .option("--drain-timeout", "S", "on SIGINT / SIGTERM, seconds running requests may take to finish", "10")
      .option("--max-connections", "N",
              "connections open at most; at the cap the oldest idle, unfinished, finished or slowly read one makes room "
              "(default: 1024, or the worker threads + 256 when larger; workers: --max-sequences + --max-queue + 16, "
              "at most 8192)")
      .option("--request-timeout", "S", "seconds a client has to send a whole request (headers and body) from its first byte; "
              "slower: 408", std::to_string(kDefaultRequestTimeout));
  add_run_options(args, {.max_sequences = "8",
                         .max_sequences_help = "requests generating together at most (the plan keeps KV cache for each)"});
  args.epilog(
      "Plan and device flags are those of `plexus generate` (--context N: tokens per sequence; the plan keeps\n"
      "KV-cache room for --max-sequences of them). The server binds first and answers /health with 503 while\n"
      "the model loads. SIGINT / SIGTERM: stop taking requests, let running ones finish (--drain-timeout),\n"
      "close every connection and exit 0; a second signal exits 130 at once. See docs/serve.md.");
  if (!args.parse(argc, argv)) return 0;
  return serve_run(args);
}

}  // namespace plexus::cli
