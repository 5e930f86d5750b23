// The syntax tree of a parsed template: expressions and statements, each with the line and
// column it starts at (for error messages).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "serve/jinja/value.h"

namespace plexus::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // children
    kTuple,    // children
    kDict,     // children: key, value, key, value, ...
    kAttr,     // children[0].name
    kItem,     // children[0][children[1]]
    kSlice,    // children[0][children[1]:children[2]:children[3]] (null: omitted)
    kCall,     // children[0](args)
    kFilter,   // children[0] | name(args); children[0] null inside a filter block
    kTest,     // children[0] is [not] name(args)
    kUnary,    // op children[0]: "-", "+", "not"
    kBinary,   // children[0] op children[1]: + - * / // % ** ~ and or
    kCompare,  // children[0] arg_names[0] children[1] arg_names[1] ...: == != < > <= >= in "not in"
    kCond,     // children[0] if children[1] else children[2] (null: undefined)
  };
  Kind kind = Kind::kLiteral;
  Value value;
  std::string name;  // name, attribute, filter/test name, operator
  bool negated = false;  // tests: `is not`
  std::vector<ExprPtr> children;
  std::vector<ExprPtr> args;            // call, filter and test arguments
  std::vector<std::string> arg_names;   // parallel to args: "" for positional
  int line = 0, column = 0;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // conditions[i] -> bodies[i]; else_body
    kFor,          // for targets in expr [if filter] body [else else_body]
    kSet,          // set targets = expr, or set targets[0].attr = expr
    kSetBlock,     // set targets[0] %} body {% endset (with an optional filter in expr)
    kMacro,        // macro name(params = defaults) body
    kFilterBlock,  // filter expr (a kFilter chain on null) body
    kBreak,
    kContinue,
    kDo,           // do expr
  };
  Kind kind = Kind::kText;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;  // for: the loop filter
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body, else_body;
  std::vector<std::string> targets;
  std::string attr;  // set ns.attr
  std::string name;  // macro
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // parallel to params (null: none)
  int line = 0, column = 0;
};

}  // namespace plexus::jinja
