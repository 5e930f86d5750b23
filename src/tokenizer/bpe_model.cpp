// BPE encoding: a piece becomes symbols (bytes or characters), then ranked merges apply lowest
// rank first, leftmost first — the order HF's Word::merge_all uses. Short pieces use a scan over
// a rank array, long ones a heap over a linked list (O(n log n) for 1 MB pieces).
#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <functional>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/utf8.h"

namespace plexus {
namespace {

constexpr std::uint32_t kNoRank = 0xFFFFFFFFu;
constexpr long long kMaxId = 1 << 24;  // far above any real vocabulary; bounds the id tables
constexpr std::string_view kMetaspace = "\u2581";
constexpr std::size_t kCutAbove = 64;  // pieces longer than this are cut at "▁" runs when safe

// Raw bytes that the byte-level spelling `token` stands for (characters outside the table are
// kept as their own UTF-8 bytes, as HF's ByteLevel decoder does).
std::string unspell(std::string_view token) {
  const auto& t = byte_level::tables();
  std::string out;
  std::size_t i = 0;
  while (i < token.size()) {
    const std::size_t start = i;
    const char32_t cp = utf8::next(token, i);
    if (cp < t.to_byte.size() && t.to_byte[cp] >= 0) {
      out.push_back(static_cast<char>(t.to_byte[cp]));
    } else {
      out.append(token.substr(start, i - start));
    }
  }
  return out;
}

}  // namespace

void BpeModel::MergeTable::build(std::size_t n) {
  std::size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  keys.assign(cap, 0);
  rank.assign(cap, 0);
  merged.assign(cap, 0);
  mask = cap - 1;
}

void BpeModel::MergeTable::insert(std::int32_t a, std::int32_t b, std::uint32_t r, std::int32_t id) {
  const std::uint64_t key =
      ((static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b)) + 1;
  std::uint64_t h = (key * 0x9E3779B97F4A7C15ULL) >> 20;
  for (;; ++h) {
    std::uint64_t& k = keys[h & mask];
    if (k == 0 || k == key) {  // a repeated pair keeps the later rank, as a HashMap collect would
      k = key;
      rank[h & mask] = r;
      merged[h & mask] = id;
      return;
    }
  }
}

BpeModel::BpeModel(const Json& model, bool byte_level, const std::string& where) : byte_level_(byte_level) {
  const std::string type = field_string_or(model, "type", "BPE", where);
  if (type != "BPE")
    throw InputError(where + ".type '" + type + "' is not supported: plexus reads BPE tokenizers only");
  const Json& vocab = field(model, "vocab", where);
  if (!vocab.is_object()) throw InputError(where + ".vocab must be an object of token -> id");
  std::int32_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<long long>() < 0 || it.value().get<long long>() >= kMaxId)
      throw InputError(where + ".vocab[\"" + it.key() + "\"] must be an integer id in [0, " + std::to_string(kMaxId) +
                       "): fix or regenerate the tokenizer.json");
    max_id = std::max(max_id, it.value().get<std::int32_t>());
  }
  id_to_token_.assign(static_cast<std::size_t>(max_id + 1), std::string());
  vocab_.reserve(vocab.size());
  if (byte_level_) vocab_spelled_.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = it.value().get<std::int32_t>();
    id_to_token_[static_cast<std::size_t>(id)] = it.key();
    if (byte_level_) {
      vocab_spelled_.emplace(it.key(), id);
      vocab_.emplace(unspell(it.key()), id);
    } else {
      vocab_.emplace(it.key(), id);
    }
  }
  const StringMap<std::int32_t>& spelled = byte_level_ ? vocab_spelled_ : vocab_;

  byte_fallback_ = field_bool_or(model, "byte_fallback", false, where);
  fuse_unk_ = field_bool_or(model, "fuse_unk", false, where);
  ignore_merges_ = field_bool_or(model, "ignore_merges", false, where);
  prefix_ = field_string_or(model, "continuing_subword_prefix", "", where);
  suffix_ = field_string_or(model, "end_of_word_suffix", "", where);
  if (byte_level_) {
    prefix_ = unspell(prefix_);
    suffix_ = unspell(suffix_);
  }
  if (!byte_level_ && vocab_.count(kMetaspace)) {
    cut_at_metaspace_ = true;
    for (const auto& [token, id] : vocab_) {
      for (std::size_t pos = token.find(kMetaspace, 1); pos != std::string::npos; pos = token.find(kMetaspace, pos + 1)) {
        if (pos < kMetaspace.size() || token.compare(pos - kMetaspace.size(), kMetaspace.size(), kMetaspace) != 0) {
          cut_at_metaspace_ = false;
          break;
        }
      }
      if (!cut_at_metaspace_) break;
    }
  }
  const std::string unk = field_string_or(model, "unk_token", "", where);
  if (!unk.empty()) {
    auto it = spelled.find(unk);
    if (it == spelled.end())
      throw InputError(where + ".unk_token '" + unk + "' is not in model.vocab: fix the tokenizer.json");
    unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    unit_id_[b] = -1;
    if (byte_level_ || b < 0x80) {
      auto it = vocab_.find(std::string_view(reinterpret_cast<const char*>(&b), 1));
      if (it != vocab_.end()) unit_id_[b] = it->second;
    }
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = spelled.find(std::string_view(name));
    fallback_id_[b] = it == spelled.end() ? -1 : it->second;
  }

  const Json& merges = field_array(model, "merges", where);
  merges_.build(merges.size());
  std::string left, right;
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const Json& m = merges[r];
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const std::size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        throw InputError(where + ".merges[" + std::to_string(r) + "] '" + s + "' must be two tokens separated by one space");
      left = s.substr(0, sp);
      right = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      throw InputError(where + ".merges[" + std::to_string(r) + "] must be \"a b\" or [\"a\", \"b\"]");
    }
    auto a = spelled.find(left), b = spelled.find(right), ab = spelled.find(left + right);
    if (a == spelled.end() || b == spelled.end() || ab == spelled.end())
      throw InputError(where + ".merges[" + std::to_string(r) + "] ('" + left + "', '" + right +
                       "') uses a token missing from model.vocab: fix the tokenizer.json");
    merges_.insert(a->second, b->second, static_cast<std::uint32_t>(r), ab->second);
  }
}

std::optional<std::int32_t> BpeModel::token_to_id(std::string_view token) const {
  const StringMap<std::int32_t>& spelled = byte_level_ ? vocab_spelled_ : vocab_;
  auto it = spelled.find(token);
  if (it == spelled.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= id_to_token_.size()) return nullptr;
  const std::string& s = id_to_token_[static_cast<std::size_t>(id)];
  return s.empty() ? nullptr : &s;
}

void BpeModel::initial_symbols(std::string_view piece, std::vector<std::int32_t>& syms) const {
  const bool affixes = !prefix_.empty() || !suffix_.empty();
  std::int32_t pending_unk = -1;  // HF emits a run of unknowns as one unk when fuse_unk
  std::string scratch;
  std::size_t i = 0;
  while (i < piece.size()) {
    const std::size_t start = i;
    const auto b0 = static_cast<unsigned char>(piece[i]);
    if (byte_level_) {
      ++i;
    } else {
      i += std::min(utf8::sequence_length(b0), piece.size() - i);
    }
    const std::string_view unit = piece.substr(start, i - start);
    std::int32_t id = -1;
    if (!affixes) {
      if (i - start == 1) {
        id = unit_id_[b0];
      } else {
        auto it = vocab_.find(unit);
        if (it != vocab_.end()) id = it->second;
      }
    } else {
      scratch.clear();
      if (start > 0) scratch.append(prefix_);
      scratch.append(unit);
      if (i == piece.size()) scratch.append(suffix_);
      auto it = vocab_.find(std::string_view(scratch));
      if (it != vocab_.end()) id = it->second;
    }
    if (id >= 0) {
      if (pending_unk >= 0) syms.push_back(pending_unk);
      pending_unk = -1;
      syms.push_back(id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : unit) all = all && fallback_id_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : unit) syms.push_back(fallback_id_[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && !fuse_unk_) syms.push_back(pending_unk);
      pending_unk = *unk_id_;
    }
  }
  if (pending_unk >= 0) syms.push_back(pending_unk);
}

void BpeModel::merge_small(std::vector<std::int32_t>& syms) const {
  std::size_t n = syms.size();
  std::uint32_t ranks[64];
  std::int32_t ids[64];
  for (std::size_t i = 0; i + 1 < n; ++i)
    if (!merges_.find(syms[i], syms[i + 1], ranks[i], ids[i])) ranks[i] = kNoRank;
  while (n > 1) {
    std::size_t best = 0;
    for (std::size_t i = 1; i + 1 < n; ++i)
      if (ranks[i] < ranks[best]) best = i;
    if (ranks[best] == kNoRank) break;
    syms[best] = ids[best];
    for (std::size_t i = best + 1; i + 1 < n; ++i) syms[i] = syms[i + 1];
    for (std::size_t i = best + 1; i + 2 < n; ++i) {
      ranks[i] = ranks[i + 1];
      ids[i] = ids[i + 1];
    }
    --n;
    if (best > 0 && !merges_.find(syms[best - 1], syms[best], ranks[best - 1], ids[best - 1]))
      ranks[best - 1] = kNoRank;
    if (best + 1 < n) {
      if (!merges_.find(syms[best], syms[best + 1], ranks[best], ids[best])) ranks[best] = kNoRank;
    }
  }
  syms.resize(n);
}

void BpeModel::merge_large(std::vector<std::int32_t>& syms) const {
  // Heap entries pack (rank, position) into one integer: the smallest is the lowest rank,
  // leftmost. The merged id is looked up again when an entry is popped (stale entries drop out).
  const std::size_t n = syms.size();
  std::vector<std::int32_t> prev(n), next(n);
  for (std::size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<std::int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1;
  }
  std::vector<std::uint64_t> heap;
  heap.reserve(n);
  const auto pack = [](std::uint32_t r, std::size_t pos) { return (static_cast<std::uint64_t>(r) << 32) | pos; };
  std::uint32_t r;
  std::int32_t id;
  for (std::size_t i = 0; i + 1 < n; ++i)
    if (merges_.find(syms[i], syms[i + 1], r, id)) heap.push_back(pack(r, i));
  const auto later = std::greater<std::uint64_t>();
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const std::uint64_t top = heap.back();
    heap.pop_back();
    const auto pos = static_cast<std::size_t>(top & 0xFFFFFFFFu);
    const auto top_rank = static_cast<std::uint32_t>(top >> 32);
    if (syms[pos] < 0 || next[pos] < 0) continue;  // removed, or last symbol
    const auto right = static_cast<std::size_t>(next[pos]);
    if (!merges_.find(syms[pos], syms[right], r, id) || r != top_rank) continue;  // stale entry
    syms[pos] = id;
    syms[right] = -1;
    next[pos] = next[right];
    if (next[right] >= 0) prev[static_cast<std::size_t>(next[right])] = static_cast<std::int32_t>(pos);
    if (prev[pos] >= 0) {
      const auto p = static_cast<std::size_t>(prev[pos]);
      if (merges_.find(syms[p], syms[pos], r, id)) {
        heap.push_back(pack(r, p));
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
    if (next[pos] >= 0 && merges_.find(syms[pos], syms[static_cast<std::size_t>(next[pos])], r, id)) {
      heap.push_back(pack(r, pos));
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  syms.erase(std::remove(syms.begin(), syms.end(), -1), syms.end());
}

void BpeModel::merge(std::vector<std::int32_t>& syms) const {
  if (syms.size() <= 64) {
    merge_small(syms);
  } else {
    merge_large(syms);
  }
}

void BpeModel::tokenize(std::string_view piece, std::vector<std::int32_t>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    auto it = vocab_.find(piece);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (!cut_at_metaspace_ || piece.size() <= kCutAbove) {
    encode_word(piece, out);
    return;
  }
  std::size_t begin = 0;
  for (std::size_t pos = piece.find(kMetaspace, 1); pos != std::string_view::npos;
       pos = piece.find(kMetaspace, pos + kMetaspace.size())) {
    if (pos >= kMetaspace.size() && piece.compare(pos - kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0)
      continue;  // inside a run of "▁"
    encode_word(piece.substr(begin, pos - begin), out);
    begin = pos;
  }
  encode_word(piece.substr(begin), out);
}

void BpeModel::encode_word(std::string_view piece, std::vector<std::int32_t>& out) const {
  if (piece.empty()) return;
  const bool cacheable = piece.size() < kCacheMaxPiece;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<std::int32_t> syms;
  syms.reserve(piece.size());
  initial_symbols(piece, syms);
  merge(syms);
  out.insert(out.end(), syms.begin(), syms.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheMaxEntries) cache_.emplace(std::string(piece), std::move(syms));
  }
}

}  // namespace plexus
