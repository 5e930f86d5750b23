// Hugging Face tokenizer.json (+ tokenizer_config.json) or a GGUF file's tokenizer.ggml.* metadata
// loaded once and used to turn text into token ids and back, matching the ids and text Hugging
// Face's tokenizers produce (tokenizer.json) or llama.cpp's token ids (GGUF).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace plexus {

struct GgufValue;

struct TokenizerParts;

class Tokenizer {
 public:
  // PATH is a tokenizer.json file, a directory holding tokenizer.json (+ tokenizer_config.json
  // if present, read from the same directory), or a GGUF file (recognised by its magic; its
  // tokenizer.ggml.* metadata). Throws InputError naming the file and field on bad input,
  // including any tokenizer.json component type or GGUF tokenizer plexus does not implement.
  static std::unique_ptr<Tokenizer> load(const std::string& path);
  // PATH is a directory with tokenizer.json, or a GGUF file with tokenizer.ggml.model.
  static bool exists_in(const std::string& path);

  // The tokenizer described by GGUF metadata (tokenizer.ggml.model "llama" or "gpt2", tokens,
  // scores, token_type, merges, pre, special ids, add_* flags; tokenizer.chat_template), as
  // llama.cpp tokenizes with special tokens parsed. `where` names the source in InputErrors.
  static std::unique_ptr<Tokenizer> from_gguf_metadata(const std::map<std::string, GgufValue>& kv,
                                                       const std::string& where);

  // Token ids of `text`. Invalid UTF-8 is first repaired (each maximal invalid subpart becomes
  // U+FFFD), so any byte string encodes. add_special_tokens applies the post-processor.
  std::vector<std::int32_t> encode(std::string_view text, bool add_special_tokens) const;
  // Text of `ids`; ids outside the vocabulary are skipped, as Hugging Face does.
  std::string decode(std::span<const std::int32_t> ids, bool skip_special_tokens = false) const;

  std::int32_t vocab_size() const;             // largest id + 1, added tokens included
  std::optional<std::int32_t> bos_id() const;  // from tokenizer_config.json / added tokens when known
  std::optional<std::int32_t> eos_id() const;
  std::string id_to_piece(std::int32_t id) const;  // raw vocab string ("" when unknown)
  std::optional<std::int32_t> piece_to_id(std::string_view piece) const;
  bool is_special(std::int32_t id) const;
  // The bytes token `id` adds to a text after other tokens (byte-level and <0xHH> byte-fallback
  // spellings as raw bytes, "▁" as a space, no UTF-8 repair); nullopt for special, control,
  // unknown and unused tokens and ids outside the vocabulary. Structured output masks by these.
  std::optional<std::string> token_bytes(std::int32_t id) const;  // an added token flagged "special" (GGUF: control, unknown)
  // tokenizer_config.json's "chat_template" / GGUF tokenizer.chat_template, when present.
  std::optional<std::string> chat_template() const;

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

 private:
  explicit Tokenizer(std::unique_ptr<TokenizerParts> parts);
  void encode_text(std::string_view text, bool at_start, std::vector<std::int32_t>& out) const;
  std::string decode_spm(std::span<const std::int32_t> ids, bool skip_special_tokens) const;
  std::unique_ptr<TokenizerParts> parts_;
};

}  // namespace plexus
