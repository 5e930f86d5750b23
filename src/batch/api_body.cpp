// Request bodies through the server's parser and preparation (batch/api_body.h).
#include "batch/api_body.h"

#include <algorithm>
#include <array>

#include "core/error.h"
#include "serve/api_error.h"
#include "serve/openai_api.h"
#include "serve/openai_request.h"

namespace plexus::batch {

namespace {

// Every field parse_completion_request / parse_chat_request read (serve/openai_request.cpp). A
// field the parser learns must be added here to be accepted in batch: until then a batch line
// holding it is refused by name (never run without it). Adding one means that what it changes
// reaches the replica: through SequenceRequest (copied from the prepared ServeRequest below) and
// the task's JSON for MPI workers (batch/replica_worker.cpp).
constexpr std::array<std::string_view, 20> kCommonFields = {
    "model",       "temperature", "top_p", "top_k",  "seed",   "stop",  "stream",  "stream_options", "ignore_eos",
    "n",           "best_of",     "echo",  "suffix", "presence_penalty", "frequency_penalty", "logit_bias",
    "max_tokens",  "min_p",       "repetition_penalty", "stop_token_ids"};
constexpr std::array<std::string_view, 2> kCompletionFields = {"prompt", "logprobs"};
constexpr std::array<std::string_view, 8> kChatFields = {"messages", "tools",    "tool_choice", "add_generation_prompt", "chat_template_kwargs",
                                                         "max_completion_tokens", "logprobs", "top_logprobs"};
// Read by the parser too ("response_format", "grammar"); "user" identifies the end user (ignored).
constexpr std::array<std::string_view, 3> kBatchFields = {"response_format", "grammar", "user"};

template <std::size_t N>
bool in(const std::array<std::string_view, N>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool given(const Json& body, const char* name) {
  const auto it = body.find(name);
  return it != body.end() && !it->is_null();
}

}  // namespace

bool is_body_field(std::string_view name, bool chat) {
  return in(kCommonFields, name) || in(kBatchFields, name) || (chat ? in(kChatFields, name) : in(kCompletionFields, name));
}

void parse_body_into(const Json& body, const std::string& body_text, bool chat, BodyDefaults defaults,
                     const ParseContext& context, BatchRequest& out) {
  ApiRequest api = chat ? parse_chat_request(body) : parse_completion_request(body);
  if (chat) keep_key_order(api.chat_input, body_text);
  if (api.stream) throw invalid_request("'stream': true is not supported in batch (each result is written whole)", "stream");
  if (api.echo && !chat && api.logprobs >= 0) {
    throw invalid_request("'echo' with 'logprobs' (the prompt's log-probabilities) is not supported in batch yet", "echo");
  }
  if (!context.tokenizer) {
    if (chat) throw InputError("\"messages\" need a tokenizer, but the model has no tokenizer.json");
    if (api.prompt_text) throw InputError("\"prompt\" needs a tokenizer, but the model has no tokenizer.json: give \"ids\"");
    if (!api.stop.empty()) throw InputError("\"stop\" needs a tokenizer (stop strings are found in the text), but the model has no tokenizer.json");
  }
  if (chat && !context.chat_template) {
    throw invalid_request(context.chat_template_error.empty()
                              ? "the model has no chat template (tokenizer_config.json's \"chat_template\"): give a prompt"
                              : "the model's chat template cannot be used: " + context.chat_template_error,
                          "messages", "no_chat_template");
  }
  if (defaults == BodyDefaults::kCommand) {
    const SamplingOptions& d = context.defaults.sampling;
    if (!given(body, "max_tokens") && !given(body, "max_completion_tokens")) api.max_tokens = context.defaults.max_tokens;
    if (!given(body, "temperature")) api.sampling.greedy = d.greedy, api.sampling.temperature = d.temperature;
    if (!given(body, "top_p")) api.sampling.top_p = d.top_p;
    if (!given(body, "top_k")) api.sampling.top_k = d.top_k;
  }
  api.model.clear();  // the command's model answers every line, whatever the body names
  ServedModel model;
  model.max_model_len = context.max_context;
  model.vocab_size = context.vocab_size;
  model.tokenizer = context.tokenizer;
  model.chat_template = context.chat_template;
  model.eos_ids = context.eos_ids;
  model.tool_format = context.tool_format;
  model.max_choices = context.max_choices;
  model.compile_grammars = false;  // each replica compiles the grammar it runs (batch/replica_grammars.h)
  PreparedRequest p;
  try {
    p = OpenAiApi(model, nullptr).prepare(std::move(api));
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {  // the tokenizer: e.g. its regex engine's limits on a huge piece
    throw InputError(std::string(chat ? "\"messages\"" : "\"prompt\"") + " cannot be tokenized: " + e.what());
  }
  if (!p.grammar.empty()) {  // the replica compiles it over the tokenizer's tokens, ending at an end-of-sequence id
    const std::string field = chat && p.tool_format == ToolCallFormat::kJsonList ? "tool_choice"
                              : p.grammar_source == "grammar"                    ? "grammar"
                                                                                 : "response_format";
    if (p.serve.stop_ids.empty()) {
      throw invalid_request("'" + field + "': a structured answer ends with an end-of-sequence id, and this run has none "
                            "(--ignore-eos, or a model that names none)", field);
    }
    if (!context.tokenizer) throw InputError("\"" + field + "\" (structured output) needs the model's tokenizer.json");
  }
  out.seq.prompt = std::move(p.serve.prompt);
  out.seq.max_tokens = p.serve.max_tokens;
  out.seq.sampling = p.serve.sampling;
  if (!p.api.seed_given) out.seq.sampling.seed = context.defaults.sampling.seed;  // never the server's random seed
  out.seq.stop_ids = p.serve.stop_ids;
  out.chat = chat;
  out.stop = p.api.stop;
  out.logprobs = p.api.logprobs;
  out.choices = p.serve.choices;
  out.echo = std::move(p.echo);
  out.tool_format = p.tool_format;
  out.grammar = std::move(p.grammar);
  out.grammar_source = std::move(p.grammar_source);
}

}  // namespace plexus::batch
