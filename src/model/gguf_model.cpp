// GGUF metadata -> ModelConfig (through the same checks as config.json) and GGUF tensor names ->
// Hugging Face names.
#include "model/gguf_model.h"

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "core/json.h"
#include "model/gguf_model_families.h"

namespace plexus {

bool is_gguf_model_path(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && GgufFile::is_gguf(path);
}

namespace {

struct ArchKeys {
  const char* gguf;
  const char* hf;
  const char* model_type;
};
constexpr ArchKeys kArchs[] = {
    {"llama", "LlamaForCausalLM", "llama"},
    {"qwen2", "Qwen2ForCausalLM", "qwen2"},
    {"qwen3", "Qwen3ForCausalLM", "qwen3"},
    {"qwen3moe", "Qwen3MoeForCausalLM", "qwen3_moe"},
    {"gpt-oss", "GptOssForCausalLM", "gpt_oss"},
    {"gemma2", "Gemma2ForCausalLM", "gemma2"},
    {"gemma3", "Gemma3ForCausalLM", "gemma3_text"},
    {"phi3", "Phi3ForCausalLM", "phi3"},
    {"gpt2", "GPT2LMHeadModel", "gpt2"},
};

// Expert counts past any real model's (llama.cpp's own limit is a few hundred).
constexpr std::int64_t kMaxGgufExperts = 1 << 16;

// "blk.N.PART.SUFFIX" split into N, PART and SUFFIX (weight | bias); false for any other name.
bool split_block_name(const std::string& name, std::string* layer, std::string* part, std::string* suffix) {
  if (name.rfind("blk.", 0) != 0) return false;
  const std::size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return false;
  *layer = name.substr(4, dot - 4);
  if (layer->size() > 6 || layer->find_first_not_of("0123456789") != std::string::npos || (layer->size() > 1 && (*layer)[0] == '0'))
    return false;
  const std::size_t last = name.rfind('.');
  if (last <= dot) return false;
  *part = name.substr(dot + 1, last - dot - 1);
  *suffix = name.substr(last + 1);
  return *suffix == "weight" || *suffix == "bias";
}

// The mixture-of-experts keys of a llama (Mixtral), qwen3moe or gpt-oss file, as config.json
// fields in J.
// llama.cpp's semantics: Mixtral's experts are feed_forward_length wide; a qwen3moe expert is
// expert_feed_forward_length wide (feed_forward_length / expert_used_count when absent), every
// qwen3moe layer routes its top-k with the probabilities renormalised (llama.cpp passes
// norm_w = true whatever the checkpoint's norm_topk_prob; plexus honours expert_weights_norm when
// a file has it). llama.cpp has no dense qwen3moe layers; plexus writes one (mlp_only_layers) as
// ffn_gate/ffn_up/ffn_down without ffn_gate_inp, and reads such a layer back as dense. A gpt-oss
// expert is expert_feed_forward_length wide (feed_forward_length when absent).
void gguf_moe_fields(const GgufFile& f, const std::string& arch, Json& j) {
  const std::string& path = f.path();
  const std::string p = arch + ".";
  if (arch != "llama" && arch != "qwen3moe" && arch != "gpt-oss") return;
  const std::int64_t experts = f.get_int(p + "expert_count").value_or(0);
  if (arch == "llama" && experts == 0) return;  // a dense Llama or Mistral
  if (experts <= 0 || experts > kMaxGgufExperts) {
    throw InputError(path + ": " + p + "expert_count is " + (f.find(p + "expert_count") ? std::to_string(experts) : "missing") +
                     "; a mixture of experts needs 1 to " + std::to_string(kMaxGgufExperts) + " experts per layer");
  }
  const std::optional<std::int64_t> used = f.get_int(p + "expert_used_count");
  if (!used || *used <= 0) {
    throw InputError(path + ": " + p + "expert_used_count is " + (used ? std::to_string(*used) : "missing") +
                     "; it must say how many of the " + std::to_string(experts) + " experts a token uses");
  }
  if (*used > experts) {
    throw InputError(path + ": " + p + "expert_used_count (" + std::to_string(*used) + ") is more than " + p + "expert_count (" +
                     std::to_string(experts) + ")");
  }
  j["num_experts_per_tok"] = *used;
  if (arch == "llama") {
    j["architectures"] = Json::array({"MixtralForCausalLM"});
    j["model_type"] = "mixtral";
    j["num_local_experts"] = experts;
    return;
  }
  const std::int64_t dense = f.get_int(p + "feed_forward_length").value_or(0);
  const std::int64_t width = f.get_int(p + "expert_feed_forward_length").value_or(arch == "gpt-oss" ? dense : dense / *used);
  if (width <= 0) {
    throw InputError(path + ": no expert width: " + p + "expert_feed_forward_length is " +
                     (f.find(p + "expert_feed_forward_length") ? std::to_string(width) : "missing") + " and " + p +
                     "feed_forward_length is " + std::to_string(dense));
  }
  if (arch == "gpt-oss") {  // GptOssConfig's names: every layer's experts intermediate_size wide
    j["num_local_experts"] = experts;
    j["intermediate_size"] = width;
    return;
  }
  j["num_experts"] = experts;
  j["moe_intermediate_size"] = width;
  j["intermediate_size"] = dense > 0 ? dense : width;  // every layer sparse: no dense width
  j["norm_topk_prob"] = f.get_bool(p + "expert_weights_norm").value_or(true);
  j["decoder_sparse_step"] = 1;
  Json dense_layers = Json::array();
  const std::int64_t layers = f.require_int(p + "block_count");
  for (std::int64_t l = 0; l < layers && l < (std::int64_t{1} << 20); ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    if (!f.find_tensor(b + "ffn_gate_inp.weight") && f.find_tensor(b + "ffn_gate.weight")) dense_layers.push_back(l);
  }
  j["mlp_only_layers"] = dense_layers;
}

// gpt-oss's attention as llama.cpp reads it, as config.json fields in J: the window
// attention.sliding_window on the layers attention.sliding_window_pattern marks — a period P
// (layer l sliding when l % P < P − 1; llama.cpp's default P = 2: even layers sliding, as
// GptOssConfig's default layer_types), or one bool per layer (plexus writes that for layer_types
// no period gives) — and q/k/v/o biases when the file has blk.0.attn_q.bias.
void gguf_gpt_oss_fields(const GgufFile& f, Json& j) {
  const std::string p = "gpt-oss.";
  j["sliding_window"] = f.require_int(p + "attention.sliding_window");
  const std::int64_t layers = f.require_int(p + "block_count");
  if (layers <= 0 || layers > (std::int64_t{1} << 20)) return;  // parse_model_config says what is wrong
  j["layer_types"] = gguf_sliding_layer_types(f, "gpt-oss", layers, 2);
  j["attention_bias"] = f.find_tensor("blk.0.attn_q.bias") != nullptr;
}

// YaRN rope scaling (rope.scaling.type "yarn") as a config.json rope_scaling object: factor,
// original_context_length (context_length when absent), beta_fast/beta_slow from
// rope.scaling.yarn_beta_fast/_slow (32 and 1 when absent, as llama.cpp always takes them), and
// the attention factor llama.cpp applies: rope.scaling.attn_factor (1 when absent) times
// 0.1·ln(factor) + 1. GGUF has no key for Hugging Face's truncate: the correction range is rounded
// outward (llama.cpp always rounds it) except for gpt-oss, whose config.json says truncate false.
Json gguf_yarn(const GgufFile& f, const std::string& arch, double factor, const std::string& factor_key) {
  const std::string p = arch + ".";
  const std::string& path = f.path();
  factor = check_float_hyper_parameter("factor", factor, path, factor_key);
  Json rs = {{"rope_type", "yarn"}, {"factor", factor}, {"truncate", arch != "gpt-oss"}};
  const std::string orig_key = p + "rope.scaling.original_context_length";
  if (auto orig = f.get_int(orig_key)) {
    rs["original_max_position_embeddings"] = *orig;
  } else if (auto ctx = f.get_int(p + "context_length")) {
    rs["original_max_position_embeddings"] = *ctx;
  }
  for (const auto& [field, key] : {std::pair<const char*, const char*>{"beta_fast", "rope.scaling.yarn_beta_fast"},
                                   {"beta_slow", "rope.scaling.yarn_beta_slow"}}) {
    if (auto v = f.get_float(p + key)) rs[field] = check_float_hyper_parameter(field, *v, path, p + key);
  }
  if (auto a = f.get_float(p + "rope.scaling.attn_factor")) {
    const double m = check_float_hyper_parameter("attention_factor", *a, path, p + "rope.scaling.attn_factor");
    rs["attention_factor"] = factor <= 1 ? m : m * (0.1 * std::log(factor) + 1.0);
  }
  return rs;
}

// The vocabulary's size: the embedding's rows; the token list (or <arch>.vocab_size) when the
// embedding tensor is missing (the checkpoint reports that).
std::int64_t gguf_vocab_size(const GgufFile& f, const std::string& p) {
  if (const GgufTensor* e = f.find_tensor("token_embd.weight"); e && e->dims.size() == 2) return e->dims[1];
  if (auto n = f.array_length("tokenizer.ggml.tokens")) return static_cast<std::int64_t>(*n);
  if (auto v = f.get_int(p + "vocab_size")) return *v;
  throw InputError(f.path() + ": no vocabulary size: no token_embd.weight, tokenizer.ggml.tokens or " + p + "vocab_size");
}

// GPT-2 through parse_gpt2_config; lm_head is output.weight when the file has one (llama.cpp's
// converter writes the embedding again there), the embedding otherwise.
ModelConfig gguf_gpt2_model_config(const GgufFile& f) {
  Json j = gguf_gpt2_config_json(f);
  j["vocab_size"] = gguf_vocab_size(f, "gpt2.");
  if (auto bos = f.get_int("tokenizer.ggml.bos_token_id")) j["bos_token_id"] = *bos;
  if (auto eos = f.get_int("tokenizer.ggml.eos_token_id")) j["eos_token_id"] = *eos;
  ModelConfig c = parse_model_config(j, f.path() + " (GGUF metadata)");
  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f) {
  const std::string& path = f.path();
  const std::string arch = f.require_string("general.architecture");
  const ArchKeys* keys = nullptr;
  for (const ArchKeys& a : kArchs)
    if (arch == a.gguf) keys = &a;
  if (!keys)
    throw InputError(path + ": general.architecture is '" + arch +
                     "'; plexus runs GGUF models of architecture llama (Mixtral too), qwen2, qwen3, qwen3moe, gpt-oss, gemma2, "
                     "gemma3, phi3, gpt2");
  const std::string p = arch + ".";
  if (arch == "gpt2") return gguf_gpt2_model_config(f);

  // The same checks as config.json: build the equivalent and parse it.
  Json j = Json::object();
  j["architectures"] = Json::array({keys->hf});
  j["model_type"] = keys->model_type;
  j["hidden_size"] = f.require_int(p + "embedding_length");
  j["num_hidden_layers"] = f.require_int(p + "block_count");
  j["num_attention_heads"] = f.require_int(p + "attention.head_count");
  if (auto kv = f.get_int(p + "attention.head_count_kv")) j["num_key_value_heads"] = *kv;
  if (auto hd = f.get_int(p + "attention.key_length")) {
    j["head_dim"] = *hd;
    if (auto vd = f.get_int(p + "attention.value_length"); vd && *vd != *hd)
      throw InputError(path + ": " + p + "attention.value_length (" + std::to_string(*vd) + ") differs from key_length (" +
                       std::to_string(*hd) + "); plexus needs them equal");
  }
  if (arch != "qwen3moe" && arch != "gpt-oss") j["intermediate_size"] = f.require_int(p + "feed_forward_length");
  gguf_moe_fields(f, arch, j);
  if (arch == "gpt-oss") gguf_gpt_oss_fields(f, j);
  // The vocabulary is the embedding's rows; the token list (or <arch>.vocab_size) when the
  // embedding tensor is missing (the checkpoint reports that).
  j["vocab_size"] = gguf_vocab_size(f, p);
  if (auto ctx = f.get_int(p + "context_length")) j["max_position_embeddings"] = *ctx;
  // Float values are checked here, under their GGUF keys, by config.json's rules (a NaN epsilon
  // ran with NaN perplexity; a rope base of 0 or NaN ran a different model).
  const auto checked_float = [&](const char* config_key, const std::string& gguf_key) -> std::optional<double> {
    const std::optional<double> v = f.get_float(gguf_key);
    if (v) check_float_hyper_parameter(config_key, *v, path, gguf_key);
    return v;
  };
  const bool gemma = arch == "gemma2" || arch == "gemma3";
  if (auto eps = checked_float("rms_norm_eps", p + "attention.layer_norm_rms_epsilon")) j["rms_norm_eps"] = *eps;
  else if (gemma) f.require_int(p + "attention.layer_norm_rms_epsilon");  // llama.cpp requires it: the message names it
  if (auto theta = checked_float("rope_theta", p + "rope.freq_base")) j["rope_theta"] = *theta;
  j["tie_word_embeddings"] = f.find_tensor("output.weight") == nullptr;
  // Rope scaling as llama.cpp reads it: the type defaults to linear; the factor is
  // rope.scaling.factor, or the older rope.scale_linear; a factor of 0 (or type none) is none.
  // A gpt-oss file without the keys is none too (GptOssConfig's default YaRN is config.json's).
  const std::string type = f.get_string(p + "rope.scaling.type").value_or("linear");
  if (type != "none" && type != "linear" && type != "yarn")
    throw InputError(path + ": " + p + "rope.scaling.type is '" + type + "'; plexus supports none, linear and yarn for GGUF files");
  const std::string factor_key = f.find(p + "rope.scaling.factor") || !f.find(p + "rope.scale_linear") ? p + "rope.scaling.factor"
                                                                                                         : p + "rope.scale_linear";
  const std::optional<double> factor = f.get_float(factor_key);
  if (type == "linear" && factor && *factor != 0) {
    j["rope_scaling"] = {{"type", "linear"}, {"factor", check_float_hyper_parameter("factor", *factor, path, factor_key)}};
  } else if (type == "yarn") {
    if (!factor) throw InputError(path + ": " + p + "rope.scaling.type is 'yarn' but the file has no " + factor_key);
    j["rope_scaling"] = gguf_yarn(f, arch, *factor, factor_key);
  } else if (arch == "gpt-oss") {
    j["rope_scaling"] = Json{{"rope_type", "default"}};
  }
  gguf_family_fields(f, arch, j);
  if (auto bos = f.get_int("tokenizer.ggml.bos_token_id")) j["bos_token_id"] = *bos;
  if (auto eos = f.get_int("tokenizer.ggml.eos_token_id")) j["eos_token_id"] = *eos;

  ModelConfig c = parse_model_config(j, path + " (GGUF metadata)");
  c.norm_weights_hold_one = gemma;  // llama.cpp's converter stores Gemma's norms as (1 + w)
  if (auto rd = f.get_int(p + "rope.dimension_count"); rd && c.arch == Arch::kPhi3 && *rd != c.rotary_dim()) {
    throw InputError(path + ": " + p + "rope.dimension_count is " + std::to_string(*rd) + "; with head_dim " + std::to_string(c.head_dim) +
                     " plexus rotates " + std::to_string(c.rotary_dim()) + " dims (partial_rotary_factor)");
  }
  if (auto rd = f.get_int(p + "rope.dimension_count"); rd && c.arch != Arch::kPhi3 && *rd != c.head_dim)
    throw InputError(path + ": " + p + "rope.dimension_count is " + std::to_string(*rd) + " but head_dim is " +
                     std::to_string(c.head_dim) + "; partial rotary embeddings are not supported");
  c.rope_interleaved = c.arch == Arch::kLlama || c.arch == Arch::kMixtral;  // llama.cpp's converter permutes both
  c.moe.split_experts = c.arch == Arch::kGptOss;  // llama.cpp's gate, up and down stacks, not gate_up_proj
  // llama3-style scaling: the converter stores the per-frequency divisors as a tensor.
  if (const GgufTensor* rf = f.find_tensor("rope_freqs.weight")) {
    if (rf->ggml_type != 0 || rf->dims.size() != 1 || rf->dims[0] != c.head_dim / 2)
      throw InputError(path + ": tensor 'rope_freqs.weight' must be F32 of " + std::to_string(c.head_dim / 2) + " elements (head_dim / 2)");
    const auto* v = static_cast<const float*>(f.data(*rf));
    for (std::int64_t i = 0; i < rf->dims[0]; ++i) {
      float x;
      std::memcpy(&x, v + i, sizeof x);
      if (!(x > 0.0f) || !std::isfinite(x))
        throw InputError(path + ": tensor 'rope_freqs.weight' element " + std::to_string(i) + " is " + std::to_string(x) + "; must be positive");
      c.rope_freq_factors.push_back(x);
    }
  }
  return c;
}

std::span<const GgufNamePair> gguf_top_level_names() {
  static const GgufNamePair kNames[] = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output.weight", "lm_head.weight"},
      {"output_norm.weight", "model.norm.weight"},
  };
  return kNames;
}

std::span<const GgufNamePair> gguf_layer_part_names() {
  static const GgufNamePair kParts[] = {
      {"attn_norm", "input_layernorm"},    {"ffn_norm", "post_attention_layernorm"},
      {"attn_q", "self_attn.q_proj"},      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},      {"attn_output", "self_attn.o_proj"},
      {"attn_q_norm", "self_attn.q_norm"}, {"attn_k_norm", "self_attn.k_norm"},
      {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
  };
  return kParts;
}

std::vector<GgufNamePair> gguf_top_level_names(Arch a) {
  std::vector<GgufNamePair> out;
  if (a == Arch::kGpt2) {
    out = {{"position_embd.weight", "model.embed_tokens.positions"}, {"output_norm.bias", "model.norm.bias"}};
  }
  for (const GgufNamePair& n : gguf_top_level_names()) out.push_back(n);
  return out;
}

std::vector<GgufNamePair> gguf_layer_part_names(Arch a) {
  std::vector<GgufNamePair> out;
  if (a == Arch::kGemma2 || a == Arch::kGemma3) {
    out = {{"post_attention_norm", "post_attention_layernorm"},
           {"ffn_norm", "pre_feedforward_layernorm"},
           {"post_ffw_norm", "post_feedforward_layernorm"}};
  } else if (a == Arch::kPhi3) {
    out = {{"attn_qkv", "self_attn.qkv_proj"}, {"ffn_up", "mlp.gate_up_proj"}};
  }
  for (const GgufNamePair& n : gguf_layer_part_names()) {
    bool taken = false;  // an architecture's own pair for the same GGUF or HF name wins
    for (const GgufNamePair& o : out) taken = taken || std::string_view(o.gguf) == n.gguf || std::string_view(o.hf) == n.hf;
    if (!taken) out.push_back(n);
  }
  return out;
}

std::optional<std::string> hf_name_of_gguf_tensor(const std::string& name) {
  for (const GgufNamePair& n : gguf_top_level_names())
    if (name == n.gguf) return std::string(n.hf);
  std::string layer, part, suffix;
  if (!split_block_name(name, &layer, &part, &suffix)) return std::nullopt;
  for (const GgufNamePair& p : gguf_layer_part_names())
    if (part == p.gguf) return "model.layers." + layer + "." + p.hf + "." + suffix;
  return std::nullopt;
}

std::optional<std::string> hf_name_of_gguf_tensor(const std::string& name, Arch a) {
  for (const GgufNamePair& n : gguf_top_level_names(a))
    if (name == n.gguf) return std::string(n.hf);
  std::string layer, part, suffix;
  if (!split_block_name(name, &layer, &part, &suffix)) return std::nullopt;
  for (const GgufNamePair& p : gguf_layer_part_names(a))
    if (part == p.gguf) return "model.layers." + layer + "." + p.hf + "." + suffix;
  return std::nullopt;
}

std::span<const GgufExpertPart> gguf_expert_parts() {
  static const GgufExpertPart kParts[] = {{"ffn_gate_exps", &MoeNames::gate}, {"ffn_up_exps", &MoeNames::up}, {"ffn_down_exps", &MoeNames::down}};
  return kParts;
}

namespace {

std::string dims_text(const std::vector<std::int64_t>& d) {
  std::string s;
  for (std::int64_t x : d) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

// InputError unless tensor T's ne are WANT, naming T, both and the metadata KEYS WANT comes from.
void check_ne(const GgufTensor& t, const std::vector<std::int64_t>& want, const std::string& keys, const std::string& path) {
  if (t.dims != want) {
    throw InputError(path + ": tensor '" + t.name + "' has ne " + dims_text(t.dims) + " but the metadata gives " + dims_text(want) +
                     " (" + keys + ")");
  }
}

// The numbers a mixture's tensors are checked against, under their GGUF keys ("llama.expert_count 8").
struct MoeKeys {
  std::string experts, width, hidden, heads;
};
MoeKeys moe_keys(const ModelConfig& c) {
  const std::string a = c.arch == Arch::kQwen3Moe ? "qwen3moe." : c.arch == Arch::kGptOss ? "gpt-oss." : "llama.";
  const bool own_width = c.arch != Arch::kMixtral;  // Mixtral's experts are feed_forward_length wide
  return {a + "expert_count " + std::to_string(c.moe.num_experts),
          a + (own_width ? "expert_feed_forward_length " : "feed_forward_length ") + std::to_string(c.moe.expert_intermediate_size),
          a + "embedding_length " + std::to_string(c.hidden_size), a + "attention.head_count " + std::to_string(c.num_heads)};
}

// gpt-oss's tensors that no other architecture has, or names otherwise (blk.N.PART.SUFFIX):
// attn_sinks (ne [n_head]), post_attention_norm, the router's bias ffn_gate_inp.bias ([E]) and the
// experts' ffn_{gate,up}_exps.bias ([Ie, E]) and ffn_down_exps.bias ([H, E]). Empty for others.
std::vector<GgufHfTensor> gpt_oss_tensors(const GgufTensor& t, const ModelConfig& c, const std::string& prefix, const std::string& part,
                                          const std::string& suffix, const std::string& path) {
  const std::int64_t E = c.moe.num_experts, H = c.hidden_size, Ie = c.moe.expert_intermediate_size;
  const MoeKeys k = moe_keys(c);
  const auto hf = [&](const std::string& name, const std::vector<std::int64_t>& want, const std::string& keys) {
    check_ne(t, want, keys, path);
    return std::vector<GgufHfTensor>{{prefix + name, std::vector<std::int64_t>(want.rbegin(), want.rend()), 0, t.bytes}};
  };
  if (suffix == "weight" && part == "attn_sinks") return hf(".self_attn.sinks", {c.num_heads}, k.heads);
  if (suffix == "weight" && part == "post_attention_norm") return hf(".post_attention_layernorm.weight", {H}, k.hidden);
  if (suffix != "bias") return {};
  if (part == "ffn_gate_inp") return hf(".mlp.router.bias", {E}, k.experts);
  if (part == "ffn_gate_exps") return hf(".mlp.experts.gate_proj_bias", {Ie, E}, k.width + ", " + k.experts);
  if (part == "ffn_up_exps") return hf(".mlp.experts.up_proj_bias", {Ie, E}, k.width + ", " + k.experts);
  if (part == "ffn_down_exps") return hf(".mlp.experts.down_proj_bias", {H, E}, k.hidden + ", " + k.experts);
  return {};
}

// GPT-2's fused blk.N.attn_qkv.{weight,bias} (ne [H, 3·H] | [3·H]): q, k and v are its row
// thirds, viewed in place as self_attn.{q,k,v}_proj (whole rows: any block format too).
std::vector<GgufHfTensor> gpt2_qkv_tensors(const GgufTensor& t, const ModelConfig& c, const std::string& layer, const std::string& suffix,
                                           const std::string& path) {
  const std::int64_t H = c.hidden_size;
  check_ne(t, suffix == "weight" ? std::vector<std::int64_t>{H, 3 * H} : std::vector<std::int64_t>{3 * H},
           "gpt2.embedding_length " + std::to_string(H) + ": q, k and v of " + std::to_string(H) + " rows each", path);
  const std::uint64_t each = t.bytes / 3;
  std::vector<GgufHfTensor> out;
  const char* parts[] = {"q_proj", "k_proj", "v_proj"};
  for (int i = 0; i < 3; ++i) {
    std::vector<std::int64_t> shape = suffix == "weight" ? std::vector<std::int64_t>{H, H} : std::vector<std::int64_t>{H};
    out.push_back({"model.layers." + layer + ".self_attn." + parts[i] + "." + suffix, shape, static_cast<std::uint64_t>(i) * each, each});
  }
  return out;
}

// The Hugging Face part (gate | up | down) and expert of older converters' per-expert Mixtral
// tensors, blk.N.ffn_{gate,up,down}.E.weight (llama.cpp's LLM_TENSOR_FFN_*_EXP); null otherwise.
const char* MoeNames::*legacy_expert(const std::string& part, std::int64_t* expert) {
  for (const auto& [name, hf] : {std::pair<const char*, const char* MoeNames::*>{"ffn_gate.", &MoeNames::gate},
                                 {"ffn_up.", &MoeNames::up}, {"ffn_down.", &MoeNames::down}}) {
    const std::string_view p(name);
    if (part.rfind(p, 0) != 0) continue;
    const std::string index = part.substr(p.size());
    if (index.empty() || index.size() > 6 || index.find_first_not_of("0123456789") != std::string::npos ||
        (index.size() > 1 && index[0] == '0'))
      return nullptr;
    *expert = std::stoll(index);
    return hf;
  }
  return nullptr;
}

}  // namespace

std::vector<GgufHfTensor> gguf_hf_tensors(const GgufTensor& t, const ModelConfig& c, const std::string& path) {
  std::string layer, part, suffix;
  const bool in_block = split_block_name(t.name, &layer, &part, &suffix);
  if (c.arch == Arch::kGpt2 && in_block && part == "attn_qkv") return gpt2_qkv_tensors(t, c, layer, suffix, path);
  if (c.arch == Arch::kGemma2 || c.arch == Arch::kGemma3 || c.arch == Arch::kPhi3 || c.arch == Arch::kGpt2) {
    const std::optional<std::string> hf = hf_name_of_gguf_tensor(t.name, c.arch);
    if (!hf) return {};
    return {{*hf, std::vector<std::int64_t>(t.dims.rbegin(), t.dims.rend()), 0, t.bytes}};
  }
  if (!in_block || !c.is_moe()) {
    const std::optional<std::string> hf = hf_name_of_gguf_tensor(t.name);
    if (!hf) return {};
    return {{*hf, std::vector<std::int64_t>(t.dims.rbegin(), t.dims.rend()), 0, t.bytes}};
  }
  const std::string prefix = ModuleTree::layer_prefix(std::stoi(layer));
  if (c.arch == Arch::kGptOss) {
    std::vector<GgufHfTensor> own = gpt_oss_tensors(t, c, prefix, part, suffix, path);
    if (!own.empty()) return own;
  }
  const bool router = suffix == "weight" && part == "ffn_gate_inp";
  const GgufExpertPart* stacked = nullptr;
  if (!router && suffix == "weight") {
    for (const GgufExpertPart& e : gguf_expert_parts())
      if (part == e.gguf) stacked = &e;
  }
  std::int64_t expert = -1;
  const char* MoeNames::*legacy = suffix == "weight" && c.arch == Arch::kMixtral ? legacy_expert(part, &expert) : nullptr;
  if (!router && !stacked && !legacy) {
    const std::optional<std::string> hf = hf_name_of_gguf_tensor(t.name);
    if (!hf) return {};
    return {{*hf, std::vector<std::int64_t>(t.dims.rbegin(), t.dims.rend()), 0, t.bytes}};
  }
  const std::int64_t E = c.moe.num_experts, H = c.hidden_size, Ie = c.moe.expert_intermediate_size;
  const MoeKeys k = moe_keys(c);
  const MoeNames names = moe_names(c.arch);
  if (router) {
    check_ne(t, {H, E}, k.hidden + ", " + k.experts, path);
    return {{prefix + names.router + ".weight", {E, H}, 0, t.bytes}};
  }
  const bool down = (stacked ? stacked->hf : legacy) == &MoeNames::down;
  const std::vector<std::int64_t> matrix = down ? std::vector<std::int64_t>{Ie, H} : std::vector<std::int64_t>{H, Ie};  // ne of one expert
  if (legacy) {
    // One expert's matrix, a tensor of its own.
    if (expert >= E) {
      throw InputError(path + ": tensor '" + t.name + "' is expert " + std::to_string(expert) + " but " + k.experts +
                       " (experts 0.." + std::to_string(E - 1) + ")");
    }
    check_ne(t, matrix, k.hidden + ", " + k.width, path);
    return {{prefix + names.experts + std::to_string(expert) + "." + names.*legacy + ".weight", {matrix[1], matrix[0]}, 0, t.bytes}};
  }
  if (t.dims.size() != 3 || t.dims[2] != E) {
    throw InputError(path + ": tensor '" + t.name + "' holds " + (t.dims.size() == 3 ? std::to_string(t.dims[2]) : "no stack of") +
                     " experts (ne " + dims_text(t.dims) + ") but " + k.experts);
  }
  check_ne(t, {matrix[0], matrix[1], E}, k.hidden + ", " + k.width + ", " + k.experts, path);
  // Each expert is whole rows (GgufFile checked that a row is whole blocks): E equal slices.
  const std::uint64_t each = t.bytes / static_cast<std::uint64_t>(E);
  std::vector<GgufHfTensor> out;
  for (std::int64_t e = 0; e < E; ++e) {
    out.push_back({prefix + names.experts + std::to_string(e) + "." + names.*stacked->hf + ".weight", {matrix[1], matrix[0]},
                   static_cast<std::uint64_t>(e) * each, each});
  }
  return out;
}

}  // namespace plexus
