// Unicode services the tokenizer needs (normalization forms, case mapping, character classes),
// backed by ICU so that the tables follow one published Unicode version.
#pragma once
#include <string>
#include <string_view>

namespace plexus::unicode {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

// `text` (valid UTF-8) in the given normalization form.
std::string normalize(std::string_view text, NormalForm form);
// Full lowercase mapping, locale independent.
std::string to_lower(std::string_view text);
// `text` without combining marks (category Mn), as HF's StripAccents.
std::string strip_marks(std::string_view text);

bool is_white_space(char32_t cp);  // Unicode White_Space property (Rust char::is_whitespace)
bool is_word(char32_t cp);         // regex \w: alphabetic, marks, decimal digits, connector punctuation

}  // namespace plexus::unicode
