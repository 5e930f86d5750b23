// tokenizer.json "pre_tokenizer": splits normalized text into pieces that BPE encodes one by one
// (Split, ByteLevel, Metaspace, Whitespace, WhitespaceSplit, Digits, Punctuation, Sequence).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus {

struct Span {
  std::size_t begin, end;  // byte range in the working text
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `spans` (pieces of `text`) by their sub-pieces; may rewrite `text` (Metaspace,
  // ByteLevel's prefix space). `at_start`: `text` begins at the start of the caller's input.
  virtual void apply(std::string& text, std::vector<Span>& spans, bool at_start) const = 0;
};

// Builds the pre-tokenizer in `spec` (null gives nullptr). Sets `byte_level` when a ByteLevel
// step is present: the BPE model then works on raw bytes. InputError names `where` for an
// unknown "type" or a ByteLevel step that is not the last one.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& spec, const std::string& where, bool& byte_level);

}  // namespace plexus
