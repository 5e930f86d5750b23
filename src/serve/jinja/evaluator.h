// The Jinja evaluator: runs a parsed template (ast.h) over variables and writes its output,
// with jinja2's scoping (for loops and macros open a scope; if does not), its default Undefined,
// and limits that keep hostile templates and data from crashing or hanging the process.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "serve/jinja/ast.h"
#include "serve/jinja/value.h"
#include "serve/jinja/work.h"

namespace plexus::jinja {

class Evaluator {
 public:
  Evaluator(const Dict& globals, RenderLimits limits);

  std::string render(const Body& body);

  // Calls a callable value (a function, a macro, a bound method).
  Value call(const Value& fn, CallArgs& args);
  // `obj.name`: a dict's key, a method of a string, list or dict, or undefined.
  Value attribute(const Value& obj, const std::string& name);
  // `obj[key]`: an item of a list, dict or string, or undefined.
  Value item(const Value& obj, const Value& key);
  // The elements `for` iterates over (a dict's keys, a string's characters); TemplateError
  // when `v` is not iterable.
  List iterate(const Value& v);

  // TemplateError "line L, column C: MESSAGE" at the expression or statement being run.
  [[noreturn]] void fail(const std::string& message) const;
  // The render's limits and the work counted against them (work.h).
  Work& work() { return work_; }
  const RenderLimits& limits() const { return work_.limits(); }

 private:
  using Frame = std::unordered_map<std::string, Value>;
  struct Guard;
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec_body(const Body& body);
  Flow exec(const Stmt& s);
  Flow exec_for(const Stmt& s);
  void exec_set(const Stmt& s);
  Value make_macro(const Stmt& s);
  std::string capture(const Body& body);
  void write(const std::string& s);

  Value eval(const Expr& e);
  Value eval_binary(const Expr& e);
  void eval_call_args(const Expr& e, CallArgs& args);
  Value eval_filter(const Expr& e, const Value* hole);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);

  const Dict& globals_;
  Work work_;
  std::vector<std::shared_ptr<Frame>> frames_;
  std::string* out_ = nullptr;
  int depth_ = 0, call_depth_ = 0;
  int line_ = 0, column_ = 0;  // where the current statement or expression starts
};

}  // namespace plexus::jinja
