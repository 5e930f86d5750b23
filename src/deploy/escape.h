// How a string reaches a generated file's language: shell words (single quotes, bash's $'...' for
// control characters), one-line text for comments and messages, and the check every string of a
// deployment passes first (UTF-8, no NUL). YAML scalars: yaml_text.h; image references: image_reference.h.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace plexus::deploy {

// Whether code point `cp` may stand raw in a generated file: YAML's printable set (the strictest
// reader of the files) less tab, U+FEFF and every line break YAML 1.1 knows (U+0085, U+2028,
// U+2029). Excluded: C0 and C1 controls, DEL, surrogates, U+FFFE, U+FFFF.
bool printable_code_point(char32_t cp);

// `text` as one printable line: printable code points as they are, every other one escaped (\n, \r,
// \t, \xHH up to U+00FF, \uHHHH, \UHHHHHHHH) and each byte of invalid UTF-8 as \xHH. Comments of
// every generated file are made of it, so a name can never start a line of its own.
std::string one_line(std::string_view text);

// InputError "WHAT 'TEXT': ..." unless `text` is valid UTF-8 without NUL (YAML cannot carry
// anything else, and argv never holds NUL).
void check_text(std::string_view text, const std::string& what);

// One word for bash: as is when every character is safe ([A-Za-z0-9_./:=,@%+-]); else in single
// quotes (a quote as '\''); with a character printable_code_point refuses (a newline, a control,
// U+2028, ...) as bash's $'...' with those bytes as \xHH, so every script stays printable text.
std::string shell_quote(std::string_view word);
// Words shell-quoted and joined by spaces.
std::string shell_join(const std::vector<std::string>& words);

}  // namespace plexus::deploy
