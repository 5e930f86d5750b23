// Tokenizer::from_gguf_metadata: a Tokenizer from GGUF tokenizer.ggml.* metadata, as llama.cpp
// builds its vocabulary — "llama" (SentencePiece: pieces, scores, token types) or "gpt2"
// (byte-level BPE: tokens, merges, and the pre-tokenizer regex named by tokenizer.ggml.pre).
#include <algorithm>

#include "core/error.h"
#include "core/gguf_file.h"
#include "tokenizer/gguf_special_tokens.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_parts.h"

namespace plexus {

namespace {

using Metadata = std::map<std::string, GgufValue>;

// The split regexes llama.cpp uses for each tokenizer.ggml.pre of a "gpt2" vocabulary (applied
// one after another, every match and every gap between matches becoming a piece), with the
// options the same name sets there. Regexes are format facts taken from llama.cpp's vocabulary
// loader; benchmarks/llama_cpp/vocab_check checks each row against llama.cpp itself.
constexpr const char* kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
constexpr const char* kContractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const std::string kLlama3Regex = std::string(kContractions) +
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const std::string kQwen2Regex = std::string(kContractions) +
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const std::string kQwen35Regex = std::string(kContractions) +
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const std::string kGpt4oRegex = std::string("[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+") +
    kContractions + "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*" + kContractions +
    "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kTekkenRegex =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])"
    "([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kGpt2NoTrailing =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

struct PreSpec {
  std::vector<const char*> names;
  std::vector<std::string> regexes;
  bool ignore_merges = false;  // a piece that is a whole vocabulary token is kept as is
  bool add_bos = false;        // llama.cpp's add_bos default for this pre
  bool clean_spaces = true;    // llama.cpp's clean_spaces for this pre (decode)
};

const std::vector<PreSpec>& pre_specs() {
  static const std::vector<PreSpec> kSpecs = {
      {{"default"}, {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2NoTrailing, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false, true},
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
        "modern-bert", "mpt", "olmo", "jais", "exaone4"},
       {kGpt2Regex}, false, false, true},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
       {kLlama3Regex}, true, true, true},
      {{"dbrx", "smaug-bpe"}, {kLlama3Regex}, false, false, true},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"}, {kQwen2Regex}, false, false, false},
      {{"megrez", "stablelm2"}, {kQwen2Regex}, false, false, true},
      {{"qwen35"}, {kQwen35Regex}, false, false, false},
      {{"starcoder", "refact", "codeshell", "exaone", "minerva-7b"}, {"\\p{N}", kGpt2NoTrailing}, false, false, true},
      {{"smollm", "command-r"}, {"\\p{N}", kGpt2NoTrailing}, false, false, false},
      {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2NoTrailing, "[0-9][0-9][0-9]"}, false, false, true},
      {{"gpt-4o", "llama4", "kanana2", "talkie"}, {kGpt4oRegex}, false, false, false},
      {{"tekken"}, {kTekkenRegex}, true, true, false},
  };
  return kSpecs;
}

std::string pre_names() {
  std::string out;
  for (const PreSpec& s : pre_specs())
    for (const char* n : s.names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

const PreSpec* pre_spec(const std::string& pre) {
  const std::string name = pre.empty() ? "default" : pre;  // llama.cpp's choice for a missing pre
  for (const PreSpec& s : pre_specs())
    for (const char* n : s.names)
      if (name == n) return &s;
  return nullptr;
}

class Reader {
 public:
  Reader(const Metadata& kv, const std::string& where) : kv_(kv), where_(where) {}

  const GgufValue* find(const std::string& key) const {
    auto it = kv_.find(key);
    return it == kv_.end() ? nullptr : &it->second;
  }
  [[noreturn]] void bad(const std::string& key, const std::string& what) const {
    throw InputError(where_ + ": metadata " + key + " " + what + ": regenerate the GGUF file with a current converter");
  }
  std::optional<std::string> string(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufValue::Type::kString) bad(key, "must be a string");
    return v->s;
  }
  std::optional<bool> boolean(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type == GgufValue::Type::kBool) return v->b;
    if (v->type == GgufValue::Type::kInt) return v->i != 0;
    bad(key, "must be a bool");
  }
  // A token id: absent, or -1 / out of range (llama.cpp's "none"), gives nullopt.
  std::optional<std::int32_t> token_id(const std::string& key, std::size_t n_tokens) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufValue::Type::kInt) bad(key, "must be an integer token id");
    if (v->i < 0 || v->i >= static_cast<std::int64_t>(n_tokens)) return std::nullopt;
    return static_cast<std::int32_t>(v->i);
  }
  const std::vector<GgufValue>* array(const std::string& key, GgufValue::Type elem, std::size_t n) const {
    const GgufValue* v = find(key);
    if (!v) return nullptr;
    if (v->type != GgufValue::Type::kArray) bad(key, "must be an array");
    if (n != kAnySize && v->arr.size() != n)
      bad(key, "has " + std::to_string(v->arr.size()) + " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    for (std::size_t i = 0; i < v->arr.size(); ++i) {
      const GgufValue& e = v->arr[i];
      const bool ok = e.type == elem || (elem == GgufValue::Type::kFloat && e.type == GgufValue::Type::kInt);
      if (!ok) bad(key + "[" + std::to_string(i) + "]", "has the wrong type");
    }
    return &v->arr;
  }
  static constexpr std::size_t kAnySize = static_cast<std::size_t>(-1);

 private:
  const Metadata& kv_;
  const std::string& where_;
};

GgufTokenType token_type_of(std::int64_t t) {
  switch (t) {
    case 1: return GgufTokenType::kNormal;
    case 2: return GgufTokenType::kUnknown;
    case 3: return GgufTokenType::kControl;
    case 4: return GgufTokenType::kUserDefined;
    case 5: return GgufTokenType::kUnused;
    case 6: return GgufTokenType::kByte;
    default: return GgufTokenType::kUndefined;
  }
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf_metadata(const std::map<std::string, GgufValue>& kv,
                                                         const std::string& where) {
  const Reader r(kv, where);
  const std::optional<std::string> model = r.string("tokenizer.ggml.model");
  if (!model)
    throw InputError(where + ": has no tokenizer (metadata tokenizer.ggml.model is missing): use a GGUF file that "
                     "includes its vocabulary, or pass token ids instead of text");
  if (*model != "llama" && *model != "gpt2")
    throw InputError(where + ": tokenizer.ggml.model '" + *model +
                     "' is not supported: plexus reads 'llama' (SentencePiece) and 'gpt2' (byte-level BPE) vocabularies");
  const std::vector<GgufValue>* tokens_v = r.array("tokenizer.ggml.tokens", GgufValue::Type::kString, Reader::kAnySize);
  if (!tokens_v || tokens_v->empty()) r.bad("tokenizer.ggml.tokens", "is missing or empty");
  const std::size_t n = tokens_v->size();
  if (n >= (1u << 24)) r.bad("tokenizer.ggml.tokens", "has more than 16777216 tokens");
  std::vector<std::string> tokens(n);
  for (std::size_t i = 0; i < n; ++i) tokens[i] = (*tokens_v)[i].s;
  std::vector<GgufTokenType> types(n, GgufTokenType::kNormal);
  if (const auto* tv = r.array("tokenizer.ggml.token_type", GgufValue::Type::kInt, n))
    for (std::size_t i = 0; i < n; ++i) types[i] = token_type_of((*tv)[i].i);
  // llama.cpp's corrections by text: a NORMAL "</s>" or "<|im_end|>" is a control token there.
  const auto named = [&](const char* key, const char* old_key = nullptr) {
    std::optional<std::int32_t> id = r.token_id(key, n);
    if (!id && old_key) id = r.token_id(old_key, n);
    return id;
  };
  apply_llama_cpp_token_types(tokens, types,
                              GgufFimIds{named("tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"),
                                         named("tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"),
                                         named("tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"),
                                         named("tokenizer.ggml.fim_pad_token_id"), named("tokenizer.ggml.fim_rep_token_id"),
                                         named("tokenizer.ggml.fim_sep_token_id")});

  auto parts = std::make_unique<TokenizerParts>();
  parts->vocab_size = static_cast<std::int32_t>(n);
  parts->chat_template = r.string("tokenizer.chat_template");
  const std::optional<std::int32_t> unk = r.token_id("tokenizer.ggml.unknown_token_id", n);
  parts->bos = r.token_id("tokenizer.ggml.bos_token_id", n);
  parts->eos = r.token_id("tokenizer.ggml.eos_token_id", n);

  // Unknown, control and user-defined tokens are matched in the text before tokenizing, as
  // llama.cpp does when it parses special tokens.
  for (std::size_t i = 0; i < n; ++i) {
    const GgufTokenType t = types[i];
    if (tokens[i].empty() ||
        (t != GgufTokenType::kUnknown && t != GgufTokenType::kControl && t != GgufTokenType::kUserDefined))
      continue;
    AddedToken a;
    a.content = tokens[i];
    a.id = static_cast<std::int32_t>(i);
    a.special = t != GgufTokenType::kUserDefined;
    if (parts->added.find_content(a.content)) continue;  // a repeated piece keeps its first id
    parts->added.add(std::move(a));
  }
  parts->added_by_id.assign(n, -1);
  for (std::size_t i = 0; i < parts->added.tokens().size(); ++i)
    parts->added_by_id[static_cast<std::size_t>(parts->added.tokens()[i].id)] = static_cast<int>(i);

  bool add_bos = false;
  if (*model == "llama") {
    std::vector<float> scores(n, 0.0f);
    if (const auto* sv = r.array("tokenizer.ggml.scores", GgufValue::Type::kFloat, n))
      for (std::size_t i = 0; i < n; ++i) {
        const GgufValue& e = (*sv)[i];
        scores[i] = static_cast<float>(e.type == GgufValue::Type::kFloat ? e.f : static_cast<double>(e.i));
      }
    parts->spm = std::make_unique<SpmModel>(std::move(tokens), std::move(scores), std::move(types), unk);
    parts->add_space_prefix = r.boolean("tokenizer.ggml.add_space_prefix").value_or(true);
    add_bos = true;
  } else {
    const std::string pre = r.string("tokenizer.ggml.pre").value_or("");
    const PreSpec* spec = pre_spec(pre);
    if (!spec)
      throw InputError(where + ": tokenizer.ggml.pre '" + pre + "' is not supported: plexus knows " + pre_names() +
                       "; pass the model's tokenizer.json with --tokenizer instead");
    const std::vector<GgufValue>* merges_v = r.array("tokenizer.ggml.merges", GgufValue::Type::kString, Reader::kAnySize);
    if (!merges_v) r.bad("tokenizer.ggml.merges", "is missing (a gpt2 vocabulary needs its merges)");
    Json bpe = Json::object();
    bpe["type"] = "BPE";
    bpe["ignore_merges"] = spec->ignore_merges;
    Json& vocab = bpe["vocab"] = Json::object();
    for (std::size_t i = 0; i < n; ++i)
      if (!tokens[i].empty() && !vocab.contains(tokens[i])) vocab[tokens[i]] = static_cast<std::int32_t>(i);
    Json& merges = bpe["merges"] = Json::array();
    for (const GgufValue& m : *merges_v) merges.push_back(m.s);
    parts->model = std::make_unique<BpeModel>(bpe, true, where + ": tokenizer.ggml");
    Json steps = Json::array();
    for (const std::string& re : spec->regexes)
      steps.push_back({{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}});
    steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}});
    bool byte_level = false;
    parts->pre_tokenizer = make_pre_tokenizer({{"type", "Sequence"}, {"pretokenizers", steps}},
                                              where + ": tokenizer.ggml.pre '" + pre + "'", byte_level);
    parts->decoder = make_decoder({{"type", "ByteLevel"}}, where + ": decoder");
    parts->clean_up_spaces = spec->clean_spaces;
    add_bos = spec->add_bos;
  }
  add_bos = r.boolean("tokenizer.ggml.add_bos_token").value_or(add_bos);
  const bool add_eos = r.boolean("tokenizer.ggml.add_eos_token").value_or(false);
  std::vector<std::int32_t> prefix, suffix;
  if (add_bos && parts->bos) prefix.push_back(*parts->bos);
  if (add_eos && parts->eos) suffix.push_back(*parts->eos);
  if (!prefix.empty() || !suffix.empty()) parts->post_processor = make_affix_processor(std::move(prefix), std::move(suffix));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(parts)));
}

}  // namespace plexus
