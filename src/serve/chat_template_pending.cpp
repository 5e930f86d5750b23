// Stand-in for serve/chat_template.cpp until the Jinja engine (serve/jinja/) is in this tree:
// models have no chat template, so chat requests get 400. src/serve/CMakeLists.txt builds this
// file only when chat_template.cpp is absent.
#include "serve/chat_template.h"

namespace plexus {

struct ChatTemplate::Impl {};

ChatTemplate::ChatTemplate(const std::string&, ChatTemplateTokens, std::function<double()>) {
  throw TemplateError("chat templates are not built into this plexus (no Jinja engine)");
}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::optional<ChatTemplate> ChatTemplate::from_model(const std::string&) { return std::nullopt; }

std::string ChatTemplate::render(const ChatInput&) const {
  throw TemplateError("chat templates are not built into this plexus (no Jinja engine)");
}

}  // namespace plexus
