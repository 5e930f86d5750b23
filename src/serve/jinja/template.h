// A parsed Jinja template, rendered any number of times over variables (the engine's entry
// point; serve/chat_template.h builds the chat templates on it).
#pragma once
#include <string>

#include "serve/jinja/ast.h"
#include "serve/jinja/evaluator.h"

namespace plexus::jinja {

class Template {
 public:
  // TemplateError "template syntax error at line L, column C: ..." when `source` is not valid.
  explicit Template(const std::string& source);

  // The output over `variables` (range, namespace and dict are added). TemplateRaised when a
  // global such as raise_exception throws it; TemplateError on any other failure.
  std::string render(const Dict& variables, const RenderLimits& limits = {}) const;

 private:
  Body body_;
};

}  // namespace plexus::jinja
