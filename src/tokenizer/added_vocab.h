// Added tokens of tokenizer.json ("added_tokens"): matched in the text before BPE, longest
// match at the leftmost position, honouring lstrip / rstrip / single_word / normalized.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plexus {

struct AddedToken {
  std::string content;
  std::int32_t id = 0;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

class AddedVocab {
 public:
  struct Segment {
    std::size_t begin, end;  // byte range in the text
    int token;               // index into tokens(), or -1 for ordinary text
  };

  void add(AddedToken token);  // a repeated content replaces the earlier entry
  // Splits `text` on the tokens whose `normalized` flag equals `normalized`; the segments cover
  // all of `text` except whitespace swallowed by lstrip/rstrip. Appends to `out`.
  void split(std::string_view text, bool normalized, std::vector<Segment>& out) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find_id(std::int32_t id) const;
  std::optional<std::int32_t> find_content(std::string_view content) const;

 private:
  struct Index {
    std::array<std::vector<int>, 256> by_first_byte;  // token indices, longest content first
    bool any = false;
  };
  void rebuild();

  std::vector<AddedToken> tokens_;
  Index raw_, normalized_;
};

}  // namespace plexus
