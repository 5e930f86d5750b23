// The Jinja lexer (see lexer.h).
#include "serve/jinja/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "serve/chat_template.h"
#include "serve/jinja/integers.h"
#include "tokenizer/utf8.h"

namespace plexus::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  explicit Lexer(const std::string& src) : src_(src) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < src.size(); ++i)
      if (src[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    std::size_t pos = 0;
    bool strip_next = false, trim_newline = false;
    while (pos < src_.size()) {
      std::size_t open = find_open(pos);
      std::string text = src_.substr(pos, open - pos);
      const std::size_t text_pos = pos;
      // Whether the text starts a line (as jinja2's lexer sees it: after what the last tag consumed).
      bool line_start = pos == 0 || src_[pos - 1] == '\n';
      if (strip_next) {
        auto first = std::find_if_not(text.begin(), text.end(), is_space);
        if (first != text.begin()) line_start = *(first - 1) == '\n';
        text.erase(text.begin(), first);
      } else if (trim_newline && !text.empty() && text[0] == '\n') {
        text.erase(0, 1);
        line_start = true;
      }
      strip_next = trim_newline = false;
      if (open < src_.size()) {
        const char kind = src_[open + 1];
        const char mod = open + 2 < src_.size() ? src_[open + 2] : '\0';
        if (mod == '-') {
          while (!text.empty() && is_space(text.back())) text.pop_back();
        } else if (kind != '{' && mod != '+') {
          // lstrip_blocks: spaces and tabs between a line's start and a block or comment go.
          const std::size_t nl = text.rfind('\n');
          const std::size_t from = nl == std::string::npos ? 0 : nl + 1;
          if (text.find_first_not_of(" \t", from) == std::string::npos && (nl != std::string::npos || line_start))
            text.erase(from);
        }
      }
      if (!text.empty()) push(TokenKind::kText, text, text_pos);
      if (open >= src_.size()) break;
      const char kind = src_[open + 1];
      pos = open + 2;
      if (pos < src_.size() && (src_[pos] == '-' || src_[pos] == '+')) ++pos;
      if (kind == '#') {
        const std::size_t end = src_.find("#}", pos);
        if (end == std::string::npos) fail(open, "unterminated comment: add '#}'");
        const bool minus = end > pos && src_[end - 1] == '-';
        const bool plus = end > pos && src_[end - 1] == '+';
        pos = end + 2;
        strip_next = minus;
        trim_newline = !minus && !plus;
        continue;
      }
      const bool block = kind == '%';
      push(block ? TokenKind::kBlockBegin : TokenKind::kVarBegin, block ? "{%" : "{{", open);
      pos = lex_tag(pos, block, open, &strip_next, &trim_newline);
    }
    push(TokenKind::kEof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  std::size_t find_open(std::size_t pos) const {
    for (std::size_t i = src_.find('{', pos); i != std::string::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  // Lexes a tag's inside from `pos` to its closing delimiter; returns the position after it.
  std::size_t lex_tag(std::size_t pos, bool block, std::size_t open, bool* strip_next, bool* trim_newline) {
    int depth = 0;  // open brackets: a '}' inside them is not the tag's end
    while (true) {
      while (pos < src_.size() && is_space(src_[pos])) ++pos;
      if (pos >= src_.size()) fail(open, block ? "unterminated block tag: add '%}'" : "unterminated expression: add '}}'");
      const char c = src_[pos];
      const char close = block ? '%' : '}';
      // The closing delimiter, with an optional '-' or '+' before it.
      for (int m = 0; m < 2 && depth == 0; ++m) {
        const std::size_t p = pos + static_cast<std::size_t>(m);
        if (m == 1 && c != '-' && c != '+') break;
        if (p + 1 < src_.size() && src_[p] == close && src_[p + 1] == '}') {
          *strip_next = m == 1 && c == '-';
          *trim_newline = block && !(m == 1);
          push(block ? TokenKind::kBlockEnd : TokenKind::kVarEnd, block ? "%}" : "}}", pos);
          return p + 2;
        }
      }
      if (is_name_start(c)) {
        std::size_t e = pos;
        while (e < src_.size() && (is_name_start(src_[e]) || is_digit(src_[e]))) ++e;
        push(TokenKind::kName, src_.substr(pos, e - pos), pos);
        pos = e;
      } else if (is_digit(c)) {
        pos = lex_number(pos);
      } else if (c == '"' || c == '\'') {
        pos = lex_string(pos);
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~",
                                           "<",  ">",  "=",  "(",  ")",  "[", "]", "{", "}", ",", ".", ":", "|"};
        bool found = false;
        for (const char* op : kOps) {
          const std::string o(op);
          if (src_.compare(pos, o.size(), o) == 0) {
            if (o == "(" || o == "[" || o == "{") ++depth;
            if ((o == ")" || o == "]" || o == "}") && depth > 0) --depth;
            push(TokenKind::kOp, o, pos);
            pos += o.size();
            found = true;
            break;
          }
        }
        if (!found) fail(pos, std::string("unexpected character '") + c + "'");
      }
    }
  }

  std::size_t lex_number(std::size_t pos) {
    std::size_t e = pos;
    bool is_float = false;
    while (e < src_.size() && (is_digit(src_[e]) || src_[e] == '_')) ++e;
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      is_float = true;
      ++e;
      while (e < src_.size() && (is_digit(src_[e]) || src_[e] == '_')) ++e;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      std::size_t f = e + 1;
      if (f < src_.size() && (src_[f] == '+' || src_[f] == '-')) ++f;
      if (f < src_.size() && is_digit(src_[f])) {
        is_float = true;
        e = f;
        while (e < src_.size() && is_digit(src_[e])) ++e;
      }
    }
    std::string digits;
    for (std::size_t i = pos; i < e; ++i)
      if (src_[i] != '_') digits.push_back(src_[i]);
    Token t = make(is_float ? TokenKind::kFloat : TokenKind::kInt, digits, pos);
    errno = 0;
    if (is_float) {
      t.float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      t.int_value = std::strtoll(digits.c_str(), nullptr, 10);
      t.big_int = errno == ERANGE;
      if (t.big_int && (digits.size() - digits.find_first_not_of('0') > 1234 ||
                        BigInt::from_digits(digits, 10).bit_length() > kMaxIntBits))
        fail(pos, "integer literal " + digits.substr(0, 40) + (digits.size() > 40 ? "..." : "") + " is too large (the limit is " +
                      std::to_string(kMaxIntBits) + " bits)");
    }
    tokens_.push_back(std::move(t));
    return e;
  }

  std::size_t lex_string(std::size_t pos) {
    const char q = src_[pos];
    std::string out;
    std::size_t i = pos + 1;
    for (; i < src_.size() && src_[i] != q; ++i) {
      if (src_[i] != '\\' || i + 1 >= src_.size()) {
        out.push_back(src_[i]);
        continue;
      }
      const char e = src_[++i];
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case '0': out.push_back('\0'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case 'a': out.push_back('\a'); break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
          const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + n >= src_.size()) fail(i, "truncated \\" + std::string(1, e) + " escape");
          const std::string hex = src_.substr(i + 1, n);
          char* end = nullptr;
          const unsigned long cp = std::strtoul(hex.c_str(), &end, 16);
          if (end != hex.c_str() + n || cp > 0x10FFFF) fail(i, "bad \\" + std::string(1, e) + " escape");
          utf8::append(out, static_cast<char32_t>(cp));
          i += n;
          break;
        }
        default:
          out.push_back('\\');
          out.push_back(e);
      }
    }
    if (i >= src_.size()) fail(pos, "unterminated string literal");
    push(TokenKind::kString, out, pos);
    return i + 1;
  }

  Token make(TokenKind kind, std::string text, std::size_t pos) const {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos) - 1;
    t.line = static_cast<int>(it - line_starts_.begin()) + 1;
    t.column = static_cast<int>(pos - *it) + 1;
    return t;
  }
  void push(TokenKind kind, std::string text, std::size_t pos) { tokens_.push_back(make(kind, std::move(text), pos)); }

  [[noreturn]] void fail(std::size_t pos, const std::string& what) const {
    const Token t = make(TokenKind::kEof, "", pos);
    throw TemplateError("template syntax error at line " + std::to_string(t.line) + ", column " +
                        std::to_string(t.column) + ": " + what);
  }

  const std::string& src_;
  std::vector<std::size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(const std::string& source) { return Lexer(source).run(); }

}  // namespace plexus::jinja
