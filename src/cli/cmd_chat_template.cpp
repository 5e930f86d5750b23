// `plexus chat-template`: render a model's chat template for each line of a JSON-lines file of
// conversations and print one JSON line per input: {"rendered": ...} or {"error": ...}.
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/jsonl_lines.h"
#include "cli/model_argument.h"
#include "cli/write_stdout.h"
#include "core/args.h"
#include "core/error.h"
#include "core/json.h"
#include "serve/chat_template.h"

namespace plexus::cli {
namespace {

using OrderedJson = nlohmann::ordered_json;


std::string result_line(const char* key, const std::string& text) {
  OrderedJson out = OrderedJson::object();
  out[key] = text;
  return out.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

// One input line as a ChatInput; InputError naming `where` when it is not one.
ChatInput read_input(const std::string& line, const std::string& where) {
  check_json_depth(line, where);
  OrderedJson obj;
  try {
    obj = OrderedJson::parse(line);
  } catch (const OrderedJson::exception& e) {
    throw InputError(where + ": invalid JSON: " + e.what());
  }
  if (!obj.is_object() || !obj.contains("messages") || !obj["messages"].is_array())
    throw InputError(where + ": each line must be a JSON object with an array \"messages\"");
  ChatInput in;
  in.messages = obj["messages"];
  if (obj.contains("tools")) in.tools = obj["tools"];
  in.add_generation_prompt = false;
  if (obj.contains("add_generation_prompt")) {
    if (!obj["add_generation_prompt"].is_boolean())
      throw InputError(where + ": \"add_generation_prompt\" must be true or false");
    in.add_generation_prompt = obj["add_generation_prompt"].get<bool>();
  }
  if (obj.contains("kwargs") && !obj["kwargs"].is_null()) {
    if (!obj["kwargs"].is_object()) throw InputError(where + ": \"kwargs\" must be a JSON object");
    in.kwargs = obj["kwargs"];
  }
  return in;
}

}  // namespace

int cmd_chat_template(int argc, char** argv) {
  Args args("chat-template", "Render a model's chat template (Jinja, as Hugging Face transformers renders it) for conversations.");
  add_model_argument(args, "MODEL", "a model directory with tokenizer_config.json (or chat_template.jinja), or a .gguf file");
  args.option("--jsonl", "FILE",
              "render each line of FILE ('-' for stdin): {\"messages\": [...], \"tools\"?: [...], "
              "\"add_generation_prompt\"?: bool, \"kwargs\"?: {...}}")
      .epilog("Output, one line per input: {\"rendered\": \"...\"}, or {\"error\": \"...\"} when the template raises\n"
              "(raise_exception's message exactly) or fails on that input; such lines do not stop the run.\n"
              "add_generation_prompt defaults to false; kwargs are extra template variables (e.g. enable_thinking).\n"
              "Exit 2 on a missing file, a line that is not valid JSON (named FILE:LINE) or a model with no chat template.");
  if (!args.parse(argc, argv)) return 0;
  if (!args.has("--jsonl")) throw InputError("give --jsonl FILE: the conversations to render");
  const std::string model = model_argument(args, ModelNeeds::kFiles);
  std::optional<ChatTemplate> tmpl = ChatTemplate::from_model(model);
  if (!tmpl)
    throw InputError(model + ": the model has no chat template (no \"chat_template\" in tokenizer_config.json, "
                             "no chat_template.jinja, no tokenizer.chat_template in the GGUF file)");
  for_each_jsonl_line(args.get("--jsonl"), [&](const std::string& line, const std::string& where) {
    const ChatInput input = read_input(line, where);
    std::string out;
    try {
      out = result_line("rendered", tmpl->render(input));
    } catch (const TemplateRaised& e) {
      out = result_line("error", e.what());
    } catch (const TemplateError& e) {
      out = result_line("error", e.what());
    }
    write_stdout(out);
  });
  std::fflush(stdout);
  return 0;
}

}  // namespace plexus::cli
