// Chat templates (see chat_template.h): the model's template found in tokenizer_config.json,
// chat_template.jinja or a GGUF file, rendered by serve/jinja with transformers' globals.
#include "serve/chat_template.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>

#include "core/gguf_file.h"
#include "serve/jinja/evaluator.h"
#include "serve/jinja/template.h"

namespace plexus {

struct ChatTemplate::Impl {
  std::string source;
  jinja::Template tmpl;
  ChatTemplateTokens tokens;
  std::function<double()> now;
};

ChatTemplate::ChatTemplate(const std::string& source, ChatTemplateTokens tokens, std::function<double()> now)
    : impl_(std::make_unique<Impl>(Impl{source, jinja::Template(source), std::move(tokens), std::move(now)})) {}
ChatTemplate::~ChatTemplate() = default;
const std::string& ChatTemplate::source() const { return impl_->source; }
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

namespace {

// strftime_now(format): the time now (local time read as UTC) in strftime's format.
std::string format_time(const std::string& format, double seconds) {
  if (format.size() > 1000) throw TemplateError("strftime_now: the format is longer than 1000 characters");
  const auto t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::string buf(format.size() * 16 + 64, '\0');
  const std::size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
  buf.resize(n);
  return buf;
}

std::string token_text(const Json& config, const char* key, const std::string& where) {
  const Json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  throw InputError(where + ": field '" + key + "' must be a string or an object with a string \"content\"");
}

// "chat_template": a string, or a list of {"name", "template"} (the one named "default").
std::optional<std::string> template_field(const Json& config, const std::string& where) {
  if (!config.is_object() || !config.contains("chat_template") || config["chat_template"].is_null()) return std::nullopt;
  const Json& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {
    for (const Json& e : t) {
      if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e["name"].is_string() ||
          !e["template"].is_string())
        throw InputError(where + ": field 'chat_template' must list objects {\"name\": ..., \"template\": ...}");
      if (e["name"] == "default") return e["template"].get<std::string>();
    }
    throw InputError(where + ": field 'chat_template' lists no template named \"default\"");
  }
  throw InputError(where + ": field 'chat_template' must be a string or a list of {\"name\", \"template\"}");
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot read the file: check its permissions");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<ChatTemplate> from_gguf(const std::string& path) {
  const GgufFile file(path);
  const std::optional<std::string> source = gguf_chat_template(file);
  if (!source) return std::nullopt;
  ChatTemplateTokens tokens;
  const GgufValue* vocab = file.find("tokenizer.ggml.tokens");
  auto token = [&](const char* key) -> std::optional<std::string> {
    const std::optional<std::int64_t> id = file.get_int(key);
    if (!id || !vocab || vocab->type != GgufValue::Type::kArray) return std::nullopt;
    if (*id < 0 || static_cast<std::size_t>(*id) >= vocab->arr.size() ||
        vocab->arr[static_cast<std::size_t>(*id)].type != GgufValue::Type::kString)
      throw InputError(path + ": metadata '" + key + "' = " + std::to_string(*id) +
                       " is not a token of tokenizer.ggml.tokens");
    return vocab->arr[static_cast<std::size_t>(*id)].s;
  };
  tokens.bos_token = token("tokenizer.ggml.bos_token_id");
  tokens.eos_token = token("tokenizer.ggml.eos_token_id");
  tokens.unk_token = token("tokenizer.ggml.unknown_token_id");
  tokens.pad_token = token("tokenizer.ggml.padding_token_id");
  return ChatTemplate(*source, std::move(tokens));
}

}  // namespace

std::optional<ChatTemplate> ChatTemplate::from_model(const std::string& model) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(model, ec)) throw InputError(model + ": no such file or directory: give a model directory or a .gguf file");
  if (!fs::is_directory(model, ec)) {
    if (GgufFile::is_gguf(model)) return from_gguf(model);
    throw InputError(model + ": not a model directory or a GGUF file");
  }
  const fs::path dir(model);
  const fs::path config_path = dir / "tokenizer_config.json";
  Json config = Json::object();
  if (fs::exists(config_path, ec)) config = read_json_file(config_path.string());
  const std::string where = config_path.string();
  if (!config.is_object()) throw InputError(where + ": must be a JSON object");
  std::optional<std::string> source;
  // Newer transformers save the template beside the config; it wins over the config's field.
  if (fs::exists(dir / "chat_template.jinja", ec)) {
    source = read_text(dir / "chat_template.jinja");
  } else if (fs::exists(dir / "chat_template.json", ec)) {
    const std::string path = (dir / "chat_template.json").string();
    source = template_field(read_json_file(path), path);
  } else {
    source = template_field(config, where);
  }
  if (!source) return std::nullopt;
  ChatTemplateTokens tokens;
  auto token = [&](const char* key) -> std::optional<std::string> {
    if (!config.contains(key) || config[key].is_null()) return std::nullopt;
    return token_text(config, key, where);
  };
  tokens.bos_token = token("bos_token");
  tokens.eos_token = token("eos_token");
  tokens.unk_token = token("unk_token");
  tokens.pad_token = token("pad_token");
  try {
    return ChatTemplate(*source, std::move(tokens));
  } catch (const TemplateError& e) {
    throw TemplateError(where + ": chat_template: " + e.what());
  }
}

std::string ChatTemplate::render(const ChatInput& input) const {
  using jinja::Value;
  jinja::Dict vars;
  const ChatTemplateTokens& t = impl_->tokens;
  if (t.bos_token) vars.set("bos_token", Value(*t.bos_token));
  if (t.eos_token) vars.set("eos_token", Value(*t.eos_token));
  if (t.unk_token) vars.set("unk_token", Value(*t.unk_token));
  if (t.pad_token) vars.set("pad_token", Value(*t.pad_token));
  try {
    if (!input.kwargs.is_null() && !input.kwargs.is_object())
      throw TemplateError("the template's extra variables (kwargs) must be a JSON object");
    if (input.kwargs.is_object())
      for (auto it = input.kwargs.begin(); it != input.kwargs.end(); ++it) vars.set(it.key(), Value::from_json(it.value()));
    vars.set("messages", Value::from_json(input.messages));
    vars.set("tools", Value::from_json(input.tools));
    vars.set("documents", Value::none());
    vars.set("add_generation_prompt", Value(input.add_generation_prompt));
    vars.set("raise_exception", Value::function("raise_exception", [](jinja::Evaluator& ev, jinja::CallArgs& a) -> Value {
      throw TemplateRaised(a.positional.empty() ? std::string() : a.positional[0].str(ev.work()));
    }));
    const std::function<double()> now = impl_->now;
    vars.set("strftime_now", Value::function("strftime_now", [now](jinja::Evaluator& ev, jinja::CallArgs& a) -> Value {
      if (a.positional.size() != 1 || !a.positional[0].is_string()) ev.fail("strftime_now takes one string (a strftime format)");
      // Charged before it is made: a buffer of 16 bytes a format character (format_time), and
      // strftime's work, ~140 us for 1000 characters of '%c': 64 bytes a character in all.
      ev.work().bytes(std::min<std::uint64_t>(a.positional[0].as_string().size(), 1000) * 64 + 64, "formatting the time");
      return Value(format_time(a.positional[0].as_string(), now ? now() : static_cast<double>(std::time(nullptr))));
    }));
    return impl_->tmpl.render(vars);
  } catch (const TemplateRaised&) {
    throw;
  } catch (const TemplateError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw TemplateError("the template ran out of memory");
  } catch (const std::exception& e) {
    throw TemplateError(std::string("the template failed: ") + e.what());
  }
}

}  // namespace plexus
