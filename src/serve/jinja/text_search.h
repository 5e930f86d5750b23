// Substring search in time linear in the text and the needle whatever their contents (Knuth,
// Morris and Pratt's prefix table), so `in`, find, count, split and replace cost what they
// charge: std::string::find takes time proportional to their product on inputs such as
// 'aaa...a' and 'aa...ab'.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace plexus::jinja {

class Searcher {
 public:
  // The table costs 4 bytes per needle byte (charge it before).
  explicit Searcher(std::string_view needle);

  // The first occurrence of the needle in text at or after `from`; npos when none. Non-empty needle.
  std::size_t find(std::string_view text, std::size_t from = 0) const;
  // The last occurrence in text; npos when none.
  std::size_t rfind(std::string_view text) const;

 private:
  std::string_view needle_;
  std::vector<std::uint32_t> border_;  // border_[i]: the longest proper border of needle[0..i]
};

}  // namespace plexus::jinja
