// A finished request's text through the server's CompletionText (batch/result_text.h).
#include "batch/result_text.h"

#include "serve/completion_text.h"

namespace plexus::batch {

ResultText result_text(const Tokenizer& tokenizer, const std::vector<std::int32_t>& ids, const std::string& finish_reason,
                       const std::vector<std::string>& stop) {
  ResultText r{"", ids.size(), finish_reason, {}};
  CompletionText text(tokenizer, stop);
  // An end-of-sequence id ends the generation: counted, not text (as the server's scheduler).
  const std::size_t sent = finish_reason == "stop" && !ids.empty() ? ids.size() - 1 : ids.size();
  for (std::size_t i = 0; i < sent; ++i) {
    r.offsets.push_back(text.decoded());
    r.text += text.push(ids[i]);
    if (text.stopped()) {
      r.tokens = i + 1;
      r.finish_reason = "stop";
      return r;
    }
  }
  r.text += text.finish();
  return r;
}

}  // namespace plexus::batch
