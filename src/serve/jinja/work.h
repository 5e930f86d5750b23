// The limits of one render and the work counted against them: steps (statements, loop
// iterations, list items made, walked or compared) and bytes touched (strings compared,
// scanned, copied or made). Every operation charges its work before doing it and checks the
// sizes it would allocate before allocating, so a hostile template fails within about a second.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace plexus::jinja {

struct RenderLimits {
  std::size_t max_output = std::size_t{64} << 20;  // bytes of output, and of any one string
  std::size_t max_items = 1'000'000;                // items of any one list made by the template
  int max_depth = 2000;                             // nested evaluation (expressions, blocks, calls)
  int max_call_depth = 100;                         // nested macro calls
  std::int64_t max_steps = 10'000'000;              // statements, loop iterations, items made or compared
  std::uint64_t max_bytes = std::uint64_t{512} << 20;  // bytes touched: compared, scanned, copied, made
  std::int64_t max_range = 1'000'000;               // elements of one range()
};

class Work {
 public:
  explicit Work(const RenderLimits& limits) : limits_(limits) {}

  // Counts `n` steps; TemplateError "the template runs more than N steps" past the limit.
  void steps(std::int64_t n);
  // Counts `n` bytes touched; TemplateError naming `what` and the limit past it.
  void bytes(std::uint64_t n, const char* what);
  // bytes(per_item * items), without overflow.
  void bytes(std::uint64_t per_item, std::uint64_t items, const char* what);
  // How many more items of `per_item` bytes the budget affords.
  std::uint64_t affordable(std::uint64_t per_item) const { return (limits_.max_bytes - bytes_) / per_item; }
  // TemplateError unless a string of `size` bytes fits max_output (checked before making it).
  void check_size(std::uint64_t size) const;
  // Appends `piece` to `out`: the size checked and the bytes charged (as `what`) first.
  void append(std::string& out, std::string_view piece, const char* what);
  // TemplateError unless a list of `items` fits max_items (checked before making it).
  void check_items(std::uint64_t items) const;
  const RenderLimits& limits() const { return limits_; }

 private:
  RenderLimits limits_;
  std::int64_t steps_ = 0;
  std::uint64_t bytes_ = 0;
};

// The bytes one list item costs when a list is made or copied (a Value).
inline constexpr std::uint64_t kItemBytes = 96;
// Bytes charged per byte of a loop that decodes UTF-8 characters one at a time (counting,
// indexing, slicing, reversing, stripping by character): about 4 times a copy's cost.
inline constexpr std::uint64_t kCharCost = 4;
// Bytes charged per byte searched (a linear search, twice a character loop at worst).
inline constexpr std::uint64_t kSearchCost = 2 * kCharCost;
// Bytes charged per match of a search that goes on after it (count, replace): a call's setup.
inline constexpr std::uint64_t kMatchCost = 32;

}  // namespace plexus::jinja
