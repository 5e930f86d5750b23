// gguf_tokenizer_metadata: tokenizer.json (+ tokenizer_config.json) -> tokenizer.ggml.* values.
#include "tokenizer/gguf_vocab_export.h"

#include <filesystem>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/gguf_writer.h"
#include "core/json.h"

namespace plexus {

namespace {

namespace fs = std::filesystem;

// tokenizer.ggml.token_type values.
constexpr std::int64_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

// Whether `spec` (a pre-tokenizer / decoder / normalizer, possibly a Sequence) holds a step of `type`.
const Json* find_step(const Json& spec, const std::string& type) {
  if (!spec.is_object()) return nullptr;
  if (spec.value("type", "") == type) return &spec;
  for (const char* list : {"pretokenizers", "normalizers", "decoders", "processors"}) {
    auto it = spec.find(list);
    if (it == spec.end() || !it->is_array()) continue;
    for (const Json& s : *it)
      if (const Json* hit = find_step(s, type)) return hit;
  }
  return nullptr;
}

// llama.cpp's tokenizer.ggml.pre name for a byte-level pre-tokenizer, from its split regex.
std::string pre_name(const Json& pre, const std::string& file) {
  const Json* split = find_step(pre, "Split");
  if (!split) {
    const Json* bl = find_step(pre, "ByteLevel");
    if (bl && bl->value("use_regex", true)) return "gpt-2";
    throw InputError(file + ": pre_tokenizer has no Split regex and no ByteLevel regex: llama.cpp has no "
                     "pre-tokenizer name for it, so plexus cannot write this tokenizer into a GGUF file");
  }
  const std::string re = split->contains("pattern") && (*split)["pattern"].is_object()
                             ? (*split)["pattern"].value("Regex", "")
                             : "";
  static const std::map<std::string, std::string> kKnown = {
      {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
       "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
       "llama-bpe"},
      {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
       "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
       "qwen2"},
      {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", "gpt-2"},
  };
  auto it = kKnown.find(re);
  if (it == kKnown.end())
    throw InputError(file + ": pre_tokenizer regex '" + re + "' has no llama.cpp pre-tokenizer name plexus knows "
                     "(llama-bpe, qwen2, gpt-2), so plexus cannot write this tokenizer into a GGUF file");
  return it->second;
}

// "<s>" or {"content": "<s>"} in tokenizer_config.json; "" when absent.
std::string config_token(const Json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return "";
}

// The special tokens TemplateProcessing puts before and after a single sequence.
void template_affixes(const Json& post, std::vector<std::string>& before, std::vector<std::string>& after) {
  const Json* tp = find_step(post, "TemplateProcessing");
  if (!tp || !tp->contains("single") || !(*tp)["single"].is_array()) return;
  bool seen_a = false;
  for (const Json& piece : (*tp)["single"]) {
    if (piece.contains("Sequence")) {
      seen_a = true;
    } else if (piece.contains("SpecialToken") && piece["SpecialToken"].contains("id")) {
      (seen_a ? after : before).push_back(piece["SpecialToken"]["id"].get<std::string>());
    }
  }
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v)
    if (x == s) return true;
  return false;
}

}  // namespace

std::vector<std::pair<std::string, GgufValue>> gguf_tokenizer_metadata(const std::string& path) {
  std::error_code ec;
  fs::path json_path = path;
  if (fs::is_directory(path, ec)) {
    json_path = fs::path(path) / "tokenizer.json";
    if (!fs::is_regular_file(json_path, ec)) return {};
  }
  const std::string file = json_path.string();
  const Json j = read_json_file(file);
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw InputError(file + ": field 'model' is missing: this is not a Hugging Face tokenizer.json");
  const Json& model = j["model"];
  if (model.value("type", "BPE") != "BPE")
    throw InputError(file + ": model.type '" + model.value("type", "") +
                     "' cannot be written to GGUF by plexus: only BPE tokenizers are supported");
  Json cfg = Json::object();
  const fs::path cfg_path = json_path.parent_path() / "tokenizer_config.json";
  if (fs::is_regular_file(cfg_path, ec)) cfg = read_json_file(cfg_path.string());
  if (!cfg.is_object()) cfg = Json::object();

  const Json null_json;
  const Json& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : null_json;
  const bool byte_level = find_step(pre, "ByteLevel") != nullptr;
  const Json& vocab = model.at("vocab");
  if (!vocab.is_object()) throw InputError(file + ": model.vocab must be an object of token -> id");

  // Tokens in id order: the model's vocabulary, then added tokens (which may reuse its ids).
  std::map<std::int64_t, std::string> by_id;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<std::int64_t>() < 0 || it.value().get<std::int64_t>() >= (1 << 24))
      throw InputError(file + ": model.vocab[\"" + it.key() + "\"] must be an integer id in [0, 16777216)");
    by_id.emplace(it.value().get<std::int64_t>(), it.key());
  }
  std::map<std::int64_t, bool> added_special;  // id -> "special"
  std::map<std::string, std::int64_t> added_ids;
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const Json& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a.contains("content")) continue;
      const std::int64_t id = a["id"].get<std::int64_t>();
      if (id < 0 || id >= (1 << 24)) throw InputError(file + ": added_tokens id " + std::to_string(id) + " is out of range");
      by_id[id] = a["content"].get<std::string>();
      added_special[id] = a.value("special", false);
      added_ids[a["content"].get<std::string>()] = id;
    }
  }
  const std::int64_t n = by_id.empty() ? 0 : by_id.rbegin()->first + 1;
  const auto id_of = [&](const std::string& token) -> std::optional<std::int64_t> {
    if (token.empty()) return std::nullopt;
    if (auto it = added_ids.find(token); it != added_ids.end()) return it->second;
    if (auto it = vocab.find(token); it != vocab.end()) return it->get<std::int64_t>();
    return std::nullopt;
  };
  const std::string unk_token = model.contains("unk_token") && model["unk_token"].is_string()
                                    ? model["unk_token"].get<std::string>() : "";
  const std::optional<std::int64_t> unk_id = id_of(unk_token);

  std::vector<std::string> tokens;
  std::vector<std::int64_t> types;
  tokens.reserve(static_cast<std::size_t>(n));
  types.reserve(static_cast<std::size_t>(n));
  for (std::int64_t id = 0; id < n; ++id) {
    auto it = by_id.find(id);
    std::int64_t type = kNormal;
    std::string text;
    if (it == by_id.end()) {
      text = "[PAD" + std::to_string(id) + "]";
      type = kUnused;
    } else {
      text = it->second;
      auto a = added_special.find(id);
      const bool looks_special = text.size() >= 4 && text.compare(0, 2, "<|") == 0 && text.compare(text.size() - 2, 2, "|>") == 0;
      if (unk_id && id == *unk_id) {
        type = kUnknown;
      } else if (a != added_special.end()) {
        type = a->second || looks_special ? kControl : kUserDefined;
      } else if (!byte_level && text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text.back() == '>') {
        type = kByte;
      }
    }
    tokens.push_back(std::move(text));
    types.push_back(type);
  }

  std::vector<std::pair<std::string, GgufValue>> out;
  const Json& merges = model.contains("merges") && model["merges"].is_array() ? model["merges"] : null_json;
  const auto merge_pair = [&](std::size_t r, std::string& a, std::string& b) {
    const Json& m = merges[r];
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const std::size_t sp = s.find(' ');
      if (sp == std::string::npos) throw InputError(file + ": model.merges[" + std::to_string(r) + "] '" + s + "' has no space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      throw InputError(file + ": model.merges[" + std::to_string(r) + "] must be \"a b\" or [\"a\", \"b\"]");
    }
  };
  bool add_space_prefix = false;
  if (byte_level) {
    out.emplace_back("tokenizer.ggml.model", gguf_string("gpt2"));
    out.emplace_back("tokenizer.ggml.pre", gguf_string(pre_name(pre, file)));
  } else {
    if (!vocab.contains("\xE2\x96\x81") && !model.value("byte_fallback", false))
      throw InputError(file + ": a BPE tokenizer that is neither byte-level nor SentencePiece-style (\"▁\" spaces, "
                       "byte fallback) cannot be written to GGUF by plexus");
    out.emplace_back("tokenizer.ggml.model", gguf_string("llama"));
    out.emplace_back("tokenizer.ggml.pre", gguf_string("default"));
    const Json& norm = j.contains("normalizer") ? j["normalizer"] : null_json;
    const Json* prepend = find_step(norm, "Prepend");
    const Json* meta = find_step(pre, "Metaspace");
    add_space_prefix = (prepend && prepend->value("prepend", "") == "\xE2\x96\x81") ||
                       (meta && meta->value("prepend_scheme", meta->value("add_prefix_space", true) ? "always" : "never") != "never");
  }
  out.emplace_back("tokenizer.ggml.tokens", gguf_string_array(std::move(tokens)));
  if (!byte_level) {
    // SentencePiece-style scores: a merged piece scores -(rank of the last merge making it), so
    // earlier merges win; pieces no merge makes score -id.
    std::vector<double> score(static_cast<std::size_t>(n));
    for (std::int64_t id = 0; id < n; ++id) score[static_cast<std::size_t>(id)] = -static_cast<double>(id);
    std::string a, b;
    for (std::size_t r = 0; r < merges.size(); ++r) {
      merge_pair(r, a, b);
      auto it = vocab.find(a + b);
      if (it != vocab.end()) score[static_cast<std::size_t>(it->get<std::int64_t>())] = -static_cast<double>(r);
    }
    out.emplace_back("tokenizer.ggml.scores", gguf_f32_array(std::vector<float>(score.begin(), score.end())));
  }
  out.emplace_back("tokenizer.ggml.token_type", gguf_int_array(GgufType::kI32, types));
  if (byte_level) {
    std::vector<std::string> m;
    m.reserve(merges.size());
    std::string a, b;
    for (std::size_t r = 0; r < merges.size(); ++r) {
      merge_pair(r, a, b);
      m.push_back(a + " " + b);
    }
    out.emplace_back("tokenizer.ggml.merges", gguf_string_array(std::move(m)));
  }

  std::optional<std::int64_t> bos = id_of(config_token(cfg, "bos_token"));
  std::optional<std::int64_t> eos = id_of(config_token(cfg, "eos_token"));
  const std::optional<std::int64_t> pad = id_of(config_token(cfg, "pad_token"));
  std::vector<std::string> before, after;
  template_affixes(j.contains("post_processor") ? j["post_processor"] : null_json, before, after);
  if (!bos && !before.empty()) bos = id_of(before.front());
  if (!bos)
    for (const char* name : {"<|begin_of_text|>", "<s>", "<bos>"})
      if (!bos) bos = id_of(name);
  if (!eos)
    for (const char* name : {"<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>"})
      if (!eos) eos = id_of(name);
  if (bos) out.emplace_back("tokenizer.ggml.bos_token_id", gguf_int(GgufType::kU32, *bos));
  if (eos) out.emplace_back("tokenizer.ggml.eos_token_id", gguf_int(GgufType::kU32, *eos));
  if (unk_id) out.emplace_back("tokenizer.ggml.unknown_token_id", gguf_int(GgufType::kU32, *unk_id));
  if (pad) out.emplace_back("tokenizer.ggml.padding_token_id", gguf_int(GgufType::kU32, *pad));
  const std::string bos_text = bos ? by_id[*bos] : "", eos_text = eos ? by_id[*eos] : "";
  const bool add_bos = cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()
                           ? cfg["add_bos_token"].get<bool>() : bos && contains(before, bos_text);
  const bool add_eos = cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean()
                           ? cfg["add_eos_token"].get<bool>() : eos && contains(after, eos_text);
  out.emplace_back("tokenizer.ggml.add_bos_token", gguf_bool(add_bos));
  out.emplace_back("tokenizer.ggml.add_eos_token", gguf_bool(add_eos));
  if (!byte_level) out.emplace_back("tokenizer.ggml.add_space_prefix", gguf_bool(add_space_prefix));
  if (auto it = cfg.find("chat_template"); it != cfg.end()) {
    if (it->is_string()) {
      out.emplace_back("tokenizer.chat_template", gguf_string(it->get<std::string>()));
    } else if (it->is_array()) {  // [{"name": ..., "template": ...}]: the "default" one
      for (const Json& t : *it)
        if (t.is_object() && t.value("name", "") == "default" && t.contains("template") && t["template"].is_string())
          out.emplace_back("tokenizer.chat_template", gguf_string(t["template"].get<std::string>()));
    }
  }
  return out;
}

}  // namespace plexus
