// The Jinja parser: tokens (lexer.h) to a syntax tree (ast.h). TemplateError "template syntax
// error at line L, column C: ..." on anything it cannot read; nesting deeper than
// kMaxNesting (expressions or blocks) is an error, not a stack overflow.
#pragma once
#include <string>

#include "serve/jinja/ast.h"

namespace plexus::jinja {

inline constexpr int kMaxNesting = 200;

Body parse(const std::string& source);

}  // namespace plexus::jinja
