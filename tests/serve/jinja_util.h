// Helpers of the Jinja tests: render a template over JSON variables, and the message of the
// error a render throws.
#pragma once
#include <string>

#include "serve/chat_template.h"
#include "serve/jinja/template.h"

namespace plexus::testing {

inline std::string render(const std::string& source, const nlohmann::ordered_json& vars = nlohmann::ordered_json::object(),
                          const jinja::RenderLimits& limits = {}) {
  jinja::Dict d;
  for (auto it = vars.begin(); it != vars.end(); ++it) d.set(it.key(), jinja::Value::from_json(it.value()));
  return jinja::Template(source).render(d, limits);
}

// The TemplateError message of parsing and rendering `source` ("" when it renders).
inline std::string render_error(const std::string& source,
                                const nlohmann::ordered_json& vars = nlohmann::ordered_json::object(),
                                const jinja::RenderLimits& limits = {}) {
  try {
    render(source, vars, limits);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}

}  // namespace plexus::testing
