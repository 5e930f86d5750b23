// A compiled tokenizer.json regex (Oniguruma/Rust syntax, Unicode-aware) run with PCRE2 + JIT.
// `\s` is rewritten to the Unicode White_Space set so it means what it means in the reference.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace plexus {

class Regex {
 public:
  struct Match {
    std::size_t begin, end;  // byte offsets into the subject
  };

  // Throws InputError naming `where` when PCRE2 rejects the pattern.
  Regex(std::string_view pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends every non-overlapping match in `subject` (valid UTF-8), left to right.
  void find_all(std::string_view subject, std::vector<Match>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

// `text` escaped so that PCRE2 matches it literally.
std::string regex_escape(std::string_view text);

}  // namespace plexus
