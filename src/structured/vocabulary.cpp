// Token bytes, the trie built from the tokens sorted by their bytes (sorted order is the trie's
// depth-first order), and the vocabulary's content hash.
#include "structured/vocabulary.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace plexus::structured {

TokenTrie::TokenTrie(const std::vector<std::optional<std::string>>& bytes) {
  std::vector<std::int32_t> order;
  for (std::size_t id = 0; id < bytes.size(); ++id) {
    if (bytes[id] && !bytes[id]->empty()) order.push_back(static_cast<std::int32_t>(id));
  }
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return *bytes[static_cast<std::size_t>(a)] < *bytes[static_cast<std::size_t>(b)];
  });
  nodes_.push_back(Node{});
  std::vector<std::uint32_t> path{0};  // nodes from the root to the current prefix
  std::string prefix;
  for (std::int32_t id : order) {
    const std::string& s = *bytes[static_cast<std::size_t>(id)];
    std::size_t common = 0;
    while (common < prefix.size() && common < s.size() && prefix[common] == s[common]) ++common;
    while (path.size() > common + 1) {  // close the subtrees that s leaves
      nodes_[path.back()].end = static_cast<std::uint32_t>(nodes_.size());
      path.pop_back();
    }
    prefix.resize(common);
    for (std::size_t i = common; i < s.size(); ++i) {
      Node n;
      n.byte = static_cast<std::uint8_t>(s[i]);
      n.tokens_begin = n.tokens_end = static_cast<std::uint32_t>(ids_.size());
      path.push_back(static_cast<std::uint32_t>(nodes_.size()));
      nodes_.push_back(n);
      prefix.push_back(s[i]);
    }
    Node& last = nodes_[path.back()];
    if (last.tokens_end == last.tokens_begin) last.tokens_begin = last.tokens_end = static_cast<std::uint32_t>(ids_.size());
    ids_.push_back(id);
    last.tokens_end = static_cast<std::uint32_t>(ids_.size());
    max_depth_ = std::max(max_depth_, s.size());
  }
  while (!path.empty()) {
    nodes_[path.back()].end = static_cast<std::uint32_t>(nodes_.size());
    path.pop_back();
  }
}

namespace {

std::string content_key(std::int64_t size, const std::vector<std::optional<std::string>>& bytes,
                        const std::vector<std::int32_t>& eos) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
  auto mix = [&](const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ULL;
  };
  mix(&size, sizeof size);
  for (const auto& b : bytes) {
    const std::uint64_t n = b ? b->size() : ~std::uint64_t{0};
    mix(&n, sizeof n);
    if (b) mix(b->data(), b->size());
  }
  for (std::int32_t e : eos) mix(&e, sizeof e);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf) + "/" + std::to_string(size);
}

}  // namespace

Vocabulary::Vocabulary(std::int64_t size, std::vector<std::optional<std::string>> bytes, std::vector<std::int32_t> eos_ids)
    : size_(size), bytes_(std::move(bytes)), eos_ids_(std::move(eos_ids)), trie_([&] {
        bytes_.resize(static_cast<std::size_t>(size_));
        for (std::int32_t e : eos_ids_) {
          if (e >= 0 && e < size_) bytes_[static_cast<std::size_t>(e)].reset();  // chosen only to end
        }
        return TokenTrie(bytes_);
      }()) {
  key_ = content_key(size_, bytes_, eos_ids_);
}

const std::optional<std::string>& Vocabulary::bytes(std::int32_t id) const {
  static const std::optional<std::string> none;
  if (id < 0 || id >= size_) return none;
  return bytes_[static_cast<std::size_t>(id)];
}

bool Vocabulary::is_eos(std::int32_t id) const { return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end(); }

Vocabulary vocabulary_from_tokenizer(const Tokenizer& tok, std::int64_t model_vocab, const std::vector<std::int64_t>& eos_ids) {
  if (eos_ids.empty()) {
    throw InputError("structured output needs an end-of-sequence token to end a complete output, and this model has none "
                     "(config.json eos_token_id, tokenizer eos; --ignore-eos drops them)");
  }
  std::vector<std::optional<std::string>> bytes(static_cast<std::size_t>(model_vocab));
  const std::int64_t n = std::min<std::int64_t>(model_vocab, tok.vocab_size());
  for (std::int64_t id = 0; id < n; ++id) bytes[static_cast<std::size_t>(id)] = tok.token_bytes(static_cast<std::int32_t>(id));
  std::vector<std::int32_t> eos;
  for (std::int64_t e : eos_ids) eos.push_back(static_cast<std::int32_t>(e));
  return Vocabulary(model_vocab, std::move(bytes), std::move(eos));
}

}  // namespace plexus::structured
