// Recursive-descent parser of grammar text into a syntax tree, then lowering of the tree into
// Grammar: groups and repetitions become generated rules, classes beyond ASCII become UTF-8
// byte-sequence alternatives.
#include "structured/grammar_parser.h"

#include <map>
#include <optional>
#include <string>

#include "core/error.h"
#include "structured/utf8_ranges.h"

namespace plexus::structured {

namespace {

constexpr std::uint32_t kMaxRepetition = 10000;
constexpr std::size_t kMaxElements = 4'000'000;

struct Item;
using Sequence = std::vector<Item>;

struct Item {
  enum class Kind { kLiteral, kClass, kRef, kGroup } kind = Kind::kLiteral;
  std::vector<std::uint8_t> bytes;     // kLiteral: UTF-8
  std::vector<CodePointRange> ranges;  // kClass: normalized
  std::string name;                    // kRef
  std::size_t offset = 0;              // where the item starts in the text
  std::vector<Sequence> alternatives;  // kGroup
  std::uint32_t min = 1, max = 1;
  bool unbounded = false;
};

struct RuleSyntax {
  std::string name;
  std::size_t offset = 0;
  std::vector<Sequence> alternatives;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  std::vector<RuleSyntax> parse() {
    std::vector<RuleSyntax> rules;
    skip_space(true);
    while (!at_end()) {
      RuleSyntax r;
      r.offset = pos_;
      r.name = parse_name("a rule name");
      skip_space(false);
      if (text_.substr(pos_, 3) != "::=") fail(pos_, "expected '::=' after the rule name '" + r.name + "'");
      pos_ += 3;
      skip_space(true);
      r.alternatives = parse_alternatives(false);
      if (!at_end() && text_[pos_] != '\n') fail(pos_, "unexpected " + describe(pos_));
      skip_space(true);
      rules.push_back(std::move(r));
    }
    if (rules.empty()) fail(0, "the grammar defines no rules (it needs at least `root ::= ...`)");
    return rules;
  }

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) {
        ++col;
      }
    }
    throw InputError(std::string(source_) + " line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }

  std::string describe(std::size_t at) const {
    if (at >= text_.size()) return "end of the grammar";
    const char c = text_[at];
    if (c == '\n') return "end of line";
    return std::string("'") + c + "'";
  }

  // Spaces, tabs, carriage returns and comments; newlines too when `newlines`.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  }

  std::string parse_name(const char* what) {
    const std::size_t start = pos_;
    while (!at_end() && name_char(text_[pos_])) ++pos_;
    if (pos_ == start) fail(pos_, std::string("expected ") + what + ", found " + describe(pos_));
    return std::string(text_.substr(start, pos_ - start));
  }

  // After a top-level sequence: does the rule go on with `|` on a following line?
  bool continues_on_next_line() {
    std::size_t save = pos_;
    skip_space(true);
    if (!at_end() && text_[pos_] == '|') return true;
    pos_ = save;
    return false;
  }

  std::vector<Sequence> parse_alternatives(bool nested) {
    std::vector<Sequence> alts;
    alts.push_back(parse_sequence(nested));
    for (;;) {
      if (!nested && !at_end() && text_[pos_] == '\n' && !continues_on_next_line()) break;
      if (at_end() || text_[pos_] != '|') break;
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(nested));
    }
    return alts;
  }

  Sequence parse_sequence(bool nested) {
    Sequence seq;
    for (;;) {
      skip_space(nested);
      if (at_end()) break;
      const char c = text_[pos_];
      if (c == '|' || c == ')' || c == '\n') break;
      Item item = parse_primary();
      parse_repetition(item);
      seq.push_back(std::move(item));
    }
    return seq;
  }

  Item parse_primary() {
    Item item;
    item.offset = pos_;
    const char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      item.kind = Item::Kind::kLiteral;
      for (;;) {
        if (at_end() || text_[pos_] == '\n') fail(item.offset, "unterminated string literal (no closing '\"' on its line)");
        if (text_[pos_] == '"') break;
        append_utf8(item.bytes, parse_char());
      }
      ++pos_;
    } else if (c == '[') {
      ++pos_;
      item.kind = Item::Kind::kClass;
      bool negate = false;
      if (!at_end() && text_[pos_] == '^') {
        negate = true;
        ++pos_;
      }
      std::vector<CodePointRange> ranges;
      for (;;) {
        if (at_end() || text_[pos_] == '\n') fail(item.offset, "unterminated character class (no closing ']' on its line)");
        if (text_[pos_] == ']') break;
        const std::size_t at = pos_;
        const char32_t lo = parse_char();
        char32_t hi = lo;
        if (pos_ + 1 < text_.size() && text_[pos_] == '-' && text_[pos_ + 1] != ']' && text_[pos_ + 1] != '\n') {
          ++pos_;
          hi = parse_char();
          if (hi < lo) fail(at, "character range is backwards (its end comes before its start)");
        }
        ranges.push_back({lo, hi});
      }
      ++pos_;
      item.ranges = normalize_ranges(std::move(ranges), negate);
    } else if (c == '.') {
      ++pos_;
      item.kind = Item::Kind::kClass;
      item.ranges = normalize_ranges({}, true);
    } else if (c == '(') {
      ++pos_;
      skip_space(true);
      item.kind = Item::Kind::kGroup;
      item.alternatives = parse_alternatives(true);
      skip_space(true);
      if (at_end() || text_[pos_] != ')') fail(pos_, "expected ')' to close the group opened at " + where(item.offset) + ", found " + describe(pos_));
      ++pos_;
    } else if (name_char(c)) {
      item.kind = Item::Kind::kRef;
      item.name = parse_name("a rule name");
      // A rule definition without a line break before it: `a ::= "x" b ::= "y"`.
      std::size_t look = pos_;
      while (look < text_.size() && (text_[look] == ' ' || text_[look] == '\t')) ++look;
      if (text_.substr(look, 3) == "::=") fail(item.offset, "a rule definition ('" + item.name + " ::=') must start on a new line");
    } else {
      fail(pos_, "unexpected " + describe(pos_) + " (expected a string \"...\", a class [...], a rule name, '(' or '.')");
    }
    return item;
  }

  std::string where(std::size_t at) const {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < at; ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) {
        ++col;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
  }

  void parse_repetition(Item& item) {
    if (at_end()) return;
    const char c = text_[pos_];
    if (c == '*') {
      item.min = 0, item.unbounded = true, ++pos_;
    } else if (c == '+') {
      item.min = 1, item.unbounded = true, ++pos_;
    } else if (c == '?') {
      item.min = 0, item.max = 1, ++pos_;
    } else if (c == '{') {
      const std::size_t at = pos_;
      ++pos_;
      skip_space(false);
      item.min = parse_count(at);
      skip_space(false);
      if (!at_end() && text_[pos_] == ',') {
        ++pos_;
        skip_space(false);
        if (!at_end() && text_[pos_] == '}') {
          item.unbounded = true;
        } else {
          item.max = parse_count(at);
          if (item.max < item.min) fail(at, "repetition {m,n} needs m <= n");
        }
      } else {
        item.max = item.min;
      }
      skip_space(false);
      if (at_end() || text_[pos_] != '}') fail(pos_, "expected '}' to close the repetition, found " + describe(pos_));
      ++pos_;
    }
  }

  std::uint32_t parse_count(std::size_t at) {
    const std::size_t start = pos_;
    std::uint64_t v = 0;
    while (!at_end() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      v = v * 10 + static_cast<std::uint64_t>(text_[pos_] - '0');
      if (v > kMaxRepetition) fail(start, "repetition count above the limit of " + std::to_string(kMaxRepetition));
      ++pos_;
    }
    if (pos_ == start) fail(pos_, "expected a number in the repetition at " + where(at) + ", found " + describe(pos_));
    return static_cast<std::uint32_t>(v);
  }

  int hex_digit(char c) const {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // One character of a literal or class (escapes decoded); the text must be valid UTF-8.
  char32_t parse_char() {
    const std::size_t at = pos_;
    const auto b = static_cast<unsigned char>(text_[pos_]);
    if (b == '\\') {
      ++pos_;
      if (at_end()) fail(at, "escape '\\' at the end of the grammar");
      const char e = text_[pos_++];
      int digits = 0;
      switch (e) {
        case 'n': return '\n';
        case 't': return '\t';
        case 'r': return '\r';
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/': return static_cast<char32_t>(e);
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        default: fail(at, std::string("unknown escape '\\") + e + "' (known: \\n \\t \\r \\\\ \\\" \\' \\[ \\] \\- \\^ \\xHH \\uHHHH \\UHHHHHHHH)");
      }
      char32_t v = 0;
      for (int i = 0; i < digits; ++i) {
        const int d = at_end() ? -1 : hex_digit(text_[pos_]);
        if (d < 0) fail(at, "escape '\\" + std::string(1, e) + "' needs " + std::to_string(digits) + " hex digits");
        v = v * 16 + static_cast<char32_t>(d);
        ++pos_;
      }
      if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) fail(at, "escape names no Unicode character (a surrogate or above U+10FFFF)");
      return v;
    }
    // UTF-8 decode.
    int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || pos_ + n > text_.size()) fail(at, "invalid UTF-8 in the grammar text");
    char32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (int i = 1; i < n; ++i) {
      const auto c = static_cast<unsigned char>(text_[pos_ + i]);
      if ((c & 0xC0) != 0x80) fail(at, "invalid UTF-8 in the grammar text");
      cp = (cp << 6) | (c & 0x3F);
    }
    pos_ += n;
    return cp;
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
};

// Lowers the syntax tree into rules of element sequences, then lays them out as a Grammar.
class Lowering {
 public:
  Lowering(const Parser& parser, const std::vector<RuleSyntax>& rules) : parser_(parser) {
    for (const RuleSyntax& r : rules) {
      if (ids_.count(r.name)) parser_.fail(r.offset, "rule '" + r.name + "' is defined twice");
      ids_[r.name] = new_rule(r.name);
    }
    for (const RuleSyntax& r : rules) {
      const std::uint32_t id = ids_[r.name];
      for (const Sequence& seq : r.alternatives) {
        std::vector<Element> alt;
        lower_sequence(seq, alt, r.name);
        rules_[id].push_back(std::move(alt));
      }
    }
    if (!ids_.count("root")) parser_.fail(0, "the grammar has no rule named 'root' (where matching starts)");
  }

  Grammar grammar() {
    Grammar g;
    g.rule_names = names_;
    g.byte_sets = byte_sets_;
    g.root = ids_.at("root");
    g.rules.resize(rules_.size());
    for (std::size_t r = 0; r < rules_.size(); ++r) {
      for (const std::vector<Element>& alt : rules_[r]) {
        g.rules[r].push_back(static_cast<std::uint32_t>(g.elements.size()));
        g.elements.insert(g.elements.end(), alt.begin(), alt.end());
        g.elements.push_back(Element{ElementKind::kEnd, 0});
      }
    }
    return g;
  }

 private:
  std::uint32_t new_rule(const std::string& name) {
    rules_.emplace_back();
    names_.push_back(name);
    return static_cast<std::uint32_t>(rules_.size() - 1);
  }

  std::uint32_t generated_rule(const std::string& base) {
    return new_rule(base + "-" + std::to_string(rules_.size()));
  }

  std::uint32_t byte_set(const ByteSet& s) {
    auto [it, fresh] = set_ids_.try_emplace(s.bits, static_cast<std::uint32_t>(byte_sets_.size()));
    if (fresh) byte_sets_.push_back(s);
    return it->second;
  }

  void grow(std::size_t n, const Item& item) {
    count_ += n;
    if (count_ > kMaxElements) parser_.fail(item.offset, "the grammar expands to more than " + std::to_string(kMaxElements) + " elements (lower the repetition counts)");
  }

  void lower_sequence(const Sequence& seq, std::vector<Element>& out, const std::string& base) {
    for (const Item& item : seq) lower_repeated(item, out, base);
  }

  // One occurrence of the item, ignoring its repetition.
  void lower_once(const Item& item, std::vector<Element>& out, const std::string& base) {
    switch (item.kind) {
      case Item::Kind::kLiteral:
        grow(item.bytes.size(), item);
        for (std::uint8_t b : item.bytes) {
          ByteSet s;
          s.set(b);
          out.push_back({ElementKind::kBytes, byte_set(s)});
        }
        break;
      case Item::Kind::kClass:
        grow(1, item);
        out.push_back(lower_class(item.ranges, base));
        break;
      case Item::Kind::kRef: {
        auto it = ids_.find(item.name);
        if (it == ids_.end()) parser_.fail(item.offset, "rule '" + item.name + "' is not defined");
        grow(1, item);
        out.push_back({ElementKind::kRule, it->second});
        break;
      }
      case Item::Kind::kGroup: {
        const std::uint32_t id = generated_rule(base);
        for (const Sequence& seq : item.alternatives) {
          std::vector<Element> alt;
          lower_sequence(seq, alt, base);
          rules_[id].push_back(std::move(alt));
        }
        grow(1, item);
        out.push_back({ElementKind::kRule, id});
        break;
      }
    }
  }

  Element lower_class(const std::vector<CodePointRange>& ranges, const std::string& base) {
    ByteSet ascii;
    bool only_ascii = true;
    for (const CodePointRange& r : ranges) only_ascii = only_ascii && r.hi < 0x80;
    if (only_ascii) {
      for (const CodePointRange& r : ranges) ascii.set_range(static_cast<std::uint8_t>(r.lo), static_cast<std::uint8_t>(r.hi));
      return {ElementKind::kBytes, byte_set(ascii)};
    }
    const std::uint32_t id = generated_rule(base);
    bool any_ascii = false;
    for (const CodePointRange& r : ranges) {
      for (const ByteRangeSequence& seq : utf8_sequences(r)) {
        if (seq.size() == 1) {
          ascii.set_range(seq[0].first, seq[0].second);
          any_ascii = true;
          continue;
        }
        std::vector<Element> alt;
        for (const auto& [lo, hi] : seq) {
          ByteSet s;
          s.set_range(lo, hi);
          alt.push_back({ElementKind::kBytes, byte_set(s)});
        }
        rules_[id].push_back(std::move(alt));
      }
    }
    if (any_ascii) rules_[id].push_back({Element{ElementKind::kBytes, byte_set(ascii)}});
    return {ElementKind::kRule, id};
  }

  // The item as one element: itself when it lowers to one, else a rule holding it.
  Element single(const Item& item, const std::string& base) {
    std::vector<Element> once;
    lower_once(item, once, base);
    if (once.size() == 1) return once[0];
    const std::uint32_t id = generated_rule(base);
    rules_[id].push_back(std::move(once));
    return {ElementKind::kRule, id};
  }

  void lower_repeated(const Item& item, std::vector<Element>& out, const std::string& base) {
    if (item.min == 1 && item.max == 1 && !item.unbounded) {
      lower_once(item, out, base);
      return;
    }
    const Element x = single(item, base);
    grow(item.min, item);
    for (std::uint32_t i = 0; i < item.min; ++i) out.push_back(x);
    if (item.unbounded) {
      const std::uint32_t star = generated_rule(base);  // star ::= x star |
      rules_[star].push_back({x, Element{ElementKind::kRule, star}});
      rules_[star].push_back({});
      out.push_back({ElementKind::kRule, star});
      return;
    }
    // Up to max - min more: opt_1 ::= x | ;  opt_k ::= x opt_{k-1} | .
    std::optional<Element> tail;
    grow(item.max - item.min, item);
    for (std::uint32_t k = item.min; k < item.max; ++k) {
      const std::uint32_t opt = generated_rule(base);
      std::vector<Element> alt{x};
      if (tail) alt.push_back(*tail);
      rules_[opt].push_back(std::move(alt));
      rules_[opt].push_back({});
      tail = Element{ElementKind::kRule, opt};
    }
    if (tail) out.push_back(*tail);
  }

  const Parser& parser_;
  std::map<std::string, std::uint32_t> ids_;
  std::vector<std::vector<std::vector<Element>>> rules_;  // rule -> alternatives -> elements
  std::vector<std::string> names_;
  std::vector<ByteSet> byte_sets_;
  std::map<std::array<std::uint64_t, 4>, std::uint32_t> set_ids_;
  std::size_t count_ = 0;
};

}  // namespace

Grammar parse_grammar(std::string_view text, std::string_view source) {
  Parser parser(text, source);
  const std::vector<RuleSyntax> rules = parser.parse();
  Lowering lowering(parser, rules);
  Grammar g = lowering.grammar();
  check_no_left_recursion(g, std::string(source) + ": ");
  return g;
}

}  // namespace plexus::structured
