// A small reader of the bash the deploy generators write (run.sh, *.sbatch), for the deploy fuzz
// harness: the script as tokens (words, operators, newlines; comments dropped), each word as its
// text after quote removal with expansions ($x, ${...}, $(...), `...`) kept raw and marked, and
// which characters stood unquoted. Enough of bash's grammar to compare two scripts' shapes; a
// script it cannot read (an unterminated quote) is reported, never guessed.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plexus::fuzz {

struct ShellToken {
  enum class Kind { kWord, kOperator, kNewline };
  Kind kind = Kind::kWord;
  std::string text;       // a word after quote removal, expansions raw; an operator's characters
  std::string unquoted;   // a word's characters that stood outside any quotes
  std::vector<std::pair<bool, std::string>> parts;  // (is expansion, text), adjacent literals merged
  bool operator==(const ShellToken&) const = default;
};

namespace shell_detail {

inline bool is_operator_char(char c) { return std::string_view(";&|()<>").find(c) != std::string_view::npos; }
inline bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

inline void literal(ShellToken& t, std::string_view s, bool quoted) {
  if (s.empty()) return;
  if (t.parts.empty() || t.parts.back().first) t.parts.emplace_back(false, "");
  t.parts.back().second += s;
  t.text += s;
  if (!quoted) t.unquoted += s;
}

// Skips a quoted string inside $(...) / `...` starting at s[i] (a quote); false when unterminated.
inline bool skip_quoted(std::string_view s, std::size_t& i) {
  const char q = s[i++];
  while (i < s.size() && s[i] != q) {
    if (q == '"' && s[i] == '\\') ++i;
    ++i;
  }
  if (i >= s.size()) return false;
  ++i;
  return true;
}

// The expansion starting at s[i] ('$' or '`'): its raw text, or nullopt when unterminated. A '$'
// that starts none is a literal '$' (returned as "$").
inline std::optional<std::string> expansion(std::string_view s, std::size_t& i) {
  const std::size_t start = i;
  if (s[i] == '`') {
    for (++i; i < s.size() && s[i] != '`'; ++i) {
      if (s[i] == '\\') ++i;
    }
    if (i >= s.size()) return std::nullopt;
    ++i;
    return std::string(s.substr(start, i - start));
  }
  ++i;  // '$'
  if (i < s.size() && (s[i] == '(' || s[i] == '{')) {
    const char open = s[i], close = open == '(' ? ')' : '}';
    int depth = 0;
    while (i < s.size()) {
      if (s[i] == '\'' || s[i] == '"') {
        if (!skip_quoted(s, i)) return std::nullopt;
        continue;
      }
      if (s[i] == '\\') {
        i += 2;
        continue;
      }
      if (s[i] == open) ++depth;
      if (s[i] == close && --depth == 0) {
        ++i;
        return std::string(s.substr(start, i - start));
      }
      ++i;
    }
    return std::nullopt;
  }
  if (i < s.size() && is_name_char(s[i])) {
    while (i < s.size() && is_name_char(s[i])) ++i;
  } else if (i < s.size() && std::string_view("@*#?$!-").find(s[i]) != std::string_view::npos) {
    ++i;
  }
  return std::string(s.substr(start, i - start));
}

inline int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// bash's $'...' starting at s[i] == '$': the decoded bytes, or nullopt when unterminated.
inline std::optional<std::string> ansi_c(std::string_view s, std::size_t& i) {
  std::string out;
  for (i += 2; i < s.size() && s[i] != '\''; ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    const char e = s[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case 'e': case 'E': out += '\x1b'; break;
      case '\\': case '\'': case '"': case '?': out += e; break;
      case 'x': {
        int v = 0, n = 0;
        while (n < 2 && i + 1 < s.size() && hex_value(s[i + 1]) >= 0) v = v * 16 + hex_value(s[++i]), ++n;
        if (n == 0) out += "\\x";
        else out += static_cast<char>(v);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0', n = 1;
          while (n < 3 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7') v = v * 8 + (s[++i] - '0'), ++n;
          out += static_cast<char>(v);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  if (i >= s.size()) return std::nullopt;
  ++i;
  return out;
}

}  // namespace shell_detail

// The script's tokens, or nullopt (with `error` set) where a quote or expansion does not end.
inline std::optional<std::vector<ShellToken>> shell_tokens(std::string_view s, std::string* error) {
  using namespace shell_detail;
  std::vector<ShellToken> out;
  std::size_t i = 0;
  const auto fail = [&](const char* what) {
    if (error) *error = std::string(what) + " at byte " + std::to_string(i);
    return std::nullopt;
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ' || c == '\t') {
      ++i;
    } else if (c == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
      i += 2;
    } else if (c == '\n') {
      out.push_back({ShellToken::Kind::kNewline, "\n", "", {}});
      ++i;
    } else if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (is_operator_char(c)) {
      std::string op(1, c);
      if (i + 1 < s.size()) {
        const std::string two = std::string(s.substr(i, 2));
        for (const char* o : {";;", "&&", "||", ">>", "<<", "<&", ">&", "&>", "|&", "<>"}) {
          if (two == o) op = two;
        }
      }
      i += op.size();
      out.push_back({ShellToken::Kind::kOperator, op, "", {}});
    } else {
      ShellToken t;
      while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && !is_operator_char(s[i])) {
        const char w = s[i];
        if (w == '\\') {
          if (i + 1 >= s.size()) return fail("a backslash at the end");
          if (s[i + 1] != '\n') literal(t, s.substr(i + 1, 1), true);
          i += 2;
        } else if (w == '\'') {
          const std::size_t end = s.find('\'', i + 1);
          if (end == std::string_view::npos) return fail("an unterminated single quote");
          literal(t, s.substr(i + 1, end - i - 1), true);
          i = end + 1;
        } else if (w == '$' && i + 1 < s.size() && s[i + 1] == '\'') {
          const auto decoded = ansi_c(s, i);
          if (!decoded) return fail("an unterminated $'");
          literal(t, *decoded, true);
        } else if (w == '"') {
          for (++i; i < s.size() && s[i] != '"';) {
            if (s[i] == '\\' && i + 1 < s.size() && std::string_view("$`\"\\\n").find(s[i + 1]) != std::string_view::npos) {
              if (s[i + 1] != '\n') literal(t, s.substr(i + 1, 1), true);
              i += 2;
            } else if (s[i] == '$' || s[i] == '`') {
              const auto e = expansion(s, i);
              if (!e) return fail("an unterminated expansion");
              if (*e == "$") literal(t, "$", true);
              else t.parts.emplace_back(true, *e), t.text += *e;
            } else {
              literal(t, s.substr(i++, 1), true);
            }
          }
          if (i >= s.size()) return fail("an unterminated double quote");
          ++i;
        } else if (w == '$' || w == '`') {
          const auto e = expansion(s, i);
          if (!e) return fail("an unterminated expansion");
          if (*e == "$") literal(t, "$", false);
          else t.parts.emplace_back(true, *e), t.text += *e, t.unquoted += *e;
        } else {
          literal(t, s.substr(i++, 1), false);
        }
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace plexus::fuzz
