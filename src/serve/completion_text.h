// A completion's text as its tokens arrive: incremental detokenisation that never hands out
// part of a UTF-8 character, and stop strings matched across token boundaries — text that could
// still become the start of a stop string is held back until it cannot; a matched stop string
// and everything after it are cut off.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace plexus {

// The text of `ids` as the tokenizer decodes them, with a trailing incomplete UTF-8 character
// (decoded as U+FFFD) dropped: the part that later tokens cannot change.
class CompletionText {
 public:
  CompletionText(const Tokenizer& tokenizer, std::vector<std::string> stop);

  // Adds a token; returns the text that became final (may be empty). Once a stop string has
  // matched, returns "" and stopped() is true.
  std::string push(std::int32_t id);
  // The generation ended: the text still held back (a prefix of a stop string, an incomplete
  // character as the tokenizer decodes it). "" once stopped.
  std::string finish();

  bool stopped() const { return stopped_; }
  // Bytes handed out so far (push and finish together).
  std::size_t sent() const { return sent_; }
  // Bytes of final text decoded so far (where the next token's text starts: logprobs' text_offset).
  std::size_t decoded() const { return decoded_.size(); }

 private:
  std::string release(bool final);

  const Tokenizer& tokenizer_;
  std::vector<std::string> stop_;
  std::vector<std::int32_t> ids_;
  std::string decoded_;   // final text so far (complete characters)
  std::string pending_;    // decoded, not yet handed out (could start a stop string)
  std::size_t sent_ = 0;
  bool stopped_ = false;
};

// The length of the longest suffix of `text` that is a proper prefix of one of `stop`.
std::size_t stop_prefix_suffix(const std::string& text, const std::vector<std::string>& stop);

}  // namespace plexus
