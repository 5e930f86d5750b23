// libFuzzer target for chat templates: the input is a template's source, parsed and rendered by
// serve/jinja over a fixed conversation with tools and extra variables. Success, TemplateRaised
// or TemplateError (with the engine's limits on depth, steps and size) — nothing else.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "fuzz_util.h"
#include "serve/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const nlohmann::ordered_json kMessages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi <b>there</b>\n naïve 🤖"},
    {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": [1, 2.5, true, null]}}}]},
    {"role": "tool", "content": "{\"ok\": 1}"}])");
  try {
    plexus::ChatTemplateTokens tokens;
    tokens.bos_token = "<s>";
    tokens.eos_token = "</s>";
    const plexus::ChatTemplate tmpl(plexus::fuzz::text_of(data, size), tokens, [] { return 1795667400.0; });
    plexus::ChatInput input;
    input.messages = kMessages;
    input.tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {}}}])");
    input.kwargs = {{"enable_thinking", false}, {"n", 3}};
    (void)tmpl.render(input);
  } catch (const plexus::InputError&) {  // TemplateError and TemplateRaised are InputErrors
  }
  return 0;
}
