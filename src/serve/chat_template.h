// A model's chat template — the Jinja source in tokenizer_config.json's "chat_template" (or a
// GGUF file's tokenizer.chat_template) — rendered by our own Jinja engine (serve/jinja/) the way
// Hugging Face transformers renders it: trim_blocks, lstrip_blocks, loop controls, `tojson`
// without ASCII escaping, `raise_exception`, `strftime_now`.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/json.h"

namespace plexus {

// The special tokens a template may read (bos_token, eos_token, unk_token, pad_token): plain
// strings, or tokenizer_config.json's AddedToken objects ({"content": "<s>", ...}) read as their content.
struct ChatTemplateTokens {
  std::optional<std::string> bos_token, eos_token, unk_token, pad_token;
};

// One render's inputs, as an OpenAI chat request and transformers' apply_chat_template carry them.
// Ordered JSON: `tojson` prints keys in the order the request gave them, as transformers does
// (a Json assigns to these, with its keys sorted).
struct ChatInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{"role", "content", ...}]
  nlohmann::ordered_json tools;  // null, or [{"type": "function", "function": {...}}]
  bool add_generation_prompt = true;
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // extra template variables (e.g. "enable_thinking")
};

// The template called raise_exception(message): `what()` is its message exactly.
class TemplateRaised : public InputError {
 public:
  explicit TemplateRaised(const std::string& message) : InputError(message) {}
};

// Any other failure of a template: a syntax error (with line and column), an undefined
// operation, a type error — in words a person can act on. Also an InputError (a bad template or
// messages it cannot render are bad input).
class TemplateError : public InputError {
 public:
  explicit TemplateError(const std::string& message) : InputError(message) {}
};

class ChatTemplate {
 public:
  // Parses `source` once (TemplateError on a syntax error). `now` gives strftime_now's time
  // (seconds since the epoch, local time as UTC); null: the clock.
  ChatTemplate(const std::string& source, ChatTemplateTokens tokens, std::function<double()> now = {});
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // The template of a model: MODEL is a directory with tokenizer_config.json (no tokenizer.json
  // needed) or a GGUF file. "chat_template" may be a string or a list of {"name", "template"}
  // (the one named "default"). nullopt when the model has none; InputError naming the file and
  // field when it is malformed.
  static std::optional<ChatTemplate> from_model(const std::string& model);

  // The rendered prompt text. TemplateRaised when the template raises, TemplateError otherwise.
  std::string render(const ChatInput& input) const;
  // The Jinja source it was made from (what tool-call format it asks for: serve/tool_calls.h).
  const std::string& source() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus
