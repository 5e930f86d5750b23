// The text of a finished request as the server would send it (serve/completion_text.h): the
// generated ids detokenized without a final end-of-sequence id, cut before the first stop string
// (matched across token boundaries); the tokens counted up to the one that completed the stop
// string, as the server counts them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace plexus::batch {

struct ResultText {
  std::string text;
  std::size_t tokens = 0;     // of `ids` that count (all of them unless a stop string matched)
  std::string finish_reason;  // "stop" when a stop string matched, else the generation's
  // Where each token sent as text starts in `text` (logprobs' text_offset): the counted tokens
  // but a final end-of-sequence id, which the server does not send either.
  std::vector<std::size_t> offsets;
};

// `ids`: what the replica generated; `finish_reason`: "stop" (the last id is one of the request's
// end-of-sequence ids) or "length"; `stop`: the request's stop strings.
ResultText result_text(const Tokenizer& tokenizer, const std::vector<std::int32_t>& ids, const std::string& finish_reason,
                       const std::vector<std::string>& stop);

}  // namespace plexus::batch
