// A parsed Jinja template (see template.h).
#include "serve/jinja/template.h"

#include "serve/jinja/builtins.h"
#include "serve/jinja/parser.h"

namespace plexus::jinja {

Template::Template(const std::string& source) : body_(parse(source)) {}

std::string Template::render(const Dict& variables, const RenderLimits& limits) const {
  Dict globals;
  add_builtin_globals(globals);
  for (const auto& [k, v] : variables.items()) globals.set(k, v);
  Evaluator ev(globals, limits);
  return ev.render(body_);
}

}  // namespace plexus::jinja
