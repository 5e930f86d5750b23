// The decoders of tokenizer.json. Invalid UTF-8 produced by byte-level tokens becomes U+FFFD
// (one per maximal invalid subpart for ByteLevel, one per byte for ByteFallback, as in HF).
#include "tokenizer/decoder.h"

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/utf8.h"

namespace plexus {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty() || s.find(from) == std::string::npos) return;
  std::string out;
  std::size_t last = 0;
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, last)) {
    out.append(s, last, pos - last).append(to);
    last = pos + from.size();
  }
  out.append(s, last, std::string::npos);
  s.swap(out);
}

class ByteLevelDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    const auto& t = byte_level::tables();
    std::string bytes;
    for (const std::string& tok : tokens) {
      const std::size_t mark = bytes.size();
      std::size_t i = 0;
      bool ok = true;
      while (i < tok.size()) {
        const char32_t cp = utf8::next(tok, i);
        if (cp >= t.to_byte.size() || t.to_byte[cp] < 0) {
          ok = false;
          break;
        }
        bytes.push_back(static_cast<char>(t.to_byte[cp]));
      }
      if (!ok) {  // not a byte-level spelling: keep the token's own bytes
        bytes.resize(mark);
        bytes.append(tok);
      }
    }
    tokens.assign(1, utf8::find_invalid(bytes) == std::string::npos ? std::move(bytes) : utf8::repair(bytes));
  }
  void piece_bytes(std::string& piece) const override {
    const auto& t = byte_level::tables();
    std::string bytes;
    std::size_t i = 0;
    while (i < piece.size()) {
      const char32_t cp = utf8::next(piece, i);
      if (cp >= t.to_byte.size() || t.to_byte[cp] < 0) return;  // not a byte-level spelling: its own bytes
      bytes.push_back(static_cast<char>(t.to_byte[cp]));
    }
    piece.swap(bytes);
  }
};

class ByteFallbackDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (utf8::find_invalid(pending) == std::string::npos) {
        out.push_back(pending);
      } else {
        for (std::size_t k = 0; k < pending.size(); ++k) out.emplace_back("\xEF\xBF\xBD");
      }
      pending.clear();
    };
    for (std::string& tok : tokens) {
      int byte = -1;
      if (tok.size() == 6 && tok.compare(0, 3, "<0x") == 0 && tok[5] == '>') byte = parse_hex(tok[3], tok[4]);
      if (byte >= 0) {
        pending.push_back(static_cast<char>(byte));
      } else {
        flush();
        out.push_back(std::move(tok));
      }
    }
    flush();
    tokens.swap(out);
  }
  void piece_bytes(std::string& piece) const override {
    if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>') {
      const int byte = parse_hex(piece[3], piece[4]);
      if (byte >= 0) piece.assign(1, static_cast<char>(byte));
    }
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  static int parse_hex(char a, char b) {
    const int h = hex(a), l = hex(b);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
  }
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first) : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      replace_all(tokens[i], replacement_, " ");
      if (i == 0 && strip_first_ && !tokens[i].empty() && tokens[i][0] == ' ') tokens[i].erase(0, 1);
    }
  }
  void piece_bytes(std::string& piece) const override { replace_all(piece, replacement_, " "); }  // not first: no strip

 private:
  std::string replacement_;
  bool strip_first_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) replace_all(t, from_, to_);
  }
  void piece_bytes(std::string& piece) const override { replace_all(piece, from_, to_); }

 private:
  std::string from_, to_;
};

class FuseDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
  void piece_bytes(std::string&) const override {}
};

// Removes up to `start` leading and `stop` trailing copies of `content` from every token.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, std::size_t start, std::size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (content_.empty()) return;
    for (std::string& t : tokens) {
      std::size_t b = 0, e = t.size();
      for (std::size_t k = 0; k < start_ && e - b >= content_.size() && t.compare(b, content_.size(), content_) == 0; ++k)
        b += content_.size();
      for (std::size_t k = 0; k < stop_ && e - b >= content_.size() &&
                              t.compare(e - content_.size(), content_.size(), content_) == 0;
           ++k)
        e -= content_.size();
      t = t.substr(b, e - b);
    }
  }
  // The shipped tokenizers strip what a Metaspace prefix put before the text's first token (after
  // Fuse: the whole text's start); a token inside the text keeps its bytes.
  void piece_bytes(std::string&) const override {}

 private:
  std::string content_;
  std::size_t start_, stop_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }
  void piece_bytes(std::string& piece) const override {
    for (const auto& p : parts_) p->piece_bytes(piece);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const Json& spec, const std::string& where) {
  if (spec.is_null()) return nullptr;
  const std::string type = field_string(spec, "type", where);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Metaspace") {
    bool strip_first = field_bool_or(spec, "add_prefix_space", true, where);
    const std::string scheme = field_string_or(spec, "prepend_scheme", "", where);
    if (!scheme.empty()) strip_first = scheme != "never";
    return std::make_unique<MetaspaceDecoder>(field_string_or(spec, "replacement", "\u2581", where), strip_first);
  }
  if (type == "Replace") {
    Pattern p = field_pattern(spec, "pattern", where);
    if (p.regex) throw InputError(where + ".pattern: a Regex pattern in a Replace decoder is not supported");
    return std::make_unique<ReplaceDecoder>(std::move(p.literal), field_string(spec, "content", where));
  }
  if (type == "Strip") {
    const long long start = field_int_or(spec, "start", 0, where), stop = field_int_or(spec, "stop", 0, where);
    if (start < 0 || stop < 0) throw InputError(where + ": Strip start/stop must be non-negative");
    return std::make_unique<StripDecoder>(field_string(spec, "content", where), static_cast<std::size_t>(start),
                                          static_cast<std::size_t>(stop));
  }
  if (type == "Sequence") {
    const Json& list = field_array(spec, "decoders", where);
    std::vector<std::unique_ptr<Decoder>> parts;
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto d = make_decoder(list[i], where + ".decoders[" + std::to_string(i) + "]");
      if (d) parts.push_back(std::move(d));
    }
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  throw InputError(where + ".type '" + type +
                   "' is not supported (supported: ByteLevel, ByteFallback, Metaspace, Replace, Fuse, Strip, "
                   "Sequence)");
}

std::string clean_up_tokenization_spaces(std::string text) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},     {" ?", "?"},     {" !", "!"},       {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"},   {" 's", "'s"},     {" 've", "'ve"}, {" 're", "'re"},
  };
  for (const auto& [from, to] : kRules) replace_all(text, from, to);
  return text;
}

}  // namespace plexus
