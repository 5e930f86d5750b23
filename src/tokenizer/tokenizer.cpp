// Tokenizer: loads tokenizer.json / tokenizer_config.json into the pipeline pieces and runs
// added tokens -> normalizer -> pre-tokenizer -> BPE -> post-processor, and the decoders back.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/gguf_file.h"
#include "core/json.h"
#include "core/mmap_file.h"
#include "tokenizer/added_vocab.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer_parts.h"
#include "tokenizer/utf8.h"

namespace plexus {


namespace {

namespace fs = std::filesystem;

// "<s>" or {"content": "<s>", ...} in tokenizer_config.json; "" when absent or null.
std::string config_token(const Json& cfg, const std::string& key, const std::string& where) {
  if (!cfg.is_object() || !cfg.contains(key) || cfg[key].is_null()) return "";
  const Json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) return field_string(v, "content", where + "." + key);
  throw InputError(where + "." + key + " must be a string or an object with \"content\"");
}

bool is_llama_style(const std::string& cls) {
  static const char* kClasses[] = {"LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer",
                                   "CodeLlamaTokenizerFast", "GemmaTokenizer", "GemmaTokenizerFast"};
  return std::any_of(std::begin(kClasses), std::end(kClasses), [&](const char* c) { return cls == c; });
}

}  // namespace

bool Tokenizer::exists_in(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return fs::is_regular_file(fs::path(path) / "tokenizer.json", ec);
  if (!GgufFile::is_gguf(path)) return false;
  try {  // a GGUF file without a vocabulary (weights only) has no tokenizer
    return GgufFile(path).find("tokenizer.ggml.model") != nullptr;
  } catch (const InputError&) {
    return true;  // malformed: load() reports where
  }
}

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& path) {
  std::error_code ec;
  fs::path json_path;
  if (!fs::is_directory(path, ec) && GgufFile::is_gguf(path)) {
    const GgufFile gguf(path);
    return from_gguf_metadata(gguf.metadata(), path);
  }
  if (fs::is_directory(path, ec)) {
    json_path = fs::path(path) / "tokenizer.json";
    if (!fs::is_regular_file(json_path, ec))
      throw InputError(path + " has no tokenizer.json: pass a Hugging Face model directory or a tokenizer.json file");
  } else if (fs::is_regular_file(path, ec)) {
    json_path = path;
  } else {
    throw InputError(path + " does not exist: pass a Hugging Face model directory or a tokenizer.json file");
  }
  const std::string file = json_path.string();
  const std::string text = read_text_file(file);
  if (file == path) {  // a file named on the command line: say what it is not
    require_json_object_text(text, file, "a tokenizer.json",
                             "pass a Hugging Face model directory, its tokenizer.json, or a .gguf file holding a vocabulary");
  }
  const Json j = parse_json(text, file);
  if (!j.is_object()) throw InputError(file + ": must hold a JSON object (a Hugging Face tokenizer.json)");

  if (!j.contains("model"))
    throw InputError(file + ": field 'model' is missing: this is not a Hugging Face tokenizer.json");
  auto parts = std::make_unique<TokenizerParts>();
  const auto section = [&](const char* key) -> const Json& {
    static const Json kNull;
    auto it = j.find(key);
    return it == j.end() ? kNull : *it;
  };
  bool byte_level = false;
  parts->normalizer = make_normalizer(section("normalizer"), file + ": normalizer");
  parts->pre_tokenizer = make_pre_tokenizer(section("pre_tokenizer"), file + ": pre_tokenizer", byte_level);
  parts->model = std::make_unique<BpeModel>(field(j, "model", file), byte_level, file + ": model");
  parts->post_processor = make_post_processor(section("post_processor"), file + ": post_processor");
  parts->decoder = make_decoder(section("decoder"), file + ": decoder");

  std::int32_t max_id = parts->model->max_id();
  const Json& added = section("added_tokens");
  if (!added.is_null() && !added.is_array()) throw InputError(file + ": added_tokens must be an array");
  for (std::size_t i = 0; !added.is_null() && i < added.size(); ++i) {
    const std::string at = file + ": added_tokens[" + std::to_string(i) + "]";
    AddedToken t;
    t.content = field_string(added[i], "content", at);
    const long long id = field_int_or(added[i], "id", -1, at);
    if (id < 0 || id >= (1 << 24)) throw InputError(at + ".id must be an integer in [0, 16777216)");
    t.id = static_cast<std::int32_t>(id);
    // As in HF's AddedVocabulary: a content the model already knows keeps the model's id.
    if (auto model_id = parts->model->token_to_id(t.content)) t.id = *model_id;
    t.special = field_bool_or(added[i], "special", false, at);
    t.lstrip = field_bool_or(added[i], "lstrip", false, at);
    t.rstrip = field_bool_or(added[i], "rstrip", false, at);
    t.single_word = field_bool_or(added[i], "single_word", false, at);
    t.normalized = field_bool_or(added[i], "normalized", !t.special, at) && parts->normalizer != nullptr;
    parts->has_normalized_added = parts->has_normalized_added || t.normalized;
    max_id = std::max(max_id, t.id);
    parts->added.add(std::move(t));
  }
  parts->vocab_size = max_id + 1;
  parts->added_by_id.assign(static_cast<std::size_t>(parts->vocab_size), -1);
  for (std::size_t i = 0; i < parts->added.tokens().size(); ++i)
    parts->added_by_id[static_cast<std::size_t>(parts->added.tokens()[i].id)] = static_cast<int>(i);

  const fs::path config_path = json_path.parent_path() / "tokenizer_config.json";
  const auto lookup = [&](const std::string& token) -> std::optional<std::int32_t> {
    if (token.empty()) return std::nullopt;
    if (auto id = parts->added.find_content(token)) return id;
    return parts->model->token_to_id(token);
  };
  if (fs::is_regular_file(config_path, ec)) {
    const std::string cfg_file = config_path.string();
    const Json cfg = read_json_file(cfg_file);
    parts->clean_up_spaces = field_bool_or(cfg, "clean_up_tokenization_spaces", false, cfg_file);
    parts->bos = lookup(config_token(cfg, "bos_token", cfg_file));
    parts->eos = lookup(config_token(cfg, "eos_token", cfg_file));
    if (cfg.contains("chat_template") && cfg["chat_template"].is_string())
      parts->chat_template = cfg["chat_template"].get<std::string>();
    const std::string cls = field_string_or(cfg, "tokenizer_class", "", cfg_file);
    if (is_llama_style(cls) && (cfg.contains("add_bos_token") || cfg.contains("add_eos_token"))) {
      // transformers rebuilds the post-processor of these classes from the two flags.
      std::vector<std::int32_t> prefix, suffix;
      if (field_bool_or(cfg, "add_bos_token", true, cfg_file) && parts->bos) prefix.push_back(*parts->bos);
      if (field_bool_or(cfg, "add_eos_token", false, cfg_file) && parts->eos) suffix.push_back(*parts->eos);
      parts->post_processor = make_affix_processor(std::move(prefix), std::move(suffix));
    }
  } else {
    for (const char* name : {"<|begin_of_text|>", "<s>", "<bos>"})
      if (!parts->bos) parts->bos = parts->added.find_content(name);
    for (const char* name : {"<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>"})
      if (!parts->eos) parts->eos = parts->added.find_content(name);
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(parts)));
}

Tokenizer::Tokenizer(std::unique_ptr<TokenizerParts> parts) : parts_(std::move(parts)) {}
Tokenizer::~Tokenizer() = default;

void Tokenizer::encode_text(std::string_view text, bool at_start, std::vector<std::int32_t>& out) const {
  const TokenizerParts& p = *parts_;
  std::string work(text);
  if (p.normalizer) p.normalizer->normalize(work);
  std::vector<AddedVocab::Segment> segments;
  if (p.has_normalized_added) {
    p.added.split(work, true, segments);
  } else if (!work.empty()) {
    segments.push_back({0, work.size(), -1});
  }
  std::vector<Span> spans;
  std::string piece_text;
  for (const AddedVocab::Segment& seg : segments) {
    if (seg.token >= 0) {
      out.push_back(p.added.tokens()[static_cast<std::size_t>(seg.token)].id);
      continue;
    }
    std::string* buf = &work;
    spans.assign(1, Span{seg.begin, seg.end});
    if (p.pre_tokenizer) {
      if (segments.size() > 1) {  // pre-tokenizers see each segment as a string of its own
        piece_text.assign(work, seg.begin, seg.end - seg.begin);
        buf = &piece_text;
        spans.assign(1, Span{0, piece_text.size()});
      }
      p.pre_tokenizer->apply(*buf, spans, at_start && seg.begin == 0);
    }
    for (const Span& s : spans) p.model->tokenize(std::string_view(*buf).substr(s.begin, s.end - s.begin), out);
  }
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::string repaired;
  if (utf8::find_invalid(text) != std::string_view::npos) {
    repaired = utf8::repair(text);
    text = repaired;
  }
  std::vector<std::int32_t> out;
  out.reserve(text.size() / 3 + 4);
  std::vector<AddedVocab::Segment> segments;
  parts_->added.split(text, false, segments);
  if (parts_->spm) {
    // As llama.cpp: each text fragment is tokenized on its own, with a leading space when it
    // starts the input or follows an added token (add_space_prefix).
    bool after_token = true;
    std::string work;
    for (const AddedVocab::Segment& seg : segments) {
      if (seg.token >= 0) {
        out.push_back(parts_->added.tokens()[static_cast<std::size_t>(seg.token)].id);
        after_token = true;
        continue;
      }
      if (seg.end == seg.begin) continue;
      work.clear();
      if (parts_->add_space_prefix && after_token) work += "\xE2\x96\x81";
      for (char c : text.substr(seg.begin, seg.end - seg.begin)) {
        if (c == ' ') {
          work += "\xE2\x96\x81";
        } else {
          work += c;
        }
      }
      parts_->spm->tokenize(work, out);
      after_token = false;
    }
    if (add_special_tokens && parts_->post_processor) parts_->post_processor->add_special_tokens(out);
    return out;
  }
  for (const AddedVocab::Segment& seg : segments) {
    if (seg.token >= 0) {
      out.push_back(parts_->added.tokens()[static_cast<std::size_t>(seg.token)].id);
    } else {
      encode_text(text.substr(seg.begin, seg.end - seg.begin), seg.begin == 0, out);
    }
  }
  if (add_special_tokens && parts_->post_processor) parts_->post_processor->add_special_tokens(out);
  return out;
}

std::string Tokenizer::decode_spm(std::span<const std::int32_t> ids, bool skip_special_tokens) const {
  // As llama.cpp: control / unknown pieces as written (or nothing when skipped), unused ones
  // never, "▁" as a space, byte pieces as their byte; with add_space_prefix the first piece
  // loses one leading space.
  const SpmModel& m = *parts_->spm;
  std::string text;
  bool first = true;
  for (std::int32_t id : ids) {
    if (id < 0 || id >= m.size()) continue;
    std::string piece;
    switch (m.type(id)) {
      case GgufTokenType::kControl:
      case GgufTokenType::kUnknown:
        if (!skip_special_tokens) piece = *m.id_to_token(id);
        break;
      case GgufTokenType::kUnused:
        break;
      case GgufTokenType::kUndefined:
      case GgufTokenType::kNormal:
      case GgufTokenType::kUserDefined:
      case GgufTokenType::kByte:
        piece = m.piece_text(id);
        break;
    }
    if (first && parts_->add_space_prefix && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    first = false;
    text += piece;
  }
  return text;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skip_special_tokens) const {
  const TokenizerParts& p = *parts_;
  if (p.spm) return decode_spm(ids, skip_special_tokens);
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (std::int32_t id : ids) {
    if (id < 0 || id >= p.vocab_size) continue;
    const int a = p.added_by_id[static_cast<std::size_t>(id)];
    if (a >= 0) {
      const AddedToken& t = p.added.tokens()[static_cast<std::size_t>(a)];
      if (!(skip_special_tokens && t.special)) tokens.push_back(t.content);
      continue;
    }
    if (const std::string* s = p.model->id_to_token(id)) tokens.push_back(*s);
  }
  std::string text;
  if (p.decoder) {
    p.decoder->decode_chain(tokens);
    for (const std::string& t : tokens) text += t;
  } else {
    for (std::size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
  }
  return p.clean_up_spaces ? clean_up_tokenization_spaces(std::move(text)) : text;
}

std::int32_t Tokenizer::vocab_size() const { return parts_->vocab_size; }
std::optional<std::int32_t> Tokenizer::bos_id() const { return parts_->bos; }
std::optional<std::int32_t> Tokenizer::eos_id() const { return parts_->eos; }

std::string Tokenizer::id_to_piece(std::int32_t id) const {
  if (id < 0 || id >= parts_->vocab_size) return "";
  const int a = parts_->added_by_id[static_cast<std::size_t>(id)];
  if (a >= 0) return parts_->added.tokens()[static_cast<std::size_t>(a)].content;
  const std::string* s = parts_->spm ? parts_->spm->id_to_token(id) : parts_->model->id_to_token(id);
  return s ? *s : "";
}

std::optional<std::int32_t> Tokenizer::piece_to_id(std::string_view piece) const {
  if (auto id = parts_->added.find_content(piece)) return id;
  return parts_->spm ? parts_->spm->token_to_id(piece) : parts_->model->token_to_id(piece);
}

std::optional<std::string> Tokenizer::token_bytes(std::int32_t id) const {
  const TokenizerParts& p = *parts_;
  if (id < 0 || id >= p.vocab_size) return std::nullopt;
  if (p.spm) {
    if (id >= p.spm->size()) return std::nullopt;
    switch (p.spm->type(id)) {
      case GgufTokenType::kControl:
      case GgufTokenType::kUnknown:
      case GgufTokenType::kUnused:
        return std::nullopt;
      default:
        return p.spm->piece_text(id);
    }
  }
  const int a = p.added_by_id[static_cast<std::size_t>(id)];
  if (a >= 0) {
    const AddedToken& t = p.added.tokens()[static_cast<std::size_t>(a)];
    if (t.special) return std::nullopt;
    return t.content;
  }
  const std::string* s = p.model->id_to_token(id);
  if (!s) return std::nullopt;
  std::string piece = *s;
  if (p.decoder) p.decoder->piece_bytes(piece);
  return piece;
}

std::optional<std::string> Tokenizer::chat_template() const { return parts_->chat_template; }

bool Tokenizer::is_special(std::int32_t id) const {
  if (id < 0 || id >= parts_->vocab_size) return false;
  const int a = parts_->added_by_id[static_cast<std::size_t>(id)];
  return a >= 0 && parts_->added.tokens()[static_cast<std::size_t>(a)].special;
}

}  // namespace plexus
