// Pre-tokenizers. Pieces are byte spans into one working string, so splitting allocates only
// the span vectors; steps that insert text (prefix spaces, ▁) rebuild the string once.
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"

namespace plexus {
namespace {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

SplitBehavior parse_behavior(const std::string& s, const std::string& where) {
  if (s == "Removed") return SplitBehavior::kRemoved;
  if (s == "Isolated") return SplitBehavior::kIsolated;
  if (s == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (s == "Contiguous") return SplitBehavior::kContiguous;
  throw InputError(where + ".behavior '" + s +
                   "' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

struct Piece {
  std::size_t begin, end;
  bool is_match;
};

// Combines alternating match / non-match pieces the way HF's SplitDelimiterBehavior does,
// appending the non-empty results to `out`.
void combine(const std::vector<Piece>& pieces, SplitBehavior behavior, std::vector<Span>& out) {
  std::vector<Span> acc;
  bool prev = false;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Piece& p : pieces)
        if (!p.is_match) acc.push_back({p.begin, p.end});
      break;
    case SplitBehavior::kIsolated:
      for (const Piece& p : pieces) acc.push_back({p.begin, p.end});
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Piece& p : pieces) {
        if (p.is_match && !prev && !acc.empty()) {
          acc.back().end = p.end;
        } else {
          acc.push_back({p.begin, p.end});
        }
        prev = p.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->is_match && !prev && !acc.empty()) {
          acc.back().begin = it->begin;
        } else {
          acc.push_back({it->begin, it->end});
        }
        prev = it->is_match;
      }
      std::reverse(acc.begin(), acc.end());
      break;
    case SplitBehavior::kContiguous:
      for (const Piece& p : pieces) {
        if (p.is_match == prev && !acc.empty()) {
          acc.back().end = p.end;
        } else {
          acc.push_back({p.begin, p.end});
        }
        prev = p.is_match;
      }
      break;
  }
  for (const Span& s : acc)
    if (s.end > s.begin) out.push_back(s);
}

class Split : public PreTokenizer {
 public:
  Split(std::string literal, std::unique_ptr<Regex> regex, SplitBehavior behavior, bool invert)
      : literal_(std::move(literal)), regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}

  void apply(std::string& text, std::vector<Span>& spans, bool) const override {
    std::vector<Span> out;
    out.reserve(spans.size() * 2);
    std::vector<Regex::Match> matches;
    std::vector<Piece> pieces;
    for (const Span& span : spans) {
      const std::string_view piece(text.data() + span.begin, span.end - span.begin);
      matches.clear();
      find(piece, matches);
      if (behavior_ == SplitBehavior::kIsolated && !invert_) {  // the hot path: keep everything
        std::size_t prev = 0;
        for (const auto& m : matches) {
          if (m.begin > prev) out.push_back({span.begin + prev, span.begin + m.begin});
          if (m.end > m.begin) out.push_back({span.begin + m.begin, span.begin + m.end});
          prev = m.end;
        }
        if (prev < piece.size()) out.push_back({span.begin + prev, span.end});
        continue;
      }
      pieces.clear();
      std::size_t prev = 0;
      for (const auto& m : matches) {
        if (m.begin > prev) pieces.push_back({span.begin + prev, span.begin + m.begin, invert_});
        pieces.push_back({span.begin + m.begin, span.begin + m.end, !invert_});
        prev = m.end;
      }
      if (prev < piece.size()) pieces.push_back({span.begin + prev, span.end, invert_});
      combine(pieces, behavior_, out);
    }
    spans.swap(out);
  }

 private:
  void find(std::string_view piece, std::vector<Regex::Match>& matches) const {
    if (regex_) {
      regex_->find_all(piece, matches);
      return;
    }
    if (literal_.empty()) return;
    for (std::size_t pos = piece.find(literal_); pos != std::string_view::npos;
         pos = piece.find(literal_, pos + literal_.size()))
      matches.push_back({pos, pos + literal_.size()});
  }

  std::string literal_;
  std::unique_ptr<Regex> regex_;
  SplitBehavior behavior_;
  bool invert_;
};

// Adds a leading space to pieces that lack one, then optionally splits with the GPT-2 regex.
// The byte-to-character mapping itself is folded into the BPE model (it works on raw bytes).
class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, const std::string& where) : add_prefix_space_(add_prefix_space) {
    if (use_regex)
      split_ = std::make_unique<Split>("", std::make_unique<Regex>(kGpt2Pattern, where), SplitBehavior::kIsolated, false);
  }
  void apply(std::string& text, std::vector<Span>& spans, bool at_start) const override {
    if (add_prefix_space_) {
      std::string out;
      out.reserve(text.size() + spans.size());
      for (Span& s : spans) {
        const std::size_t b = out.size();
        if (text[s.begin] != ' ') out.push_back(' ');
        out.append(text, s.begin, s.end - s.begin);
        s = {b, out.size()};
      }
      text.swap(out);
    }
    if (split_) split_->apply(text, spans, at_start);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Split> split_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class Metaspace : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void apply(std::string& text, std::vector<Span>& spans, bool at_start) const override {
    std::string out;
    out.reserve(text.size() + text.size() / 4 + replacement_.size());
    std::vector<Span> result;
    std::vector<Piece> pieces;
    for (const Span& s : spans) {
      const std::size_t b = out.size();
      const bool starts = text.compare(s.begin, replacement_.size(), replacement_) == 0 ||
                          (text[s.begin] == ' ');  // a space becomes the replacement
      const bool prepend = scheme_ == PrependScheme::kAlways ||
                           (scheme_ == PrependScheme::kFirst && at_start && s.begin == 0);
      if (prepend && !starts) out.append(replacement_);
      for (std::size_t i = s.begin; i < s.end; ++i) {
        if (text[i] == ' ') {
          out.append(replacement_);
        } else {
          out.push_back(text[i]);
        }
      }
      if (!split_) {
        result.push_back({b, out.size()});
        continue;
      }
      pieces.clear();
      std::size_t prev = b;
      for (std::size_t pos = out.find(replacement_, b); pos != std::string::npos;
           pos = out.find(replacement_, pos + replacement_.size())) {
        if (pos > prev) pieces.push_back({prev, pos, false});
        pieces.push_back({pos, pos + replacement_.size(), true});
        prev = pos + replacement_.size();
      }
      if (prev < out.size()) pieces.push_back({prev, out.size(), false});
      combine(pieces, SplitBehavior::kMergedWithNext, result);
    }
    text.swap(out);
    spans.swap(result);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class PreTokenizerSequence : public PreTokenizer {
 public:
  explicit PreTokenizerSequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void apply(std::string& text, std::vector<Span>& spans, bool at_start) const override {
    for (const auto& p : parts_) p->apply(text, spans, at_start);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

std::unique_ptr<PreTokenizer> regex_split(const char* pattern, SplitBehavior b, bool invert, const std::string& where) {
  return std::make_unique<Split>("", std::make_unique<Regex>(pattern, where), b, invert);
}

std::unique_ptr<PreTokenizer> make(const Json& spec, const std::string& where, bool& byte_level, bool last) {
  const std::string type = field_string(spec, "type", where);
  if (type == "Sequence") {
    const Json& list = field_array(spec, "pretokenizers", where);
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (std::size_t i = 0; i < list.size(); ++i)
      parts.push_back(make(list[i], where + ".pretokenizers[" + std::to_string(i) + "]", byte_level,
                           last && i + 1 == list.size()));
    return std::make_unique<PreTokenizerSequence>(std::move(parts));
  }
  if (type == "ByteLevel") {
    if (!last)
      throw InputError(where + ": a ByteLevel pre-tokenizer followed by other steps is not supported; "
                               "ByteLevel must be the last pre-tokenizer");
    byte_level = true;
    return std::make_unique<ByteLevel>(field_bool_or(spec, "add_prefix_space", true, where),
                                       field_bool_or(spec, "use_regex", true, where), where);
  }
  if (type == "Split") {
    Pattern p = field_pattern(spec, "pattern", where);
    return std::make_unique<Split>(std::move(p.literal), std::move(p.regex),
                                   parse_behavior(field_string(spec, "behavior", where), where),
                                   field_bool_or(spec, "invert", false, where));
  }
  if (type == "Metaspace") {
    std::string repl = field_string_or(spec, "replacement", "\u2581", where);
    PrependScheme scheme = field_bool_or(spec, "add_prefix_space", true, where) ? PrependScheme::kAlways
                                                                                : PrependScheme::kNever;
    const std::string s = field_string_or(spec, "prepend_scheme", "", where);
    if (s == "always") scheme = PrependScheme::kAlways;
    if (s == "first") scheme = PrependScheme::kFirst;
    if (s == "never") scheme = PrependScheme::kNever;
    if (repl.empty()) throw InputError(where + ".replacement must not be empty");
    return std::make_unique<Metaspace>(std::move(repl), scheme, field_bool_or(spec, "split", true, where));
  }
  if (type == "Whitespace") return regex_split("\\w+|[^\\w\\s]+", SplitBehavior::kRemoved, true, where);
  if (type == "WhitespaceSplit") return regex_split("\\s+", SplitBehavior::kRemoved, false, where);
  if (type == "Digits")
    return regex_split(field_bool_or(spec, "individual_digits", false, where) ? "\\p{N}" : "\\p{N}+",
                       SplitBehavior::kIsolated, false, where);
  if (type == "Punctuation")
    return regex_split("[\\p{P}!-/:-@\\[-`{-~]",
                       parse_behavior(field_string_or(spec, "behavior", "Isolated", where), where), false, where);
  throw InputError(where + ".type '" + type +
                   "' is not supported (supported: Sequence, Split, ByteLevel, Metaspace, Whitespace, "
                   "WhitespaceSplit, Digits, Punctuation)");
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& spec, const std::string& where, bool& byte_level) {
  byte_level = false;
  if (spec.is_null()) return nullptr;
  return make(spec, where, byte_level, true);
}

}  // namespace plexus
