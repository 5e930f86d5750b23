// SpmModel: score-ordered merging of adjacent symbols over a SentencePiece vocabulary (see header).
#include "tokenizer/spm_model.h"

#include <cstdio>
#include <queue>

#include <algorithm>

namespace plexus {

namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581

// Byte length of the UTF-8 sequence led by `c` (1 for stray continuation bytes).
std::size_t utf8_len(unsigned char c) {
  if (c < 0xC0) return 1;
  if (c < 0xE0) return 2;
  if (c < 0xF0) return 3;
  return 4;
}

}  // namespace

SpmModel::SpmModel(std::vector<std::string> tokens, std::vector<float> scores, std::vector<GgufTokenType> types,
                   std::optional<std::int32_t> unk_id)
    : tokens_(std::move(tokens)), scores_(std::move(scores)), types_(std::move(types)), unk_id_(unk_id) {
  vocab_.reserve(tokens_.size());
  for (std::size_t i = 0; i < tokens_.size(); ++i) vocab_.emplace(tokens_[i], static_cast<std::int32_t>(i));
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    const auto it = vocab_.find(std::string_view(name));
    byte_id_[b] = it == vocab_.end() ? -1 : it->second;
  }
}

std::optional<std::int32_t> SpmModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* SpmModel::id_to_token(std::int32_t id) const {
  if (id < 0 || id >= size()) return nullptr;
  return &tokens_[static_cast<std::size_t>(id)];
}

void SpmModel::push_char(std::string_view ch, std::vector<std::int32_t>& out) const {
  if (auto id = token_to_id(ch)) {
    out.push_back(*id);
    return;
  }
  for (char c : ch) {
    const std::int32_t b = byte_id_[static_cast<unsigned char>(c)];
    if (b >= 0) {
      out.push_back(b);
    } else if (auto id = token_to_id(std::string_view(&c, 1))) {
      out.push_back(*id);
    } else if (unk_id_) {
      out.push_back(*unk_id_);
    }
  }
}

void SpmModel::tokenize(std::string_view text, std::vector<std::int32_t>& out) const {
  struct Symbol {
    int prev, next;
    std::size_t begin, len;  // bytes of `text`; len 0 once merged into its left neighbour
  };
  struct Candidate {
    int left, right;
    float score;
    std::size_t len;  // bytes of the merged piece, to spot candidates made stale by other merges
  };
  const auto worse = [](const Candidate& a, const Candidate& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::vector<Symbol> syms;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = std::min(text.size() - i, utf8_len(static_cast<unsigned char>(text[i])));
    const int k = static_cast<int>(syms.size());
    syms.push_back({k - 1, k + 1, i, n});
    i += n;
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> queue(worse);
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::size_t len = syms[left].len + syms[right].len;
    const auto id = token_to_id(text.substr(syms[left].begin, len));
    if (!id) return;
    queue.push({left, right, scores_[static_cast<std::size_t>(*id)], len});
  };
  for (int i = 1; i < static_cast<int>(syms.size()); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = syms[static_cast<std::size_t>(c.left)];
    Symbol& r = syms[static_cast<std::size_t>(c.right)];
    if (l.len == 0 || r.len == 0 || l.len + r.len != c.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[static_cast<std::size_t>(r.next)].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
  for (int i = 0; i >= 0; i = syms[static_cast<std::size_t>(i)].next) {
    const Symbol& s = syms[static_cast<std::size_t>(i)];
    push_char(text.substr(s.begin, s.len), out);
  }
}

std::string SpmModel::piece_text(std::int32_t id) const {
  const std::string& t = tokens_[static_cast<std::size_t>(id)];
  switch (type(id)) {
    case GgufTokenType::kByte: {
      unsigned v = 0;
      if (t.size() == 6 && std::sscanf(t.c_str(), "<0x%2X>", &v) == 1) return std::string(1, static_cast<char>(v));
      return t;
    }
    case GgufTokenType::kNormal:
    case GgufTokenType::kUndefined: {
      std::string s;
      s.reserve(t.size());
      for (std::size_t i = 0; i < t.size();) {
        if (t.compare(i, kMetaspace.size(), kMetaspace) == 0) {
          s += ' ';
          i += kMetaspace.size();
        } else {
          s += t[i++];
        }
      }
      return s;
    }
    case GgufTokenType::kUnknown:
    case GgufTokenType::kControl:
    case GgufTokenType::kUserDefined:
    case GgufTokenType::kUnused:
      return t;
  }
  return t;
}

}  // namespace plexus
