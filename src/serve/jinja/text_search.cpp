// Linear-time substring search (see text_search.h).
#include "serve/jinja/text_search.h"

#include <cstring>
#include <string>

namespace plexus::jinja {

Searcher::Searcher(std::string_view needle) : needle_(needle), border_(needle.size(), 0) {
  std::uint32_t k = 0;
  for (std::size_t i = 1; i < needle.size(); ++i) {
    while (k > 0 && needle[i] != needle[k]) k = border_[k - 1];
    if (needle[i] == needle[k]) ++k;
    border_[i] = k;
  }
}

std::size_t Searcher::find(std::string_view text, std::size_t from) const {
  const std::size_t m = needle_.size();
  std::size_t k = 0;  // needle bytes matched so far
  for (std::size_t i = from; i < text.size(); ++i) {
    if (k == 0) {  // skip to the next possible first byte
      const void* p = std::memchr(text.data() + i, needle_[0], text.size() - i);
      if (!p) return std::string_view::npos;
      i = static_cast<std::size_t>(static_cast<const char*>(p) - text.data());
    }
    while (k > 0 && text[i] != needle_[k]) k = border_[k - 1];
    if (text[i] == needle_[k]) ++k;
    if (k == m) return i + 1 - m;
  }
  return std::string_view::npos;
}

std::size_t Searcher::rfind(std::string_view text) const {
  const std::size_t m = needle_.size();
  std::size_t k = 0, last = std::string_view::npos;
  for (std::size_t i = 0; i < text.size(); ++i) {
    while (k > 0 && text[i] != needle_[k]) k = border_[k - 1];
    if (text[i] == needle_[k]) ++k;
    if (k == m) {
      last = i + 1 - m;
      k = border_[k - 1];  // occurrences may overlap
    }
  }
  return last;
}

}  // namespace plexus::jinja
