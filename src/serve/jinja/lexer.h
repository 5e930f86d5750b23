// The Jinja lexer: splits a template into text and the tokens inside {{ }}, {% %} (comments
// {# #} dropped), applying whitespace control (`-`, `+`) with trim_blocks and lstrip_blocks on,
// as Hugging Face transformers configures jinja2.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::jinja {

enum class TokenKind { kText, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kInt, kFloat, kString, kOp, kEof };

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string text;  // text, name, operator, or the string literal's value
  std::int64_t int_value = 0;
  bool big_int = false;  // an integer literal past 64 bits: its value is BigInt::from_digits(text, 10)
  double float_value = 0;
  int line = 1, column = 1;
};

// TemplateError "line L, column C: ..." on an unterminated tag, comment or string, or an
// unknown character.
std::vector<Token> lex(const std::string& source);

}  // namespace plexus::jinja
