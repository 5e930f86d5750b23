// ICU-backed normalization, case mapping and character classes for the tokenizer.
#include "tokenizer/unicode.h"

#include <unicode/bytestream.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace plexus::unicode {
namespace {

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

const icu::Normalizer2* instance(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNfc: n = icu::Normalizer2::getNFCInstance(status); break;
    case NormalForm::kNfd: n = icu::Normalizer2::getNFDInstance(status); break;
    case NormalForm::kNfkc: n = icu::Normalizer2::getNFKCInstance(status); break;
    case NormalForm::kNfkd: n = icu::Normalizer2::getNFKDInstance(status); break;
  }
  if (U_FAILURE(status) || n == nullptr)
    throw RuntimeError(std::string("ICU normalizer unavailable: ") + u_errorName(status) +
                       " (is libicu's data package installed?)");
  return n;
}

}  // namespace

std::string normalize(std::string_view text, NormalForm form) {
  if (is_ascii(text)) return std::string(text);  // every normal form of ASCII is itself
  const icu::Normalizer2* n = instance(form);
  std::string out;
  out.reserve(text.size());
  icu::StringByteSink<std::string> sink(&out);
  UErrorCode status = U_ZERO_ERROR;
  n->normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), sink, nullptr,
                   status);
  if (U_FAILURE(status)) throw RuntimeError(std::string("ICU normalization failed: ") + u_errorName(status));
  return out;
}

std::string to_lower(std::string_view text) {
  if (is_ascii(text)) {
    std::string out(text);
    for (char& c : out)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
  }
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  u.toLower(icu::Locale::getRoot());
  std::string out;
  u.toUTF8String(out);
  return out;
}

std::string strip_marks(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    const char32_t cp = utf8::next(text, i);
    if (u_charType(static_cast<UChar32>(cp)) != U_NON_SPACING_MARK) out.append(text.substr(start, i - start));
  }
  return out;
}

bool is_white_space(char32_t cp) { return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE); }

bool is_word(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '_';
  const auto c = static_cast<UChar32>(cp);
  if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL)) return true;
  const int8_t t = u_charType(c);
  return t == U_NON_SPACING_MARK || t == U_ENCLOSING_MARK || t == U_COMBINING_SPACING_MARK ||
         t == U_DECIMAL_DIGIT_NUMBER || t == U_CONNECTOR_PUNCTUATION;
}

}  // namespace plexus::unicode
