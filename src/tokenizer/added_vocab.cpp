// Added-token matching. Candidates are bucketed by first byte, so text without any token's
// first byte is scanned at memchr-like speed.
#include "tokenizer/added_vocab.h"

#include <algorithm>

#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace plexus {

void AddedVocab::add(AddedToken token) {
  if (token.content.empty()) return;
  for (AddedToken& t : tokens_) {
    if (t.content == token.content) {
      t = std::move(token);
      rebuild();
      return;
    }
  }
  tokens_.push_back(std::move(token));
  rebuild();
}

void AddedVocab::rebuild() {
  raw_ = Index();
  normalized_ = Index();
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    Index& idx = tokens_[i].normalized ? normalized_ : raw_;
    idx.by_first_byte[static_cast<unsigned char>(tokens_[i].content[0])].push_back(static_cast<int>(i));
    idx.any = true;
  }
  for (Index* idx : {&raw_, &normalized_})
    for (auto& bucket : idx->by_first_byte)
      std::stable_sort(bucket.begin(), bucket.end(),
                       [&](int a, int b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
}

const AddedToken* AddedVocab::find_id(std::int32_t id) const {
  for (const AddedToken& t : tokens_)
    if (t.id == id) return &t;
  return nullptr;
}

std::optional<std::int32_t> AddedVocab::find_content(std::string_view content) const {
  for (const AddedToken& t : tokens_)
    if (t.content == content) return t.id;
  return std::nullopt;
}

void AddedVocab::split(std::string_view text, bool normalized, std::vector<Segment>& out) const {
  const Index& idx = normalized ? normalized_ : raw_;
  std::size_t done = 0;  // end of the last emitted segment
  if (idx.any) {
    std::size_t pos = 0;
    while (pos < text.size()) {
      const auto& bucket = idx.by_first_byte[static_cast<unsigned char>(text[pos])];
      int hit = -1;
      for (int t : bucket) {
        const std::string& c = tokens_[t].content;
        if (text.compare(pos, c.size(), c) == 0) {
          hit = t;
          break;
        }
      }
      if (hit < 0) {
        ++pos;
        continue;
      }
      const AddedToken& tok = tokens_[hit];
      std::size_t start = pos, stop = pos + tok.content.size();
      pos = stop;
      if (start < done) continue;  // overlaps whitespace an rstrip already took
      if (tok.single_word) {
        const bool word_before = start > 0 && unicode::is_word(utf8::previous(text, start));
        std::size_t k = stop;
        const bool word_after = stop < text.size() && unicode::is_word(utf8::next(text, k));
        if (word_before || word_after) continue;
      }
      if (tok.lstrip) {
        while (start > done) {
          const char32_t cp = utf8::previous(text, start);
          if (!unicode::is_white_space(cp)) break;
          std::string enc;
          utf8::append(enc, cp);
          start -= enc.size();
        }
      }
      if (tok.rstrip) {
        while (stop < text.size()) {
          std::size_t k = stop;
          if (!unicode::is_white_space(utf8::next(text, k))) break;
          stop = k;
        }
        pos = stop;
      }
      if (start > done) out.push_back({done, start, -1});
      out.push_back({start, stop, hit});
      done = stop;
    }
  }
  if (done < text.size()) out.push_back({done, text.size(), -1});
}

}  // namespace plexus
