// The Jinja parser (see parser.h): recursive descent with jinja2's operator precedence.
#include "serve/jinja/parser.h"

#include <initializer_list>

#include "serve/chat_template.h"
#include "serve/jinja/lexer.h"

namespace plexus::jinja {
namespace {

// An integer literal's value (past 64 bits, read from its digits).
Value int_literal(const Token& t) { return t.big_int ? Value(BigInt::from_digits(t.text, 10)) : Value(t.int_value); }

// As jinja2 reads a template (str.splitlines, joined with "\n", keep_trailing_newline off):
// every line break (\r\n, \r, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029) becomes "\n", and one
// newline at the very end goes.
std::string normalize_newlines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\r') {
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
      out.push_back('\n');
    } else if (c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) {
      out.push_back('\n');
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) {
      out.push_back('\n');
      ++i;
    } else if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out.push_back('\n');
      i += 2;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Body parse_all() {
    Body body = parse_body({});
    if (peek().kind != TokenKind::kEof) fail(peek(), "unexpected '" + peek().text + "'");
    return body;
  }

 private:
  // ---- tokens
  const Token& peek(std::size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& next() {
    const Token& t = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return t;
  }
  bool is_op(const char* op, std::size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kOp && peek(ahead).text == op;
  }
  bool is_name(const char* name, std::size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).text == name;
  }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(peek(), std::string("expected '") + op + "', got " + describe(peek()));
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::kName) fail(peek(), "expected a name, got " + describe(peek()));
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != TokenKind::kBlockEnd) fail(peek(), "expected '%}', got " + describe(peek()));
    next();
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kEof: return "the end of the template";
      case TokenKind::kText: return "text";
      case TokenKind::kBlockEnd: return "'%}'";
      case TokenKind::kVarEnd: return "'}}'";
      case TokenKind::kBlockBegin: return "'{%'";
      case TokenKind::kVarBegin: return "'{{'";
      case TokenKind::kString: return "a string";
      case TokenKind::kName:
      case TokenKind::kInt:
      case TokenKind::kFloat:
      case TokenKind::kOp: return "'" + t.text + "'";
    }
    return "?";
  }
  [[noreturn]] static void fail(const Token& t, const std::string& what) {
    throw TemplateError("template syntax error at line " + std::to_string(t.line) + ", column " +
                        std::to_string(t.column) + ": " + what);
  }

  struct Depth {
    Depth(Parser& p, const Token& at) : p_(p) {
      if (++p_.depth_ > kMaxNesting) fail(at, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    ~Depth() { --p_.depth_; }
    Parser& p_;
  };

  // ---- statements
  // Statements until a block tag whose keyword is in `ends` (left unread: the caller reads it).
  Body parse_body(std::initializer_list<const char*> ends) {
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == TokenKind::kEof) {
        if (ends.size() == 0) return body;
        std::string want;
        for (const char* e : ends) want += std::string(want.empty() ? "" : " or ") + "'" + e + "'";
        fail(t, "missing " + want + " (the block is not closed)");
      }
      if (t.kind == TokenKind::kText) {
        auto s = make_stmt(Stmt::Kind::kText, t);
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::kVarBegin) {
        next();
        auto s = make_stmt(Stmt::Kind::kOutput, t);
        s->expr = parse_expression();
        if (peek().kind != TokenKind::kVarEnd) fail(peek(), "expected '}}', got " + describe(peek()));
        next();
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::kBlockBegin) {
        for (const char* e : ends)
          if (is_name(e, 1)) return body;
        next();
        body.push_back(parse_statement());
      } else {
        fail(t, "unexpected " + describe(t));
      }
    }
  }

  StmtPtr make_stmt(Stmt::Kind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  // After '{%' at a keyword `name`: reads '{%', the keyword and '%}'.
  void expect_end_tag(const char* name) {
    next();  // {%
    if (!accept_name(name)) fail(peek(), std::string("expected '") + name + "'");
    expect_block_end();
  }

  StmtPtr parse_statement() {
    const Token& kw = peek();
    Depth d(*this, kw);
    const std::string word = expect_name();
    if (word == "if") return parse_if(kw);
    if (word == "for") return parse_for(kw);
    if (word == "set") return parse_set(kw);
    if (word == "macro") return parse_macro(kw);
    if (word == "filter") {
      auto s = make_stmt(Stmt::Kind::kFilterBlock, kw);
      auto first = make(Expr::Kind::kFilter, peek());
      first->name = expect_name();
      if (is_op("(")) parse_call_args(*first);
      first->children.push_back(nullptr);
      s->expr = parse_filters(std::move(first));
      expect_block_end();
      s->body = parse_body({"endfilter"});
      expect_end_tag("endfilter");
      return s;
    }
    if (word == "generation") {
      expect_block_end();
      auto s = make_stmt(Stmt::Kind::kIf, kw);  // an always-true if: renders its body
      auto yes = std::make_unique<Expr>();
      yes->value = Value(true);
      s->conditions.push_back(std::move(yes));
      s->bodies.push_back(parse_body({"endgeneration"}));
      expect_end_tag("endgeneration");
      return s;
    }
    if (word == "break" || word == "continue") {
      if (loop_depth_ == 0) fail(kw, "'" + word + "' outside a for loop");
      expect_block_end();
      return make_stmt(word == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, kw);
    }
    if (word == "do") {
      auto s = make_stmt(Stmt::Kind::kDo, kw);
      s->expr = parse_expression();
      expect_block_end();
      return s;
    }
    if (word.rfind("end", 0) == 0 || word == "elif" || word == "else")
      fail(kw, "'" + word + "' with no open block it could close");
    fail(kw, "unknown statement '" + word + "'");
  }

  StmtPtr parse_if(const Token& kw) {
    auto s = make_stmt(Stmt::Kind::kIf, kw);
    s->conditions.push_back(parse_expression());
    expect_block_end();
    while (true) {
      s->bodies.push_back(parse_body({"elif", "else", "endif"}));
      next();  // {%
      const std::string w = next().text;
      if (w == "elif") {
        s->conditions.push_back(parse_expression());
        expect_block_end();
      } else if (w == "else") {
        expect_block_end();
        s->else_body = parse_body({"endif"});
        expect_end_tag("endif");
        return s;
      } else {
        expect_block_end();
        return s;
      }
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool paren = accept_op("(");
    do {
      names.push_back(expect_name());
    } while (accept_op(","));
    if (paren) expect_op(")");
    return names;
  }

  StmtPtr parse_for(const Token& kw) {
    auto s = make_stmt(Stmt::Kind::kFor, kw);
    s->targets = parse_targets();
    if (!accept_name("in")) fail(peek(), "expected 'in' in the for loop, got " + describe(peek()));
    s->expr = parse_or();
    if (accept_name("if")) s->filter = parse_expression();
    if (accept_name("recursive")) fail(kw, "recursive for loops are not supported");
    expect_block_end();
    ++loop_depth_;
    s->body = parse_body({"else", "endfor"});
    --loop_depth_;
    if (is_name("else", 1)) {
      expect_end_tag("else");
      s->else_body = parse_body({"endfor"});
    }
    expect_end_tag("endfor");
    return s;
  }

  StmtPtr parse_set(const Token& kw) {
    auto s = make_stmt(Stmt::Kind::kSet, kw);
    if (peek().kind == TokenKind::kName && is_op(".", 1)) {
      s->targets.push_back(next().text);
      next();
      s->attr = expect_name();
    } else {
      s->targets = parse_targets();
    }
    if (accept_op("=")) {
      const Token& at = peek();
      s->expr = parse_expression();
      if (is_op(",")) {  // set a, b = 1, 2: a tuple without parentheses
        auto tuple = make(Expr::Kind::kTuple, at);
        tuple->children.push_back(std::move(s->expr));
        while (accept_op(",")) tuple->children.push_back(parse_expression());
        s->expr = std::move(tuple);
      }
      expect_block_end();
      return s;
    }
    if (s->targets.size() != 1 || !s->attr.empty()) fail(peek(), "expected '=' in the set statement");
    s->kind = Stmt::Kind::kSetBlock;
    if (is_op("|")) s->expr = parse_filters(nullptr);
    expect_block_end();
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_body({"endset"});
    loop_depth_ = saved;
    expect_end_tag("endset");
    return s;
  }

  StmtPtr parse_macro(const Token& kw) {
    auto s = make_stmt(Stmt::Kind::kMacro, kw);
    s->name = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      s->params.push_back(expect_name());
      s->defaults.push_back(accept_op("=") ? parse_expression() : nullptr);
      if (!accept_op(",")) break;
    }
    expect_op(")");
    expect_block_end();
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_body({"endmacro"});
    loop_depth_ = saved;
    expect_end_tag("endmacro");
    return s;
  }

  // ---- expressions
  ExprPtr make(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  ExprPtr binary(const Token& at, std::string op, ExprPtr a, ExprPtr b) {
    auto e = make(Expr::Kind::kBinary, at);
    e->name = std::move(op);
    e->children.push_back(std::move(a));
    e->children.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_expression() {
    const Token& at = peek();
    Depth d(*this, at);
    ExprPtr e = parse_or();
    if (is_name("if")) {
      next();
      auto c = make(Expr::Kind::kCond, at);
      c->children.push_back(std::move(e));
      c->children.push_back(parse_or());
      c->children.push_back(accept_name("else") ? parse_expression() : nullptr);
      return c;
    }
    return e;
  }

  // One level of left-associative binary operators (`words`: keywords such as `and`).
  ExprPtr parse_level(ExprPtr (Parser::*operand)(), std::initializer_list<const char*> ops, bool words = false) {
    ExprPtr e = (this->*operand)();
    while (true) {
      const char* op = nullptr;
      for (const char* o : ops)
        if (words ? is_name(o) : is_op(o)) op = o;
      if (!op) return e;
      const Token& at = next();
      e = binary(at, op, std::move(e), (this->*operand)());
    }
  }
  ExprPtr parse_or() { return parse_level(&Parser::parse_and, {"or"}, true); }
  ExprPtr parse_and() { return parse_level(&Parser::parse_not, {"and"}, true); }
  ExprPtr parse_not() {
    if (is_name("not")) {
      const Token& at = next();
      Depth d(*this, at);
      auto e = make(Expr::Kind::kUnary, at);
      e->name = "not";
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  // a < b <= c ...: chained as Python chains them (a < b and b <= c).
  ExprPtr parse_compare() {
    const Token& start = peek();
    ExprPtr first = parse_math1();
    ExprPtr chain;
    while (true) {
      const Token& at = peek();
      std::string op;
      if (at.kind == TokenKind::kOp &&
          (at.text == "==" || at.text == "!=" || at.text == "<" || at.text == ">" || at.text == "<=" || at.text == ">="))
        op = at.text;
      else if (is_name("in"))
        op = "in";
      else if (is_name("not") && is_name("in", 1))
        op = "not in";
      else
        return chain ? std::move(chain) : std::move(first);
      next();
      if (op == "not in") next();
      if (!chain) {
        chain = make(Expr::Kind::kCompare, start);
        chain->children.push_back(std::move(first));
      }
      chain->arg_names.push_back(op);
      chain->children.push_back(parse_math1());
    }
  }
  ExprPtr parse_math1() { return parse_level(&Parser::parse_concat, {"+", "-"}); }
  ExprPtr parse_concat() { return parse_level(&Parser::parse_math2, {"~"}); }
  ExprPtr parse_math2() { return parse_level(&Parser::parse_pow, {"*", "/", "//", "%"}); }
  ExprPtr parse_pow() { return parse_level(&Parser::parse_filtered_unary, {"**"}); }
  ExprPtr parse_filtered_unary() { return parse_unary(true); }
  ExprPtr parse_unary(bool with_filter) {
    const Token& at = peek();
    Depth d(*this, at);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      next();
      e = make(Expr::Kind::kUnary, at);
      e->name = at.text;
      e->children.push_back(parse_unary(false));
    } else {
      e = parse_postfix(parse_primary());
    }
    if (with_filter) return parse_filters(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    Depth d(*this, t);
    switch (t.kind) {
      case TokenKind::kName: {
        next();
        auto e = make(Expr::Kind::kLiteral, t);
        if (t.text == "true" || t.text == "True") e->value = Value(true);
        else if (t.text == "false" || t.text == "False") e->value = Value(false);
        else if (t.text == "none" || t.text == "None") e->value = Value::none();
        else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        return e;
      }
      case TokenKind::kString: {
        std::string s = next().text;
        while (peek().kind == TokenKind::kString) s += next().text;  // "a" "b" is "ab"
        auto e = make(Expr::Kind::kLiteral, t);
        e->value = Value(std::move(s));
        return e;
      }
      case TokenKind::kInt: {
        next();
        auto e = make(Expr::Kind::kLiteral, t);
        e->value = int_literal(t);
        return e;
      }
      case TokenKind::kFloat: {
        next();
        auto e = make(Expr::Kind::kLiteral, t);
        e->value = Value(t.float_value);
        return e;
      }
      case TokenKind::kOp:
        if (t.text == "(") {
          next();
          if (accept_op(")")) return make(Expr::Kind::kTuple, t);
          ExprPtr first = parse_expression();
          if (accept_op(")")) return first;
          auto e = make(Expr::Kind::kTuple, t);
          e->children.push_back(std::move(first));
          while (accept_op(",")) {
            if (is_op(")")) break;
            e->children.push_back(parse_expression());
          }
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          next();
          auto e = make(Expr::Kind::kList, t);
          while (!is_op("]")) {
            e->children.push_back(parse_expression());
            if (!accept_op(",")) break;
          }
          expect_op("]");
          return e;
        }
        if (t.text == "{") {
          next();
          auto e = make(Expr::Kind::kDict, t);
          while (!is_op("}")) {
            e->children.push_back(parse_expression());
            expect_op(":");
            e->children.push_back(parse_expression());
            if (!accept_op(",")) break;
          }
          expect_op("}");
          return e;
        }
        break;
      case TokenKind::kText:
      case TokenKind::kVarBegin:
      case TokenKind::kVarEnd:
      case TokenKind::kBlockBegin:
      case TokenKind::kBlockEnd:
      case TokenKind::kEof: break;
    }
    fail(t, "expected an expression, got " + describe(t));
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == TokenKind::kName && is_op("=", 1)) {
        e.arg_names.push_back(next().text);
        next();
      } else {
        e.arg_names.emplace_back();
      }
      e.args.push_back(parse_expression());
      if (!accept_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    int n = 0;
    while (true) {
      const Token& at = peek();
      if (++n > kMaxNesting) fail(at, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
      if (is_op(".")) {
        next();
        auto a = make(Expr::Kind::kAttr, at);
        if (peek().kind == TokenKind::kInt) {  // x.0 is x[0]
          a->kind = Expr::Kind::kItem;
          auto idx = make(Expr::Kind::kLiteral, peek());
          idx->value = int_literal(next());
          a->children.push_back(std::move(e));
          a->children.push_back(std::move(idx));
        } else {
          a->name = expect_name();
          a->children.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (is_op("[")) {
        next();
        ExprPtr parts[3];
        bool slice = false;
        for (int k = 0; k < 3; ++k) {
          if (!is_op(":") && !is_op("]")) parts[k] = parse_expression();
          if (k < 2 && accept_op(":")) {
            slice = true;
            continue;
          }
          break;
        }
        expect_op("]");
        auto a = make(slice ? Expr::Kind::kSlice : Expr::Kind::kItem, at);
        if (!slice && !parts[0]) fail(at, "expected a subscript");
        a->children.push_back(std::move(e));
        if (slice)
          for (auto& p : parts) a->children.push_back(std::move(p));
        else
          a->children.push_back(std::move(parts[0]));
        e = std::move(a);
      } else if (is_op("(")) {
        auto c = make(Expr::Kind::kCall, at);
        c->children.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  // `| f(args)` and `is [not] test args` after an operand (null: a filter block's chain).
  ExprPtr parse_filters(ExprPtr e) {
    int n = 0;
    while (true) {
      const Token& at = peek();
      if (++n > kMaxNesting) fail(at, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
      if (is_op("|")) {
        next();
        auto f = make(Expr::Kind::kFilter, at);
        f->name = expect_name();
        if (is_op("(")) parse_call_args(*f);
        f->children.push_back(std::move(e));
        e = std::move(f);
      } else if (is_name("is") && e) {
        next();
        auto t = make(Expr::Kind::kTest, at);
        t->negated = accept_name("not");
        t->name = expect_name();
        if (is_op("(")) {
          parse_call_args(*t);
        } else if (starts_test_argument()) {
          t->arg_names.emplace_back();
          t->args.push_back(parse_postfix(parse_primary()));
        }
        t->children.push_back(std::move(e));
        e = std::move(t);
      } else {
        return e;
      }
    }
  }
  bool starts_test_argument() const {
    const Token& t = peek();
    if (t.kind == TokenKind::kString || t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat) return true;
    if (t.kind == TokenKind::kOp) return t.text == "[" || t.text == "{";
    if (t.kind != TokenKind::kName) return false;
    for (const char* kw : {"and", "or", "else", "if", "in", "is", "not", "recursive"})
      if (t.text == kw) return false;
    return true;
  }

  std::vector<Token> t_;
  std::size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::string& source) { return Parser(lex(normalize_newlines(source))).parse_all(); }

}  // namespace plexus::jinja
