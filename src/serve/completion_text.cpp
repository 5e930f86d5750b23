// Incremental, UTF-8-safe detokenisation with stop strings (serve/completion_text.h).
#include "serve/completion_text.h"

#include <algorithm>

namespace plexus {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD: how decode shows a broken character

}  // namespace

std::size_t stop_prefix_suffix(const std::string& text, const std::vector<std::string>& stop) {
  std::size_t best = 0;
  for (const std::string& s : stop) {
    const std::size_t longest = std::min(text.size(), s.size() - 1);
    for (std::size_t n = longest; n > best; --n) {
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        best = n;
        break;
      }
    }
  }
  return best;
}

CompletionText::CompletionText(const Tokenizer& tokenizer, std::vector<std::string> stop)
    : tokenizer_(tokenizer), stop_(std::move(stop)) {}

std::string CompletionText::push(std::int32_t id) {
  if (stopped_) return "";
  ids_.push_back(id);
  std::string text = tokenizer_.decode(ids_);
  // An incomplete character at the end decodes as U+FFFD: wait for the token that completes it.
  if (text.ends_with(kReplacement)) return "";
  // Text already final never changes; should a decode disagree with it, keep what was final.
  if (text.size() < decoded_.size() || text.compare(0, decoded_.size(), decoded_) != 0) return "";
  pending_ += text.substr(decoded_.size());
  decoded_ = std::move(text);
  return release(false);
}

std::string CompletionText::finish() {
  if (stopped_) return "";
  std::string text = tokenizer_.decode(ids_);
  if (text.size() >= decoded_.size() && text.compare(0, decoded_.size(), decoded_) == 0) {
    pending_ += text.substr(decoded_.size());
    decoded_ = std::move(text);
  }
  return release(true);
}

std::string CompletionText::release(bool final) {
  // The earliest stop string in the pending text ends the completion there.
  std::size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, pending_.find(s));
  std::string out;
  if (cut != std::string::npos) {
    out = pending_.substr(0, cut);
    pending_.clear();
    stopped_ = true;
  } else {
    const std::size_t hold = final ? 0 : stop_prefix_suffix(pending_, stop_);
    out = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
  }
  sent_ += out.size();
  return out;
}

}  // namespace plexus
