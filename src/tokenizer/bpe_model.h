// The BPE model of tokenizer.json: vocabulary, ranked merges, byte fallback, unk handling and
// ignore_merges, with a merge cache for repeated pieces. Thread-safe for concurrent encode.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/json.h"

namespace plexus {

// Hashing that lets unordered_map<std::string, V> be queried with a string_view. Deliberately
// not noexcept: libstdc++ then stores each node's hash, so bucket walks never rehash strings.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // `model` is tokenizer.json's "model" object; `byte_level` when a ByteLevel pre-tokenizer feeds
  // it (the vocabulary is then re-keyed by raw bytes). InputError names `where` on bad input.
  BpeModel(const Json& model, bool byte_level, const std::string& where);

  // Appends the ids of one pre-tokenized piece (valid UTF-8 / raw bytes in byte-level mode).
  void tokenize(std::string_view piece, std::vector<std::int32_t>& out) const;

  std::optional<std::int32_t> token_to_id(std::string_view token) const;  // token as spelled in the file
  const std::string* id_to_token(std::int32_t id) const;                  // nullptr when unknown
  std::int32_t max_id() const { return static_cast<std::int32_t>(id_to_token_.size()) - 1; }

 private:
  struct MergeTable {
    std::vector<std::uint64_t> keys;  // (left << 32 | right) + 1; 0 = empty slot
    std::vector<std::uint32_t> rank;
    std::vector<std::int32_t> merged;
    std::uint64_t mask = 0;
    void build(std::size_t n);
    void insert(std::int32_t a, std::int32_t b, std::uint32_t r, std::int32_t id);
    // Rank and merged id of (a, b), or false.
    bool find(std::int32_t a, std::int32_t b, std::uint32_t& r, std::int32_t& id) const {
      const std::uint64_t key = ((static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
                                 static_cast<std::uint32_t>(b)) + 1;
      std::uint64_t h = (key * 0x9E3779B97F4A7C15ULL) >> 20;
      for (;; ++h) {
        const std::uint64_t k = keys[h & mask];
        if (k == key) {
          r = rank[h & mask];
          id = merged[h & mask];
          return true;
        }
        if (k == 0) return false;
      }
    }
  };

  void encode_word(std::string_view piece, std::vector<std::int32_t>& out) const;
  void initial_symbols(std::string_view piece, std::vector<std::int32_t>& syms) const;
  void merge(std::vector<std::int32_t>& syms) const;
  void merge_small(std::vector<std::int32_t>& syms) const;
  void merge_large(std::vector<std::int32_t>& syms) const;

  StringMap<std::int32_t> vocab_;          // keys: raw bytes in byte-level mode, else as in the file
  StringMap<std::int32_t> vocab_spelled_;  // keys as in the file (byte-level mode only)
  std::vector<std::string> id_to_token_;   // as in the file
  MergeTable merges_;
  bool byte_level_ = false;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  // No vocabulary token has a "▁" right after another character, so no merge crosses the start
  // of a "▁" run: long pieces are cut there and the parts encoded (and cached) on their own.
  bool cut_at_metaspace_ = false;
  std::optional<std::int32_t> unk_id_;
  std::string prefix_, suffix_;                      // continuing_subword_prefix, end_of_word_suffix
  std::int32_t unit_id_[256];                        // id of each single byte / ASCII char, -1 if none
  std::int32_t fallback_id_[256];                    // id of "<0xXX>", -1 if none

  static constexpr std::size_t kCacheMaxPiece = 256;
  static constexpr std::size_t kCacheMaxEntries = 1 << 17;
  mutable std::mutex cache_mutex_;
  mutable StringMap<std::vector<std::int32_t>> cache_;
};

}  // namespace plexus
