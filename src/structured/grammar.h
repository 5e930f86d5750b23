// A context-free grammar over bytes, as the matcher runs it: rules whose alternatives are
// sequences of byte sets and rule references. Text grammars (grammar_parser.h) and JSON Schemas
// (json_schema.h, through grammar text) lower to this form; repetition and grouping are already
// rewritten into rules, and characters outside ASCII into their UTF-8 byte sequences.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::structured {

// A set of byte values (256 bits).
struct ByteSet {
  std::array<std::uint64_t, 4> bits{};
  bool test(std::uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void set(std::uint8_t b) { bits[b >> 6] |= std::uint64_t{1} << (b & 63); }
  void set_range(std::uint8_t lo, std::uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) set(static_cast<std::uint8_t>(b));
  }
  bool operator==(const ByteSet&) const = default;
};

enum class ElementKind : std::uint8_t {
  kEnd,    // end of an alternative
  kBytes,  // one byte from byte_sets[value]
  kRule,   // the rule `value`
};

struct Element {
  ElementKind kind = ElementKind::kEnd;
  std::uint32_t value = 0;
};

struct Grammar {
  // Every alternative of every rule laid end to end, each closed by a kEnd element.
  std::vector<Element> elements;
  std::vector<ByteSet> byte_sets;
  // rule id -> the index in `elements` where each of its alternatives starts.
  std::vector<std::vector<std::uint32_t>> rules;
  std::vector<std::string> rule_names;  // for messages (generated rules: "name-3")
  std::uint32_t root = 0;
};

// InputError when a rule can begin with itself through rules that may match nothing (left
// recursion: the matcher would expand it forever); `where` prefixes the message.
void check_no_left_recursion(const Grammar& g, const std::string& where);

}  // namespace plexus::structured
