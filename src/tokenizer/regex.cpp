// PCRE2 wrapper: pattern translation (\s as White_Space), JIT compile, and match iteration that
// never re-validates UTF-8 (the tokenizer validates once per input).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace plexus {
namespace {

// Unicode White_Space, the set Rust's and Oniguruma's \s match (PCRE2's own \s differs: U+180E).
constexpr std::string_view kSpaceSet =
    "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string translate(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      ++i;
      if (e == 's') {
        if (in_class) {
          out.append(kSpaceSet);
        } else {
          out.append("[").append(kSpaceSet).append("]");
        }
      } else if (e == 'S' && !in_class) {
        out.append("[^").append(kSpaceSet).append("]");
      } else {
        out.push_back('\\');
        out.push_back(e);
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);  // leading ] is literal
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string regex_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}-#/ ").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

Regex::Regex(std::string_view pattern, const std::string& where) : pattern_(pattern) {
  const std::string translated = translate(pattern);
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw InputError(where + ": regex '" + std::string(pattern) + "' does not compile (" +
                     reinterpret_cast<const char*>(msg) + " at offset " + std::to_string(err_offset) +
                     "): fix the pattern or use a supported tokenizer.json");
  }
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view subject, std::vector<Match>& out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  if (md == nullptr) throw std::bad_alloc();
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  std::size_t pos = 0;
  bool use_jit = jit_;
  while (pos <= subject.size()) {
    int rc = use_jit ? pcre2_jit_match(code, s, subject.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr)
                     : pcre2_match(code, s, subject.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && use_jit) {
      use_jit = false;  // the interpreter keeps its backtracking state on the heap
      continue;
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) {
        // The text, not the program: e.g. 10 MB of spaces is one piece too long to split.
        throw InputError("this text cannot be tokenized: the pre-tokenizer's regex hit the regex engine's limit (" +
                         std::string(reinterpret_cast<const char*>(msg)) + ") on a " + std::to_string(subject.size()) +
                         "-byte run of text; split the text or shorten long runs of whitespace or symbols");
      }
      throw RuntimeError("regex '" + pattern_ + "' failed on a " + std::to_string(subject.size()) +
                         "-byte piece: " + reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    out.push_back({ov[0], ov[1]});
    if (ov[1] > ov[0]) {
      pos = ov[1];
    } else {  // empty match: step over one character
      if (ov[1] >= subject.size()) break;
      pos = ov[1] + utf8::sequence_length(static_cast<unsigned char>(subject[ov[1]]));
    }
  }
  pcre2_match_data_free(md);
}

}  // namespace plexus
