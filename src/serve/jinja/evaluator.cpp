// The Jinja evaluator (see evaluator.h): statements, expressions, scopes, macros and limits.
#include "serve/jinja/evaluator.h"

#include <cmath>
#include <exception>
#include <limits>

#include "serve/chat_template.h"
#include "serve/jinja/builtins.h"
#include "serve/jinja/integers.h"
#include "serve/jinja/operators.h"
#include "serve/jinja/string_ops.h"

namespace plexus::jinja {

// The deepest nesting of lists and dicts a namespace attribute may hold (JSON input stops at 512).
constexpr int kMaxValueDepth = 600;

// Counts nesting on the way in and out of every evaluation, and notes where it is.
struct Evaluator::Guard {
  Guard(Evaluator& ev, int line, int column)
      : ev_(ev), line_(ev.line_), column_(ev.column_), unwinding_(std::uncaught_exceptions()) {
    ev.line_ = line;
    ev.column_ = column;
    if (++ev.depth_ > ev.limits().max_depth)
      ev.fail("the template nests deeper than " + std::to_string(ev.limits().max_depth) + " levels as it runs");
  }
  ~Guard() {
    --ev_.depth_;
    if (std::uncaught_exceptions() > unwinding_) return;  // an error keeps the place it happened
    ev_.line_ = line_;
    ev_.column_ = column_;
  }
  Evaluator& ev_;
  int line_, column_;
  int unwinding_;
};

Evaluator::Evaluator(const Dict& globals, RenderLimits limits) : globals_(globals), work_(limits) {
  frames_.push_back(std::make_shared<Frame>());
}

void Evaluator::fail(const std::string& message) const {
  if (line_ == 0) throw TemplateError(message);
  throw TemplateError("template error at line " + std::to_string(line_) + ", column " + std::to_string(column_) +
                      ": " + message);
}

std::string Evaluator::render(const Body& body) {
  std::string out;
  out_ = &out;
  try {
    exec_body(body);
  } catch (const TemplateRaised&) {
    throw;
  } catch (const TemplateError& e) {
    // Errors of values (printing, comparing, storing) learn where they happened here.
    if (std::string(e.what()).rfind("template ", 0) == 0) throw;
    fail(e.what());
  }
  return out;
}

void Evaluator::write(const std::string& s) { work_.append(*out_, s, "writing the output"); }

std::string Evaluator::capture(const Body& body) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    exec_body(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buf;
}

Value Evaluator::lookup(const std::string& name) const {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
    auto f = (*it)->find(name);
    if (f != (*it)->end()) return f->second;
  }
  if (const Value* v = globals_.find(name)) return *v;
  return Value::undefined("'" + name + "' is undefined");
}

void Evaluator::assign(const std::string& name, Value v) { (*frames_.back())[name] = std::move(v); }

Evaluator::Flow Evaluator::exec_body(const Body& body) {
  for (const auto& s : body) {
    const Flow f = exec(*s);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec(const Stmt& s) {
  Guard g(*this, s.line, s.column);
  work_.steps(1);
  switch (s.kind) {
    case Stmt::Kind::kText: write(s.text); return Flow::kNormal;
    case Stmt::Kind::kOutput: write(eval(*s.expr).str(work_)); return Flow::kNormal;
    case Stmt::Kind::kIf:
      for (std::size_t i = 0; i < s.conditions.size(); ++i)
        if (eval(*s.conditions[i]).truthy()) return exec_body(s.bodies[i]);
      return exec_body(s.else_body);
    case Stmt::Kind::kFor: return exec_for(s);
    case Stmt::Kind::kSet: exec_set(s); return Flow::kNormal;
    case Stmt::Kind::kSetBlock: {
      Value v(capture(s.body));
      if (s.expr) v = eval_filter(*s.expr, &v);
      assign(s.targets[0], std::move(v));
      return Flow::kNormal;
    }
    case Stmt::Kind::kMacro: assign(s.name, make_macro(s)); return Flow::kNormal;
    case Stmt::Kind::kFilterBlock: {
      const Value body(capture(s.body));
      write(eval_filter(*s.expr, &body).str(work_));
      return Flow::kNormal;
    }
    case Stmt::Kind::kBreak: return Flow::kBreak;
    case Stmt::Kind::kContinue: return Flow::kContinue;
    case Stmt::Kind::kDo: eval(*s.expr); return Flow::kNormal;
  }
  return Flow::kNormal;
}

List Evaluator::iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList:
      work_.steps(static_cast<std::int64_t>(v.as_list().size()));
      work_.bytes(kItemBytes, v.as_list().size(), "copying a list");
      return v.as_list();
    case Value::Kind::kDict: {
      work_.steps(static_cast<std::int64_t>(v.as_dict().size()));
      List keys;
      for (const auto& [k, _] : v.as_dict().items()) {
        work_.bytes(kItemBytes + k.size(), "listing a dict's keys");
        keys.emplace_back(k);
      }
      return keys;
    }
    case Value::Kind::kString: {
      // A list of one-character strings: a step and an item (with its string) per character.
      const std::string& t = v.as_string();
      work_.bytes(kCharCost, t.size(), "counting characters");
      const std::size_t n = count_chars(t);
      work_.check_items(n);
      work_.steps(static_cast<std::int64_t>(n));
      work_.bytes(kItemBytes + sizeof(std::string), n, "splitting a string into characters");
      List chars;
      for (std::size_t i = 0; i < t.size(); i += char_len(t, i)) chars.emplace_back(t.substr(i, char_len(t, i)));
      return chars;
    }
    case Value::Kind::kNone:
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
    case Value::Kind::kFunction: break;
  }
  fail("'" + v.type_name() + "' object is not iterable");
}

Evaluator::Flow Evaluator::exec_for(const Stmt& s) {
  List items = iterate(eval(*s.expr));
  frames_.push_back(std::make_shared<Frame>());
  struct Pop {
    ~Pop() { frames.pop_back(); }
    std::vector<std::shared_ptr<Frame>>& frames;
  } pop{frames_};
  auto bind = [&](const Value& item) {
    if (s.targets.size() == 1) {
      assign(s.targets[0], item);
      return;
    }
    // A list's items are read in place; anything else is iterated (charged).
    const List iterated = item.is_list() ? List() : iterate(item);
    const List& parts = item.is_list() ? item.as_list() : iterated;
    if (parts.size() != s.targets.size())
      fail("cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(s.targets.size()) + " names");
    for (std::size_t i = 0; i < parts.size(); ++i) assign(s.targets[i], parts[i]);
  };
  if (s.filter) {
    List kept;
    for (const Value& item : items) {
      work_.steps(1);
      bind(item);
      if (eval(*s.filter).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    return exec_body(s.else_body);
  }
  const auto n = static_cast<std::int64_t>(items.size());
  // One `loop` object, updated in place each iteration (as jinja2's LoopContext) while nothing
  // else holds it. Once stored (in a namespace, a list kept there) it keeps the fields it had
  // and the loop goes on in a copy: a stored value never changes, so none becomes a cycle.
  auto index = std::make_shared<std::int64_t>(0);
  Value loop = Value::dict();
  {
    Dict& fields = loop.mutable_dict();
    fields.set("length", Value(n));
    fields.set("depth", Value(1));
    fields.set("depth0", Value(0));
    fields.set("cycle", Value::function("loop.cycle", [index](Evaluator& ev, CallArgs& a) -> Value {
      if (a.positional.empty()) ev.fail("loop.cycle() needs at least one value");
      return a.positional[static_cast<std::size_t>(*index) % a.positional.size()];
    }));
    for (const char* name : {"index", "index0", "revindex", "revindex0", "first", "last", "previtem", "nextitem"})
      fields.set(name, Value());
  }
  constexpr std::size_t kFirstChanging = 4;  // after length, depth, depth0, cycle
  for (std::int64_t i = 0; i < n; ++i) {
    work_.steps(1);
    *index = i;
    frames_.back()->clear();  // each iteration starts from the scope outside the loop (jinja2)
    if (loop.dict_shared()) {
      work_.bytes(kItemBytes, loop.as_dict().size(), "copying the loop object");
      loop = Value::dict(loop.as_dict());
    }
    // The fields that change, in the order they were first set (by position: no lookups).
    Dict& fields = loop.mutable_dict();
    auto field = [&](std::size_t k) -> Value& { return fields.value_at(kFirstChanging + k); };
    field(0) = Value(i + 1);
    field(1) = Value(i);
    field(2) = Value(n - i);
    field(3) = Value(n - i - 1);
    field(4) = Value(i == 0);
    field(5) = Value(i == n - 1);
    field(6) = i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value::undefined("there is no loop.previtem");
    field(7) = i + 1 < n ? items[static_cast<std::size_t>(i + 1)] : Value::undefined("there is no loop.nextitem");
    bind(items[static_cast<std::size_t>(i)]);
    assign("loop", loop);
    if (exec_body(s.body) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Evaluator::exec_set(const Stmt& s) {
  Value v = eval(*s.expr);
  if (!s.attr.empty()) {
    Value target = lookup(s.targets[0]);
    if (!target.is_namespace())
      fail("cannot assign attribute '" + s.attr + "' of '" + s.targets[0] + "': only a namespace() takes attributes");
    check_storable(v, target, kMaxValueDepth, work_);
    target.mutable_dict().set(s.attr, std::move(v));
    return;
  }
  if (s.targets.size() == 1) {
    assign(s.targets[0], std::move(v));
    return;
  }
  const List parts = iterate(v);
  if (parts.size() != s.targets.size())
    fail("cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(s.targets.size()) + " names");
  for (std::size_t i = 0; i < parts.size(); ++i) assign(s.targets[i], parts[i]);
}

Value Evaluator::make_macro(const Stmt& s) {
  const Stmt* def = &s;
  // A macro sees the scopes around its definition (a macro inside a loop sees `loop`), as jinja2's
  // closures do, and a scope of its own for its arguments.
  // Weak: the macro is stored in one of these scopes, and must not keep it alive (a cycle).
  const std::vector<std::weak_ptr<Frame>> closure(frames_.begin(), frames_.end());
  return Value::function(s.name, [def, closure](Evaluator& ev, CallArgs& args) -> Value {
    if (ev.call_depth_ >= ev.limits().max_call_depth)
      ev.fail("macro '" + def->name + "' calls nest deeper than " + std::to_string(ev.limits().max_call_depth) + " levels");
    if (args.positional.size() > def->params.size())
      ev.fail("macro '" + def->name + "' takes " + std::to_string(def->params.size()) + " arguments, got " +
              std::to_string(args.positional.size()));
    auto frame = std::make_shared<Frame>();
    std::vector<std::shared_ptr<Frame>> frames;
    for (const auto& weak : closure)
      if (auto f = weak.lock()) frames.push_back(std::move(f));  // a loop's scope ends with the loop
    frames.push_back(frame);
    frames.swap(ev.frames_);
    ++ev.call_depth_;
    struct Restore {
      ~Restore() {
        ev.frames_.swap(frames);
        --ev.call_depth_;
      }
      Evaluator& ev;
      std::vector<std::shared_ptr<Frame>>& frames;
    } restore{ev, frames};
    for (std::size_t i = 0; i < def->params.size(); ++i) {
      const std::string& p = def->params[i];
      Value v;
      bool found = i < args.positional.size();
      if (found) v = args.positional[i];
      for (const auto& [k, kv] : args.keyword)
        if (k == p) {
          if (found) ev.fail("macro '" + def->name + "' got argument '" + p + "' twice");
          v = kv;
          found = true;
        }
      if (!found) v = def->defaults[i] ? ev.eval(*def->defaults[i]) : Value::undefined("'" + p + "' is undefined");
      (*frame)[p] = std::move(v);
    }
    for (const auto& [k, _] : args.keyword) {
      bool known = false;
      for (const auto& p : def->params) known = known || p == k;
      if (!known) ev.fail("macro '" + def->name + "' has no argument '" + k + "'");
    }
    return Value(ev.capture(def->body));
  });
}

Value Evaluator::call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) fail(fn.name() + " (it cannot be called)");
  if (!fn.is_function()) fail("'" + fn.type_name() + "' object is not callable");
  return fn.as_function()(*this, args);
}

Value Evaluator::attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail(obj.name() + " (reading its attribute '" + name + "')");
  // As jinja2's getattr: a method of the object first (`d.items` is the method even when d has
  // a key "items"), then a dict's key.
  Value m = method(obj, name);
  if (!m.is_undefined() || !m.name().empty()) return m;
  if (obj.is_dict())
    if (const Value* v = obj.as_dict().find(name)) return *v;
  return Value::undefined("'" + obj.type_name() + " object' has no attribute " + Value(name.substr(0, 80)).brief());
}

Value Evaluator::item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail(obj.name() + " (reading its item " + key.brief() + ")");
  if (obj.is_dict()) {
    if (key.is_string()) {
      work_.bytes(key.as_string().size(), "looking up a key");
      if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
      Value m = method(obj, key.as_string());  // as jinja2's getitem: then an attribute
      if (!m.is_undefined()) return m;
    }
    return Value::undefined("'dict object' has no item " + key.brief());
  }
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    // Past 64 bits no index is in range (jinja2: Python's IndexError, so undefined).
    if (key.big()) return Value::undefined("index " + key.brief() + " is out of range");
    const std::int64_t k = clamped_int(key);
    if (obj.is_list()) {
      const auto n = static_cast<std::int64_t>(obj.as_list().size());
      const std::int64_t i = k < 0 ? k + n : k;
      if (i >= 0 && i < n) return obj.as_list()[static_cast<std::size_t>(i)];
    } else {
      // The k-th code point: a scan of the string (twice for a negative k, to count them).
      const std::string& t = obj.as_string();
      work_.bytes(kCharCost, t.size(), "indexing a string");
      std::int64_t i = k;
      if (k < 0) {
        work_.bytes(kCharCost, t.size(), "indexing a string");
        i += static_cast<std::int64_t>(count_chars(t));
      }
      std::size_t at = 0;
      if (is_ascii(t)) at = i < 0 ? t.size() : static_cast<std::size_t>(std::min<std::int64_t>(i, static_cast<std::int64_t>(t.size())));
      else
        for (std::int64_t c = 0; c < i && at < t.size(); ++c) at += char_len(t, at);
      if (i >= 0 && at < t.size()) return Value(t.substr(at, char_len(t, at)));
    }
    return Value::undefined("index " + std::to_string(k) + " is out of range");
  }
  if (key.is_string()) return attribute(obj, key.as_string());
  return Value::undefined("'" + obj.type_name() + " object' has no item " + key.brief());
}

void Evaluator::eval_call_args(const Expr& e, CallArgs& args) {
  for (std::size_t i = 0; i < e.args.size(); ++i) {
    Value v = eval(*e.args[i]);
    if (e.arg_names[i].empty()) {
      if (!args.keyword.empty()) fail("a positional argument follows a keyword argument");
      args.positional.push_back(std::move(v));
    } else {
      args.keyword.emplace_back(e.arg_names[i], std::move(v));
    }
  }
}

Value Evaluator::eval_filter(const Expr& e, const Value* hole) {
  Guard g(*this, e.line, e.column);
  const Value input = e.children[0] ? (e.children[0]->kind == Expr::Kind::kFilter ? eval_filter(*e.children[0], hole)
                                                                                   : eval(*e.children[0]))
                                    : *hole;
  CallArgs args;
  eval_call_args(e, args);
  return apply_filter(*this, e.name, input, args);
}

Value Evaluator::eval(const Expr& e) {
  Guard g(*this, e.line, e.column);
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.value;
    case Expr::Kind::kName: return lookup(e.name);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      List items;
      for (const auto& c : e.children) items.push_back(eval(*c));
      return Value::list(std::move(items), e.kind == Expr::Kind::kTuple);
    }
    case Expr::Kind::kDict: {
      Dict d;
      for (std::size_t i = 0; i + 1 < e.children.size(); i += 2) {
        const Value k = eval(*e.children[i]);
        const std::string key = k.is_string() ? k.as_string() : k.str(work_);
        work_.bytes(3, key.size(), "making a dict");  // the key copied twice and hashed
        d.set(key, eval(*e.children[i + 1]));
      }
      return Value::dict(std::move(d));
    }
    case Expr::Kind::kAttr: return attribute(eval(*e.children[0]), e.name);
    case Expr::Kind::kItem: {
      const Value obj = eval(*e.children[0]);
      return item(obj, eval(*e.children[1]));
    }
    case Expr::Kind::kSlice: {
      const Value obj = eval(*e.children[0]);
      Value parts[3];
      for (int k = 0; k < 3; ++k)
        if (e.children[static_cast<std::size_t>(k) + 1]) parts[k] = eval(*e.children[static_cast<std::size_t>(k) + 1]);
      return slice(*this, obj, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::kCall: {
      const Value fn = eval(*e.children[0]);
      CallArgs args;
      eval_call_args(e, args);
      return call(fn, args);
    }
    case Expr::Kind::kFilter: return eval_filter(e, nullptr);
    case Expr::Kind::kTest: {
      const Value v = eval(*e.children[0]);
      CallArgs args;
      eval_call_args(e, args);
      return Value(apply_test(*this, e.name, v, args) != e.negated);
    }
    case Expr::Kind::kUnary: {
      const Value v = eval(*e.children[0]);
      if (e.name == "not") return Value(!v.truthy());
      return unary(*this, e.name, v);
    }
    case Expr::Kind::kBinary: return eval_binary(e);
    case Expr::Kind::kCompare: {
      Value left = eval(*e.children[0]);
      for (std::size_t i = 1; i < e.children.size(); ++i) {
        Value right = eval(*e.children[i]);
        if (!binary(*this, e.arg_names[i - 1], left, right).truthy()) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::kCond:
      if (eval(*e.children[1]).truthy()) return eval(*e.children[0]);
      return e.children[2] ? eval(*e.children[2]) : Value::undefined("the missing else branch is undefined");
  }
  return Value();
}

Value Evaluator::eval_binary(const Expr& e) {
  const std::string& op = e.name;
  Value a = eval(*e.children[0]);
  if (op == "and") return a.truthy() ? eval(*e.children[1]) : a;
  if (op == "or") return a.truthy() ? a : eval(*e.children[1]);
  const Value b = eval(*e.children[1]);
  return binary(*this, op, a, b);
}

}  // namespace plexus::jinja
