// HF checkpoint → GGUF (see gguf_export.h): metadata from config.json and the tokenizer files,
// tensors renamed and re-laid out as llama.cpp's converter lays them out, weight matrices
// quantised (the mix's type for each) row by row on a thread pool while the writer streams the file.
#include "model/gguf_export.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>

#include "core/error.h"
#include "core/gguf_file.h"
#include "core/thread_pool.h"
#include "kernels/quantize.h"
#include "model/checkpoint.h"
#include "model/config_gemma.h"
#include "model/gguf_model.h"
#include "model/gguf_model_families.h"
#include "model/module_tree.h"
#include "model/quant_policy.h"
#include "tokenizer/gguf_vocab_export.h"

namespace plexus {
namespace {

// A row of `t` (f32 | bf16 | f16) as f32.
void row_to_f32(DType t, const void* src, float* dst, std::int64_t n) {
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, static_cast<std::size_t>(n) * 4); return;
    case DType::kBF16: {
      const auto* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::kF16: {
      const auto* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    default: break;  // a block format
  }
  throw InputError("a checkpoint tensor in block format " + std::string(dtype_name(t)) + " cannot be re-quantised");
}

// n elements of `t` (f32 | bf16 | f16), element k at index first + k·stride of src, as f32.
void strided_to_f32(DType t, const void* src, std::int64_t first, std::int64_t stride, float* dst, std::int64_t n) {
  const std::size_t size = dtype_size(t);
  const auto* base = static_cast<const std::uint8_t*>(src);
  for (std::int64_t k = 0; k < n; ++k) row_to_f32(t, base + static_cast<std::size_t>(first + k * stride) * size, dst + k, 1);
}

// The HF row that lands at row `r` when llama.cpp's converter permutes q/k for its rope: within
// each head of `head_dim` rows, HF row j of the first half goes to 2j, row j of the second half
// to 2j + 1.
std::int64_t permuted_source_row(std::int64_t r, std::int64_t head_dim) {
  const std::int64_t head = r / head_dim, within = r % head_dim;
  return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

// llama.cpp takes the vocabulary's size from tokenizer.ggml.tokens and wants token_embd to have
// as many rows: a checkpoint whose embedding is padded past the tokenizer gets "[PAD<id>]"
// tokens of type unused (5) with score 0 up to config.vocab_size.
void pad_vocab(std::vector<std::pair<std::string, GgufValue>>& tok, std::int64_t vocab_size, const std::string& model_dir,
               std::vector<std::string>* warnings) {
  GgufValue* tokens = nullptr;
  for (auto& [k, v] : tok) {
    if (k == "tokenizer.ggml.tokens") tokens = &v;
  }
  if (tokens == nullptr) return;
  const auto n = static_cast<std::int64_t>(tokens->arr.size());
  if (n > vocab_size) {
    warnings->push_back("'" + model_dir + "': the tokenizer has " + std::to_string(n) + " tokens but the model's vocab_size is " +
                        std::to_string(vocab_size) + ": llama.cpp will refuse the file (plexus runs it)");
    return;
  }
  for (auto& [k, v] : tok) {
    if (k == "tokenizer.ggml.tokens") {
      for (std::int64_t id = n; id < vocab_size; ++id) v.arr.push_back(gguf_string("[PAD" + std::to_string(id) + "]"));
    } else if (k == "tokenizer.ggml.scores") {
      while (static_cast<std::int64_t>(v.arr.size()) < vocab_size) v.arr.push_back(gguf_f32(0.0f));
    } else if (k == "tokenizer.ggml.token_type") {
      while (static_cast<std::int64_t>(v.arr.size()) < vocab_size) v.arr.push_back(gguf_int(GgufType::kI32, 5));
    }
  }
}

// general.file_type of a file whose matrices are all in float type T (llama.cpp's LLAMA_FTYPE_*).
std::uint32_t float_file_type(DType t) {
  switch (t) {
    case DType::kF32: return 0;   // ALL_F32
    case DType::kF16: return 1;   // MOSTLY_F16
    case DType::kBF16: return 32;  // MOSTLY_BF16
    default: break;
  }
  throw InputError("GGUF export: " + std::string(dtype_name(t)) + " is not a float type (F32, F16 or BF16)");
}

// A GGUF tensor of gpt-oss made from one of Hugging Face's fused expert tensors, as llama.cpp's
// converter makes it: gate_up_proj (E, H, 2·Ie, gate = columns 0::2, up = 1::2) → ffn_gate_exps
// and ffn_up_exps (E, Ie, H); down_proj (E, Ie, H) → ffn_down_exps (E, H, Ie); gate_up_proj_bias
// (E, 2·Ie) → ffn_gate_exps.bias and ffn_up_exps.bias (E, Ie). Row r of the result gathers
// `cols` elements of the source from index first(r) by stride.
struct FusedPart {
  enum Kind { kGate, kUp, kDown, kGateBias, kUpBias } kind;
  std::int64_t E, H, Ie;
  std::vector<std::int64_t> shape() const {  // outermost first
    switch (kind) {
      case kGate:
      case kUp: return {E, Ie, H};
      case kDown: return {E, H, Ie};
      default: return {E, Ie};
    }
  }
  std::int64_t cols() const { return shape().back(); }
  std::int64_t stride() const { return kind == kDown ? H : kind == kGate || kind == kUp ? 2 * Ie : 2; }
  std::int64_t first(std::int64_t r) const {
    switch (kind) {
      case kGate:
      case kUp: return (r / Ie) * H * 2 * Ie + 2 * (r % Ie) + (kind == kUp ? 1 : 0);
      case kDown: return (r / H) * Ie * H + r % H;
      default: return r * 2 * Ie + (kind == kUpBias ? 1 : 0);
    }
  }
};

// gpt-oss's Hugging Face names → (GGUF name, the fused part it is, if one) for layer l: the
// sinks, post-attention norm, router and experts, which llama.cpp names otherwise than Llama's.
std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::optional<FusedPart>>>>> gpt_oss_gguf_names(const ModelConfig& c,
                                                                                                                     int l) {
  const std::string hf = ModuleTree::layer_prefix(l), g = "blk." + std::to_string(l) + ".";
  const std::int64_t E = c.moe.num_experts, H = c.hidden_size, Ie = c.moe.expert_intermediate_size;
  const auto part = [&](FusedPart::Kind k) { return std::optional<FusedPart>(FusedPart{k, E, H, Ie}); };
  const std::optional<FusedPart> whole;
  return {
      {hf + ".self_attn.sinks", {{g + "attn_sinks.weight", whole}}},
      {hf + ".post_attention_layernorm.weight", {{g + "post_attention_norm.weight", whole}}},
      {hf + ".mlp.router.weight", {{g + "ffn_gate_inp.weight", whole}}},
      {hf + ".mlp.router.bias", {{g + "ffn_gate_inp.bias", whole}}},
      {hf + ".mlp.experts.gate_up_proj", {{g + "ffn_gate_exps.weight", part(FusedPart::kGate)}, {g + "ffn_up_exps.weight", part(FusedPart::kUp)}}},
      {hf + ".mlp.experts.gate_up_proj_bias",
       {{g + "ffn_gate_exps.bias", part(FusedPart::kGateBias)}, {g + "ffn_up_exps.bias", part(FusedPart::kUpBias)}}},
      {hf + ".mlp.experts.down_proj", {{g + "ffn_down_exps.weight", part(FusedPart::kDown)}}},
      {hf + ".mlp.experts.down_proj_bias", {{g + "ffn_down_exps.bias", whole}}},
      // A gpt-oss GGUF file as the source (MoeConfig::split_experts): the biases already apart.
      {hf + ".mlp.experts.gate_proj_bias", {{g + "ffn_gate_exps.bias", whole}}},
      {hf + ".mlp.experts.up_proj_bias", {{g + "ffn_up_exps.bias", whole}}},
  };
}

// Which layers slide, as llama.cpp's ARCH reads it: its default period `llama_period` (layer l
// sliding when l % P < P − 1; gpt-oss and gemma2: 2, gemma3: 6) writes no key; another period,
// or one bool per layer where no period gives the layers, goes in
// ARCH.attention.sliding_window_pattern, which plexus reads; llama.cpp reads a period there
// (`reads_period`: gpt-oss, gemma2, gemma3), never the bools: a warning where it does not.
void add_sliding_pattern_keys(GgufWriter& w, const ModelConfig& c, const std::string& arch, std::int64_t llama_period,
                              bool reads_period, const std::string& model_dir, std::vector<std::string>* warnings) {
  const auto sliding = [&c](std::int64_t l) { return c.sliding_layers.empty() || c.sliding_layers[static_cast<std::size_t>(l)]; };
  const auto period_gives = [&](std::int64_t p) {
    for (std::int64_t l = 0; l < c.num_layers; ++l)
      if (sliding(l) != (p == 0 || l % p < p - 1)) return false;
    return true;
  };
  if (period_gives(llama_period)) return;
  const std::string key = arch + ".attention.sliding_window_pattern";
  const std::string note = "'" + model_dir + "': the model's sliding layers follow no period llama.cpp's " + arch +
                           " reads; written in " + key + ", which llama.cpp's " + arch + " does not read (plexus does)";
  for (std::int64_t p = 0; p <= c.num_layers; ++p) {
    if (!period_gives(p)) continue;
    w.add(key, gguf_u32(static_cast<std::uint32_t>(p)));
    if (!reads_period) warnings->push_back(note);
    return;
  }
  GgufValue v;
  v.type = GgufValue::Type::kArray;
  v.gguf_type = static_cast<std::uint32_t>(GgufType::kArray);
  v.elem_type = static_cast<std::uint32_t>(GgufType::kBool);
  for (std::int64_t l = 0; l < c.num_layers; ++l) v.arr.push_back(gguf_bool(sliding(l)));
  w.add(key, std::move(v));
  warnings->push_back(note);
}

// gpt-oss's attention keys: the window, and which layers have it.
void add_gpt_oss_keys(GgufWriter& w, const ModelConfig& c, const std::string& model_dir, std::vector<std::string>* warnings) {
  w.add("gpt-oss.attention.sliding_window", gguf_u32(static_cast<std::uint32_t>(c.sliding_window)));
  add_sliding_pattern_keys(w, c, "gpt-oss", 2, true, model_dir, warnings);
}

// Gemma 2/3's keys as llama.cpp's converter writes them (the window, gemma2's soft-caps), and
// where the model is not what llama.cpp assumes when a key is absent: rope.freq_base_swa
// (gemma3's local base; default 10000) and attention.sliding_window_pattern (a period; default
// gemma2 2, gemma3 6), which llama.cpp reads, and attention.scale (1/sqrt(query_pre_attn_scalar)
// where llama.cpp's derivation from the model's size would not give it), which only plexus reads:
// a warning says so.
void add_gemma_keys(GgufWriter& w, const ModelConfig& c, const std::string& arch, const std::string& model_dir,
                    std::vector<std::string>* warnings) {
  const std::string p = arch + ".";
  w.add(p + "attention.sliding_window", gguf_u32(static_cast<std::uint32_t>(c.sliding_window)));
  if (c.attn_logit_softcap > 0) {
    w.add(p + "attn_logit_softcapping", gguf_f32(static_cast<float>(c.attn_logit_softcap)));
    if (c.arch == Arch::kGemma3)
      warnings->push_back("'" + model_dir + "': attn_logit_softcapping on Gemma 3: llama.cpp's gemma3 does not cap attention scores (plexus does)");
  }
  if (c.final_logit_softcap > 0) w.add(p + "final_logit_softcapping", gguf_f32(static_cast<float>(c.final_logit_softcap)));
  const std::int64_t derived = gguf_gemma_query_scalar(c.arch, c.num_layers, c.hidden_size, c.num_heads, c.head_dim);
  if (c.query_pre_attn_scalar != static_cast<double>(derived)) {
    w.add(p + "attention.scale", gguf_f32(static_cast<float>(1.0 / std::sqrt(c.query_pre_attn_scalar))));
    warnings->push_back("'" + model_dir + "': query_pre_attn_scalar " + std::to_string(c.query_pre_attn_scalar) + " is not the " +
                        std::to_string(derived) + " llama.cpp derives for this " + arch +
                        " model; written as " + p + "attention.scale, which llama.cpp's " + arch + " does not read (plexus does)");
  }
  if (c.arch == Arch::kGemma3 && c.rope_local_theta != kGgufGemma3LocalRopeBase)
    w.add(p + "rope.freq_base_swa", gguf_f32(static_cast<float>(c.rope_local_theta)));
  add_sliding_pattern_keys(w, c, arch, c.arch == Arch::kGemma2 ? 2 : 6, true, model_dir, warnings);
}

// Phi-3's keys beside the common ones (rope.dimension_count is the rotated dims): the window
// (0 for none, as the converter writes it), and LongRoPE's original context and attention factor
// (its factors are the rope_factors_long/short.weight tensors).
void add_phi3_keys(GgufWriter& w, const ModelConfig& c) {
  w.add("phi3.attention.sliding_window", gguf_u32(static_cast<std::uint32_t>(c.sliding_window)));
  if (c.rope_scaling != RopeScaling::kLongRope) return;
  w.add("phi3.rope.scaling.original_context_length", gguf_u32(static_cast<std::uint32_t>(c.rope_original_max_position)));
  w.add("phi3.rope.scaling.attn_factor", gguf_f32(static_cast<float>(c.rope_attention_factor)));
}

// The mixture-of-experts keys llama.cpp reads (llama: Mixtral; qwen3moe), and warnings where
// llama.cpp would run the file otherwise than plexus: it renormalises qwen3moe's top-k always,
// and wants experts in every qwen3moe layer (dense layers go as ffn_gate/up/down without a router).
void add_moe_keys(GgufWriter& w, const ModelConfig& c, const std::string& arch, const std::string& model_dir,
                  std::vector<std::string>* warnings) {
  const std::string p = arch + ".";
  w.add(p + "expert_count", gguf_u32(static_cast<std::uint32_t>(c.moe.num_experts)));
  w.add(p + "expert_used_count", gguf_u32(static_cast<std::uint32_t>(c.moe.experts_per_token)));
  if (c.arch == Arch::kMixtral) return;  // Mixtral's experts are feed_forward_length wide
  w.add(p + "expert_feed_forward_length", gguf_u32(static_cast<std::uint32_t>(c.moe.expert_intermediate_size)));
  if (c.arch == Arch::kGptOss) return;
  if (!c.moe.normalize_top_k) {
    w.add(p + "expert_weights_norm", gguf_bool(false));
    warnings->push_back("'" + model_dir + "': norm_topk_prob is false; llama.cpp renormalises qwen3moe's top-k expert weights "
                        "regardless and will score this model differently (plexus reads qwen3moe.expert_weights_norm)");
  }
  std::string dense;
  for (std::int64_t l = 0; l < c.num_layers; ++l)
    if (!c.moe_layer(l)) dense += (dense.empty() ? "" : ", ") + std::to_string(l);
  if (!dense.empty()) {
    warnings->push_back("'" + model_dir + "': layers with a dense MLP (decoder_sparse_step / mlp_only_layers): " + dense +
                        "; llama.cpp's qwen3moe wants experts in every layer and will refuse the file (plexus runs it)");
  }
}

// HF name -> GGUF name of every router (blk.N.ffn_gate_inp.weight) and expert matrix
// (blk.N.ffn_{gate,up,down}_exps.weight, the stack it goes into) the config's MoE layers have.
std::map<std::string, std::string> moe_gguf_names(const ModelConfig& c) {
  std::map<std::string, std::string> out;
  if (!c.is_moe() || (c.arch == Arch::kGptOss && !c.moe.split_experts)) return out;
  const MoeNames n = moe_names(c.arch);
  for (std::int64_t l = 0; l < c.num_layers; ++l) {
    if (!c.moe_layer(l)) continue;
    const std::string hf = ModuleTree::layer_prefix(static_cast<int>(l)), g = "blk." + std::to_string(l) + ".";
    out[hf + n.router + ".weight"] = g + "ffn_gate_inp.weight";
    for (const GgufExpertPart& part : gguf_expert_parts()) {
      for (std::int64_t e = 0; e < c.moe.num_experts; ++e)
        out[hf + n.experts + std::to_string(e) + "." + n.*part.hf + ".weight"] = g + part.gguf + ".weight";
    }
  }
  return out;
}

// The data of the E expert matrices stack G (blk.N.ffn_*_exps.weight) is made of, expert 0
// first; each must be in the checkpoint, of the config's shape and of expert 0's dtype.
std::vector<const void*> expert_data(const Checkpoint& ckpt, const ModelConfig& c, const std::string& g, const std::string& model_dir) {
  const std::int64_t H = c.hidden_size, Ie = c.moe.expert_intermediate_size;
  const MoeNames n = moe_names(c.arch);
  const std::string prefix = ModuleTree::layer_prefix(std::stoi(g.substr(4)));
  const GgufExpertPart* part = nullptr;
  for (const GgufExpertPart& p : gguf_expert_parts())
    if (g.find("." + std::string(p.gguf) + ".") != std::string::npos) part = &p;
  const std::vector<std::int64_t> want = part->hf == &MoeNames::down ? std::vector<std::int64_t>{H, Ie} : std::vector<std::int64_t>{Ie, H};
  std::vector<const void*> out;
  std::optional<DType> dtype;
  for (std::int64_t e = 0; e < c.moe.num_experts; ++e) {
    const std::string hf = prefix + n.experts + std::to_string(e) + "." + n.*part->hf + ".weight";
    const TensorRef r = ckpt.get(hf);  // InputError naming it when missing
    if (!dtype) dtype = r.info->dtype;
    if (r.info->shape != want || r.info->dtype != *dtype) {
      std::string got;
      for (std::int64_t d : r.info->shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
      throw InputError("'" + model_dir + "': tensor '" + hf + "' is " + r.info->dtype_name + " [" + got + "]; the experts of '" + g +
                       "' must all be [" + std::to_string(want[0]) + ", " + std::to_string(want[1]) +
                       "] (hidden_size, expert width) of one dtype");
    }
    out.push_back(r.data);
  }
  return out;
}

std::string dir_name(const std::string& dir) {
  std::filesystem::path p(dir);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

std::string gguf_tensor_name(const std::string& hf) { return gguf_tensor_name(hf, Arch::kLlama); }

std::string gguf_tensor_name(const std::string& hf, Arch a) {
  for (const GgufNamePair& n : gguf_top_level_names(a))
    if (hf == n.hf) return n.gguf;
  static const std::regex kLayer(R"(model\.layers\.(\d+)\.(.+)\.(weight|bias))");
  std::smatch m;
  if (!std::regex_match(hf, m, kLayer)) return {};
  // GPT-2's q, k and v go into one fused attn_qkv (export_gguf gathers them).
  if (a == Arch::kGpt2 && (m[2] == "self_attn.q_proj" || m[2] == "self_attn.k_proj" || m[2] == "self_attn.v_proj"))
    return "blk." + m[1].str() + ".attn_qkv." + m[3].str();
  for (const GgufNamePair& p : gguf_layer_part_names(a)) {
    if (m[2] == p.hf) return "blk." + m[1].str() + "." + p.gguf + "." + m[3].str();
  }
  return {};
}

std::string gguf_arch_name(Arch a) {
  switch (a) {
    case Arch::kLlama:
    case Arch::kMistral: return "llama";
    case Arch::kQwen2: return "qwen2";
    case Arch::kQwen3: return "qwen3";
    case Arch::kMixtral: return "llama";  // llama.cpp runs Mixtral as llama with experts
    case Arch::kQwen3Moe: return "qwen3moe";
    case Arch::kGptOss: return "gpt-oss";
    case Arch::kPhi3: return "phi3";
    case Arch::kGemma2: return "gemma2";
    case Arch::kGemma3: return "gemma3";
    case Arch::kGpt2: return "gpt2";
  }
  return "llama";
}

std::vector<float> llama3_rope_freq_factors(const ModelConfig& c) {
  const double low_wavelen = static_cast<double>(c.rope_original_max_position) / c.rope_low_freq_factor;
  const double high_wavelen = static_cast<double>(c.rope_original_max_position) / c.rope_high_freq_factor;
  std::vector<float> out;
  for (std::int64_t i = 0; i < c.head_dim; i += 2) {
    const double freq = 1.0 / std::pow(c.rope_theta, static_cast<double>(i) / static_cast<double>(c.head_dim));
    const double wavelen = 2 * M_PI / freq;
    double factor = 1.0;
    if (wavelen > low_wavelen) {
      factor = c.rope_factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (static_cast<double>(c.rope_original_max_position) / wavelen - c.rope_low_freq_factor) /
                            (c.rope_high_freq_factor - c.rope_low_freq_factor);
      factor = 1.0 / ((1 - smooth) / c.rope_factor + smooth);
    }
    out.push_back(static_cast<float>(factor));
  }
  return out;
}

namespace {

// The data of GPT-2's q, k and v weights (or biases) that attn_qkv fuses, given q's name: each of
// q's shape and dtype (the checkpoint's own layout, checked by ModuleTree).
std::vector<const void*> gpt2_qkv_data(const Checkpoint& ckpt, const std::string& q_name, const TensorInfo& q,
                                       const std::string& model_dir) {
  std::vector<const void*> out;
  for (const char* part : {".q_proj.", ".k_proj.", ".v_proj."}) {
    std::string name = q_name;
    name.replace(name.find(".q_proj."), 8, part);
    const TensorRef r = ckpt.get(name);
    if (r.info->dtype != q.dtype || r.info->shape != q.shape || r.in_out_ld != ckpt.get(q_name).in_out_ld) {
      throw InputError("'" + model_dir + "': tensor '" + name + "' differs from '" + q_name + "' in dtype, shape or layout; attn_qkv fuses them");
    }
    out.push_back(r.data);
  }
  return out;
}

}  // namespace

GgufExportResult export_gguf(const std::string& model_dir, const std::string& out, const GgufExportOptions& o) {
  require_model_path(model_dir);
  const ModelConfig c = load_model_config(model_dir);
  // What GGUF has no key for: readers take llama.cpp's swiglu_oai constants, and YaRN's rounded
  // correction range except for gpt-oss (whose config.json says truncate false; gguf_model.cpp).
  if (c.arch == Arch::kGptOss && (c.moe.swiglu_alpha != 1.702 || c.moe.swiglu_limit != 7.0)) {
    throw InputError(model_dir + ": swiglu_alpha " + std::to_string(c.moe.swiglu_alpha) + " and swiglu_limit " +
                     std::to_string(c.moe.swiglu_limit) + " cannot be written to GGUF: it has no key for them, and readers "
                     "(llama.cpp, plexus) take 1.702 and 7.0");
  }
  if (c.rope_scaling == RopeScaling::kYarn && c.rope_truncate != (c.arch != Arch::kGptOss)) {
    throw InputError(model_dir + ": rope_scaling.truncate " + (c.rope_truncate ? "true" : "false") +
                     " cannot be written to GGUF: it has no key for it, and plexus reads YaRN files " +
                     (c.arch == Arch::kGptOss ? "of gpt-oss with truncate false" : "with truncate true (as llama.cpp runs them)"));
  }
  const Checkpoint ckpt(model_dir);
  ModuleTree::from_checkpoint(c, ckpt);  // every tensor config.json implies, of its shape, and no other: as a run checks
  const std::string arch = gguf_arch_name(c.arch);
  GgufExportResult result;

  GgufWriter w(32);
  w.add("general.architecture", gguf_string(arch));
  w.add("general.name", gguf_string(o.name.empty() ? dir_name(model_dir) : o.name));
  w.add("general.alignment", gguf_u32(32));
  w.add("general.file_type", gguf_u32(o.float_type ? float_file_type(*o.float_type) : quant_mix_info(o.mix).ftype));
  w.add("general.quantization_version", gguf_u32(2));
  const auto key = [&](const std::string& k) { return arch + "." + k; };
  w.add(key("context_length"), gguf_u32(static_cast<std::uint32_t>(c.max_position_embeddings)));
  w.add(key("embedding_length"), gguf_u32(static_cast<std::uint32_t>(c.hidden_size)));
  w.add(key("block_count"), gguf_u32(static_cast<std::uint32_t>(c.num_layers)));
  w.add(key("feed_forward_length"), gguf_u32(static_cast<std::uint32_t>(c.intermediate_size)));
  w.add(key("attention.head_count"), gguf_u32(static_cast<std::uint32_t>(c.num_heads)));
  if (c.arch == Arch::kGpt2) {  // LayerNorm, learned positions: no rope, no separate kv heads
    w.add(key("attention.layer_norm_epsilon"), gguf_f32(static_cast<float>(c.rms_norm_eps)));
  } else {
    w.add(key("attention.head_count_kv"), gguf_u32(static_cast<std::uint32_t>(c.num_kv_heads)));
    w.add(key("attention.key_length"), gguf_u32(static_cast<std::uint32_t>(c.head_dim)));
    w.add(key("attention.value_length"), gguf_u32(static_cast<std::uint32_t>(c.head_dim)));
    w.add(key("attention.layer_norm_rms_epsilon"), gguf_f32(static_cast<float>(c.rms_norm_eps)));
    w.add(key("rope.freq_base"), gguf_f32(static_cast<float>(c.rope_theta)));
    w.add(key("rope.dimension_count"), gguf_u32(static_cast<std::uint32_t>(c.rotary_dim())));  // Phi-3: the rotated dims
  }
  if (is_gemma_arch(c.arch)) add_gemma_keys(w, c, arch, model_dir, &result.warnings);
  if (c.arch == Arch::kPhi3) add_phi3_keys(w, c);
  switch (c.rope_scaling) {
    case RopeScaling::kNone: break;
    case RopeScaling::kLinear:
      w.add(key("rope.scaling.type"), gguf_string("linear"));
      w.add(key("rope.scaling.factor"), gguf_f32(static_cast<float>(c.rope_factor)));
      break;
    case RopeScaling::kLlama3: break;  // the rope_freqs.weight tensor below
    case RopeScaling::kLongRope: break;  // Phi-3: add_phi3_keys and the rope_factors_* tensors
    case RopeScaling::kYarn: {
      // llama.cpp multiplies cos and sin by rope.scaling.attn_factor × (0.1·ln(factor) + 1) and
      // takes beta_fast 32, beta_slow 1 whatever the keys (plexus reads them; gguf_model.cpp).
      w.add(key("rope.scaling.type"), gguf_string("yarn"));
      w.add(key("rope.scaling.factor"), gguf_f32(static_cast<float>(c.rope_factor)));
      w.add(key("rope.scaling.original_context_length"), gguf_u32(static_cast<std::uint32_t>(c.rope_original_max_position)));
      w.add(key("rope.scaling.yarn_beta_fast"), gguf_f32(static_cast<float>(c.rope_beta_fast)));
      w.add(key("rope.scaling.yarn_beta_slow"), gguf_f32(static_cast<float>(c.rope_beta_slow)));
      const double mscale = c.rope_factor <= 1 ? 1.0 : 0.1 * std::log(c.rope_factor) + 1.0;
      if (c.rope_attention_factor != mscale) {
        w.add(key("rope.scaling.attn_factor"), gguf_f32(static_cast<float>(c.rope_attention_factor / mscale)));
      }
      if (c.rope_beta_fast != 32 || c.rope_beta_slow != 1) {
        result.warnings.push_back("'" + model_dir + "': YaRN beta_fast/beta_slow are not 32/1; llama.cpp ignores the "
                                  "rope.scaling.yarn_beta_* keys and will rotate this model differently (plexus reads them)");
      }
      break;
    }
  }
  w.add(key("vocab_size"), gguf_u32(static_cast<std::uint32_t>(c.vocab_size)));
  if (c.is_moe()) add_moe_keys(w, c, arch, model_dir, &result.warnings);
  if (c.arch == Arch::kGptOss) add_gpt_oss_keys(w, c, model_dir, &result.warnings);
  std::vector<std::pair<std::string, GgufValue>> tok = gguf_tokenizer_metadata(model_dir);
  if (tok.empty()) {
    result.warnings.push_back("'" + model_dir + "' has no tokenizer.json: the file has no tokenizer.ggml.* keys, and llama.cpp "
                              "needs that vocabulary to load it (plexus runs it with --ids)");
  } else {
    pad_vocab(tok, c.vocab_size, model_dir, &result.warnings);
    for (auto& [k, v] : tok) w.add(k, std::move(v));
    result.tokenizer = true;
  }

  // The tensors in llama.cpp's order: token_embd, rope_freqs, blocks, output_norm, output.
  const std::map<std::string, std::string> moe = moe_gguf_names(c);
  std::map<std::string, std::vector<std::pair<std::string, std::optional<FusedPart>>>> gpt_oss;  // hf -> its GGUF tensors
  if (c.arch == Arch::kGptOss) {
    for (int l = 0; l < c.num_layers; ++l)
      for (auto& [hf, to] : gpt_oss_gguf_names(c, l)) gpt_oss[hf] = std::move(to);
  }
  std::map<std::string, FusedPart> fused;  // gguf name -> the fused part it gathers
  std::vector<std::pair<std::string, std::string>> order;  // (gguf name, hf name: for a stack of experts, one of them)
  std::map<std::string, std::string> by_gguf;
  for (const std::string& n : ckpt.names()) {
    if (const auto o = gpt_oss.find(n); o != gpt_oss.end()) {
      for (const auto& [g, part] : o->second) {
        by_gguf[g] = n;
        if (part) fused.emplace(g, *part);
      }
      continue;
    }
    std::string g = gguf_tensor_name(n, c.arch);
    if (const auto m = moe.find(n); g.empty() && m != moe.end()) g = m->second;
    if (g.find(".attn_qkv.") != std::string::npos && c.arch == Arch::kGpt2) {  // q, k, v fused: gathered from q's name
      if (n.find(".q_proj.") == std::string::npos) continue;
    }
    if (g.empty()) {
      if (n.find("rotary_emb.inv_freq") != std::string::npos) continue;  // derived, not a weight
      throw InputError("'" + model_dir + "': tensor '" + n + "' has no GGUF counterpart; plexus quantize cannot convert it");
    }
    if (n == "lm_head.weight" && c.tie_word_embeddings) continue;
    by_gguf[g] = n;
  }
  // llama.cpp's gpt-oss wants output.weight: a tied model's is its embedding.
  // So does llama.cpp's converter write GPT-2's (tied in Hugging Face's model).
  if ((c.arch == Arch::kGptOss || c.arch == Arch::kGpt2) && c.tie_word_embeddings) by_gguf["output.weight"] = "model.embed_tokens.weight";
  const auto take = [&](const std::string& g) {
    const auto it = by_gguf.find(g);
    if (it == by_gguf.end()) return;
    order.emplace_back(it->first, it->second);
    by_gguf.erase(it);
  };
  take("token_embd.weight");
  take("position_embd.weight");
  const bool llama3_rope = c.rope_scaling == RopeScaling::kLlama3;
  for (std::int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* part : {"attn_norm", "attn_qkv", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm",
                             "attn_sinks", "post_attention_norm", "ffn_norm", "ffn_gate_inp", "ffn_gate", "ffn_gate_exps", "ffn_up",
                             "ffn_up_exps", "ffn_down", "ffn_down_exps", "post_ffw_norm"}) {
      take(p + part + ".weight");
      take(p + part + ".bias");
    }
  }
  take("output_norm.weight");
  take("output_norm.bias");
  take("output.weight");
  if (!by_gguf.empty()) {
    throw InputError("'" + model_dir + "': tensor '" + by_gguf.begin()->second + "' is outside the model's " +
                     std::to_string(c.num_layers) + " layers");
  }

  const QuantModelFacts facts = quant_model_facts(c);
  ThreadPool pool(o.threads);
  const bool permute = arch == "llama";
  const auto add_f32_vector = [&w](const std::string& name, std::vector<float> values) {
    auto v = std::make_shared<std::vector<float>>(std::move(values));
    w.add_tensor(name, {static_cast<std::int64_t>(v->size())}, 0, v->size() * 4, [v](void* dst) { std::memcpy(dst, v->data(), v->size() * 4); });
  };
  if (llama3_rope) add_f32_vector("rope_freqs.weight", llama3_rope_freq_factors(c));
  if (c.rope_scaling == RopeScaling::kLongRope) {  // Phi-3: LongRoPE's divisors, rotary_dim / 2 each
    add_f32_vector("rope_factors_long.weight", std::vector<float>(c.rope_long_factor.begin(), c.rope_long_factor.end()));
    add_f32_vector("rope_factors_short.weight", std::vector<float>(c.rope_short_factor.begin(), c.rope_short_factor.end()));
  }
  // Gemma's RMSNorm multiplies by (1 + w): llama.cpp's converter stores the (1 + w), in f32.
  const bool norms_plus_one = c.gemma && !c.norm_weights_hold_one;
  for (const auto& [g, hf] : order) {
    const TensorRef ref = ckpt.get(hf);
    const TensorInfo& info = *ref.info;
    if (!info.dtype_supported || dtype_is_block(info.dtype)) {
      throw InputError("'" + model_dir + "': tensor '" + hf + "' has dtype " + info.dtype_name + " (f32, bf16 or f16 expected)");
    }
    const DType src = info.dtype;
    const void* data = ref.data;
    // GPT-2's Conv1D weights are viewed (out, in) over their stored (in, out) bytes: a row of the
    // view is a column of the stored matrix, every in_out_ld-th element (checkpoint_gpt2.cpp).
    const std::int64_t in_out_ld = ref.in_out_ld;
    const auto f = fused.find(g);
    // A stack of experts: (E, rows, cols), expert e's rows after expert e - 1's.
    std::vector<const void*> parts = {ref.data};
    std::vector<std::int64_t> shape = f != fused.end() ? f->second.shape() : info.shape;
    if (f == fused.end() && g.ends_with("_exps.weight")) {
      parts = expert_data(ckpt, c, g, model_dir);
      shape.insert(shape.begin(), static_cast<std::int64_t>(parts.size()));
    }
    if (c.arch == Arch::kGpt2 && g.find(".attn_qkv.") != std::string::npos) {  // (3·H, H) | (3·H): q, k, v one after another
      parts = gpt2_qkv_data(ckpt, hf, info, model_dir);
      shape[0] *= 3;
    }
    std::vector<std::int64_t> dims(shape.rbegin(), shape.rend());  // GGUF: innermost first
    const std::int64_t cols = shape.back();
    std::int64_t rows = 1;
    for (std::size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
    const std::int64_t part_rows = rows / static_cast<std::int64_t>(parts.size());
    const bool q_or_k = g.find(".attn_q.") != std::string::npos || g.find(".attn_k.") != std::string::npos;
    const bool reorder = permute && q_or_k;
    const std::int64_t head_dim = c.head_dim;
    // Row r of the GGUF tensor as f32: gathered from a fused gpt-oss tensor, or a row of the
    // source (of expert r / part_rows for a stack; q/k rows permuted for llama's rope).
    const std::size_t in_row = dtype_size(src) * static_cast<std::size_t>(cols);
    const std::optional<FusedPart> gather = f != fused.end() ? std::optional<FusedPart>(f->second) : std::nullopt;
    const auto row_f32 = [=](std::int64_t r, float* row) {
      if (gather) return strided_to_f32(src, data, gather->first(r), gather->stride(), row, cols);
      const std::int64_t s = reorder ? permuted_source_row(r, head_dim) : r;
      const char* from = static_cast<const char*>(parts[static_cast<std::size_t>(s / part_rows)]);
      if (in_out_ld != 0) return strided_to_f32(src, from, s % part_rows, in_out_ld, row, cols);
      row_to_f32(src, from + static_cast<std::size_t>(s % part_rows) * in_row, row, cols);
    };
    // llama.cpp keeps a router (ffn_gate_inp) and every bias F32; F32/F16/BF16 files have every
    // matrix in that type.
    // llama-quantize leaves learned positions (GPT-2's position_embd) unquantised: F32 here.
    const bool keep_f32 = g.find(".ffn_gate_inp.") != std::string::npos || g.ends_with(".bias") ||
                          (g == "position_embd.weight" && !o.float_type);
    const std::optional<DType> chosen = shape.size() < 2 ? std::nullopt
                                        : keep_f32       ? std::optional<DType>(DType::kF32)
                                        : o.float_type   ? o.float_type
                                                         : quant_mix_type(o.mix, g, shape, facts);
    if (chosen) {
      // A weight matrix in the mix's type for it: a block format, or F16 where no block fits.
      const DType t = *chosen;
      const std::int64_t row_bytes = dtype_row_bytes(t, cols);
      w.add_tensor(g, dims, ggml_type_of(t), static_cast<std::uint64_t>(rows * row_bytes),
                   [=, &pool](void* dst) {
                     pool.parallel_for(rows, 1, [&](std::int64_t b, std::int64_t e) {
                       std::vector<float> row(static_cast<std::size_t>(cols));  // (cols)
                       for (std::int64_t r = b; r < e; ++r) {
                         row_f32(r, row.data());
                         quantize_row(t, row.data(), static_cast<char*>(dst) + r * row_bytes, cols);  // a block format, or F32/F16/BF16
                       }
                     });
                   });
      if (dtype_is_block(t)) ++result.quantised;
    } else if (shape.size() >= 2) {
      // A matrix the mix leaves as stored (none of llama.cpp's names today), bytes as stored.
      if (gather || in_out_ld != 0) {
        throw InputError("'" + model_dir + "': tensor '" + g + "' must be gathered from '" + hf + "' to be written");
      }
      const std::uint64_t bytes = info.end - info.begin;
      w.add_tensor(g, dims, ggml_type_of(src), bytes, [=](void* dst) { std::memcpy(dst, data, bytes); });
    } else {
      // Norms, biases and sinks as F32 (GPT-2's q, k, v biases one after another); a llama q/k
      // bias is permuted like its weight's rows; Gemma's norms as (1 + w).
      const std::int64_t n = cols, each = n / static_cast<std::int64_t>(parts.size());
      const bool plus_one = norms_plus_one && g.ends_with("norm.weight");
      w.add_tensor(g, dims, 0, static_cast<std::uint64_t>(n) * 4, [=](void* dst) {
        std::vector<float> v(static_cast<std::size_t>(n));
        for (std::size_t k = 0; k < parts.size(); ++k) row_to_f32(src, parts[k], v.data() + static_cast<std::int64_t>(k) * each, each);
        float* d = static_cast<float*>(dst);
        for (std::int64_t i = 0; i < n; ++i) d[i] = v[static_cast<std::size_t>(reorder ? permuted_source_row(i, head_dim) : i)];
        if (plus_one)
          for (std::int64_t i = 0; i < n; ++i) d[i] += 1.0f;
      });
    }
  }
  result.tensors = w.tensor_count();
  result.bytes = w.file_size();
  w.write(out, [&](std::size_t i, const std::string& name) {
    if (o.progress) o.progress(i, w.tensor_count(), name);
  });
  return result;
}

}  // namespace plexus
