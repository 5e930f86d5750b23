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

namespace plexus::jinja {

struct RenderLimits {
  std::size_t max_output = std::size_t{64} << 20;  // bytes of output, and of any one string
  std::size_t max_items = 1'000'000;                // items of any one list made by the template
  int max_depth = 2000;                             // nested evaluation (expressions, blocks, calls)
  int max_call_depth = 100;                         // nested macro calls
  std::int64_t max_steps = 10'000'000;              // statements run and loop iterations
  std::int64_t max_range = 1'000'000;               // elements of one range()
};

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
  // TemplateError unless a string of `size` bytes fits the limits.
  void check_size(std::size_t size) const;
  // TemplateError unless a list of `items` fits the limits.
  void check_items(std::size_t items) const;
  void count_steps(std::int64_t n);
  // Counts the work of having made `v` (a step per list item, per 256 bytes of a string); returns v.
  Value charge(Value v);
  const RenderLimits& limits() const { return limits_; }

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
  RenderLimits limits_;
  std::vector<std::shared_ptr<Frame>> frames_;
  std::string* out_ = nullptr;
  int depth_ = 0, call_depth_ = 0;
  std::int64_t steps_ = 0;
  int line_ = 0, column_ = 0;  // where the current statement or expression starts
};

}  // namespace plexus::jinja
