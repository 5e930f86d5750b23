// Random checkpoints: deterministic normal weights (splitmix64 + Box-Muller, the same on every
// platform), norms near one, written as safetensors in Hugging Face's tensor order.
#include "model/make_model.h"
#include "model/make_model_gemma.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "kernels/block_formats.h"
#include "kernels/mxfp4_hf.h"
#include "kernels/quantize.h"
#include "model/bulk_weights.h"
#include "model/gpt_oss_mxfp4.h"
#include "model/module_tree.h"

namespace plexus {

namespace {

class NormalRng {
 public:
  explicit NormalRng(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {}
  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(bits() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    const double u2 = static_cast<double>(bits() >> 11) * (1.0 / 9007199254740992.0);
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }

 private:
  std::uint64_t bits() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

void make_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw InputError("'" + dir + "' exists and is not a directory");
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);  // parents too: `models/demo` in a fresh clone
  if (ec) throw RuntimeError("cannot create directory '" + dir + "': " + ec.message());
}

void append_value(std::string& out, DType t, float v) {
  switch (t) {
    case DType::kF32: out.append(reinterpret_cast<const char*>(&v), 4); break;
    case DType::kBF16: {
      const std::uint16_t h = f32_to_bf16(v);
      out.append(reinterpret_cast<const char*>(&h), 2);
      break;
    }
    case DType::kF16: {
      const std::uint16_t h = f32_to_f16(v);
      out.append(reinterpret_cast<const char*>(&h), 2);
      break;
    }
    default:  // a block format
      throw RuntimeError("internal: make-model writes f32, bf16 or f16 values, not " + std::string(dtype_torch_name(t)));
  }
}

std::string shard_name(int k, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", k, n);
  return buf;
}

void check_stop(const MakeModelOptions& o, const std::string& out_dir) {
  if (o.stop_requested && o.stop_requested()) {
    throw Interrupted("interrupted while writing the model in '" + out_dir + "'; no temporary file was left, run again to make it");
  }
}

// One tensor of a safetensors file: its name, header dtype ("BF16", "U8", ...), shape and bytes.
struct FileTensor {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

// Writes one safetensors file to `path` via a temporary file, so a crash leaves no half file.
void write_safetensors(const std::string& path, const std::vector<FileTensor>& tensors, const MakeModelOptions& o) {
  Json header = Json::object();
  std::uint64_t off = 0;
  for (const FileTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  AtomicFile out(path);  // removed unless committed: an error or an interrupt leaves nothing behind
  const std::uint64_t n = h.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>(static_cast<unsigned char>(n >> (8 * i)));
  out.write(std::string_view(len, 8));
  out.write(h);
  for (const FileTensor& t : tensors) {
    check_stop(o, path);
    out.write(t.bytes);
  }
  out.commit();
}

// Whether `p` is a gpt-oss fused expert tensor that `o` writes as MXFP4.
bool written_as_mxfp4(const ParamInfo& p, const ModelConfig& c, const MakeModelOptions& o) {
  return o.mxfp4_experts && c.arch == Arch::kGptOss && p.shape.size() == 3 && p.name.ends_with("_proj");
}

// values (E · rows · cols, the stored orientation: rows the outputs) quantised to MXFP4 and
// written in Hugging Face's layout: NAME_blocks (E, rows, cols / 32, 16) and NAME_scales (E, rows,
// cols / 32), both U8.
std::pair<FileTensor, FileTensor> hf_mxfp4_tensors(const std::string& name, const std::vector<std::int64_t>& stored,
                                                   const std::vector<float>& values) {
  const std::int64_t nb = static_cast<std::int64_t>(values.size()) / 32;
  std::vector<BlockMXFP4> q(static_cast<std::size_t>(nb));
  quantize_row(DType::kMXFP4, values.data(), q.data(), static_cast<std::int64_t>(values.size()));  // blocks are independent
  FileTensor blocks{name + kMxfp4BlocksSuffix, "U8", {stored[0], stored[1], stored[2] / 32, 16}, std::string(static_cast<std::size_t>(16 * nb), '\0')};
  FileTensor scales{name + kMxfp4ScalesSuffix, "U8", {stored[0], stored[1], stored[2] / 32}, std::string(static_cast<std::size_t>(nb), '\0')};
  mxfp4_to_hf_blocks(q.data(), nb, reinterpret_cast<std::uint8_t*>(blocks.bytes.data()), reinterpret_cast<std::uint8_t*>(scales.bytes.data()));
  return {std::move(blocks), std::move(scales)};
}

// Llama 3.2 1B and Llama 3.1 8B as Meta's config.json files describe them.
ModelConfig real_llama_config(const std::string& preset, Arch arch, std::int64_t vocab_size) {
  if (arch != Arch::kLlama) throw InputError("preset '" + preset + "' is a Llama: leave --arch out (or give llama)");
  ModelConfig c;
  c.arch = arch;
  c.architecture = std::string(arch_name(arch));
  c.model_type = "llama";
  const bool small = preset == "llama-3.2-1b";
  c.hidden_size = small ? 2048 : 4096;
  c.num_layers = small ? 16 : 32;
  c.num_heads = 32, c.num_kv_heads = 8;
  c.head_dim = c.hidden_size / c.num_heads;
  c.intermediate_size = small ? 8192 : 14336;
  c.vocab_size = vocab_size > 0 ? vocab_size : 128256;
  c.tie_word_embeddings = small;
  c.max_position_embeddings = 131072;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 500000.0;
  c.rope_scaling = RopeScaling::kLlama3;
  c.rope_factor = small ? 32.0 : 8.0;
  c.rope_low_freq_factor = 1.0;
  c.rope_high_freq_factor = 4.0;
  c.rope_original_max_position = 8192;
  c.bos_token_id = 128000;
  c.eos_token_ids = {128001};
  return c;
}

// The mixtures of experts at real shape: Mixtral-8x7B and Qwen3-30B-A3B as their published
// config.json files describe them, and moe-cpu-bench, a Qwen3-MoE of 2.6B parameters (0.49B read
// per token) that fits a CPU box for benchmarks (docs/cli.md, make-model).
ModelConfig real_moe_config(const std::string& preset, std::int64_t vocab_size) {
  ModelConfig c;
  c.rope_theta = 1000000.0;
  c.tie_word_embeddings = false;
  if (preset == "mixtral-8x7b") {
    c.arch = Arch::kMixtral, c.model_type = "mixtral";
    c.hidden_size = 4096, c.num_layers = 32, c.num_heads = 32, c.num_kv_heads = 8, c.head_dim = 128;
    c.intermediate_size = 14336, c.vocab_size = 32000, c.max_position_embeddings = 32768, c.rms_norm_eps = 1e-5;
    c.moe = {8, 2, c.intermediate_size, true, 1, {}};
    c.bos_token_id = 1, c.eos_token_ids = {2};
  } else if (preset == "qwen3-30b-a3b") {
    c.arch = Arch::kQwen3Moe, c.model_type = "qwen3_moe", c.qk_norm = true;
    c.hidden_size = 2048, c.num_layers = 48, c.num_heads = 32, c.num_kv_heads = 4, c.head_dim = 128;
    c.intermediate_size = 6144, c.vocab_size = 151936, c.max_position_embeddings = 40960, c.rms_norm_eps = 1e-6;
    c.moe = {128, 8, 768, true, 1, {}};
    c.bos_token_id = 151643, c.eos_token_ids = {151645};
  } else {  // moe-cpu-bench: Qwen3-MoE-shaped, fewer and narrower layers and experts, a 32000 vocabulary
    c.arch = Arch::kQwen3Moe, c.model_type = "qwen3_moe", c.qk_norm = true;
    c.hidden_size = 1024, c.num_layers = 24, c.num_heads = 16, c.num_kv_heads = 4, c.head_dim = 128;
    c.intermediate_size = 3072, c.vocab_size = 32000, c.max_position_embeddings = 32768, c.rms_norm_eps = 1e-6;
    c.moe = {64, 8, 512, true, 1, {}};
    c.bos_token_id = 1, c.eos_token_ids = {2};
  }
  c.architecture = std::string(arch_name(c.arch));
  if (vocab_size > 0) c.vocab_size = vocab_size;
  return c;
}

// gpt-oss-20b as OpenAI's config.json describes it (24 layers, 32 experts of width 2880, 4 per
// token, sliding 128 on even layers, YaRN 32 from 4096); MXFP4 experts are
// MakeModelOptions::mxfp4_experts (make-model's default for this preset).
ModelConfig gpt_oss_20b_config(Arch arch, std::int64_t vocab_size) {
  if (arch != Arch::kGptOss && arch != Arch::kLlama) throw InputError("preset 'gpt-oss-20b' is a gpt-oss: leave --arch out (or give gpt-oss)");
  ModelConfig c;
  c.arch = Arch::kGptOss;
  c.architecture = std::string(arch_name(c.arch));
  c.model_type = "gpt_oss";
  c.hidden_size = 2880, c.num_layers = 24, c.num_heads = 64, c.num_kv_heads = 8, c.head_dim = 64;
  c.intermediate_size = 2880;
  c.vocab_size = vocab_size > 0 ? vocab_size : 201088;
  c.max_position_embeddings = 131072;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 150000.0;
  c.rope_original_max_position = 4096;
  c.sliding_window = 128;
  c.eos_token_ids = {200002};
  c.moe = {32, 4, c.intermediate_size, true, 1, {}};
  return c;
}

// Phi-3.5-mini as Microsoft's config.json describes it (LongRoPE from 4096 to 131072 positions,
// 48 factors each; window 262144), its factors made up: monotone, short 1.0 to 2.0, long 1.0 to
// 60 (the published ones have these ranges).
ModelConfig phi35_mini_config(Arch arch, std::int64_t vocab_size) {
  if (arch != Arch::kPhi3 && arch != Arch::kLlama) throw InputError("preset 'phi-3.5-mini' is a Phi-3: leave --arch out (or give phi3)");
  ModelConfig c;
  c.arch = Arch::kPhi3;
  c.architecture = std::string(arch_name(c.arch));
  c.model_type = "phi3";
  c.hidden_size = 3072, c.num_layers = 32, c.num_heads = 32, c.num_kv_heads = 32, c.head_dim = 96;
  c.intermediate_size = 8192;
  c.vocab_size = vocab_size > 0 ? vocab_size : 32064;
  c.max_position_embeddings = 131072;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  c.sliding_window = 262144;
  c.bos_token_id = 1;
  c.eos_token_ids = {32000};
  c.rope_scaling = RopeScaling::kLongRope;
  c.rope_original_max_position = 4096;
  for (int i = 0; i < 48; ++i) {
    const double x = i / 47.0;
    c.rope_short_factor.push_back(std::round((1.0 + x * x * x) * 1e4) / 1e4);
    c.rope_long_factor.push_back(std::round((1.0 + 59.0 * x * x) * 1e4) / 1e4);
  }
  return c;
}

// The gpt-oss parts every gpt-oss preset shares (GptOssConfig's defaults): q/k/v/o biases, sinks,
// alternating sliding (even layers) and full layers, YaRN with an unrounded range, the biased
// top-k-then-softmax router and clamped SwiGLU experts.
void set_gpt_oss_defaults(ModelConfig& c) {
  c.qkv_bias = c.o_bias = c.attention_sinks = true;
  c.sliding_layers.assign(static_cast<std::size_t>(c.num_layers), false);
  for (std::int64_t l = 0; l < c.num_layers; l += 2) c.sliding_layers[static_cast<std::size_t>(l)] = true;
  c.rope_scaling = RopeScaling::kYarn;
  c.rope_factor = static_cast<double>(c.max_position_embeddings) / static_cast<double>(c.rope_original_max_position);
  c.rope_beta_fast = 32, c.rope_beta_slow = 1, c.rope_truncate = false;
  c.rope_attention_factor = 0.1 * std::log(c.rope_factor) + 1.0;
  c.moe.top_k_then_softmax = c.moe.biases = true;
  c.moe.swiglu_alpha = 1.702, c.moe.swiglu_limit = 7.0;
}

// GPT-2's shapes beyond a preset's: full multi-head attention, every linear biased, LayerNorms,
// a 4·H tanh-GELU MLP, tied embeddings, learned positions; bos = eos = the last id (as GPT-2's 50256).
void set_gpt2_defaults(ModelConfig& c) {
  c.model_type = "gpt2";
  c.num_kv_heads = c.num_heads;
  c.head_dim = c.hidden_size / c.num_heads;
  c.intermediate_size = 4 * c.hidden_size;
  c.qkv_bias = c.o_bias = true;
  c.tie_word_embeddings = true;
  c.rms_norm_eps = 1e-5;  // layer_norm_epsilon
  c.bos_token_id = c.vocab_size - 1;
  c.eos_token_ids = {c.vocab_size - 1};
}

// The tensors of a GPT2LMHeadModel checkpoint as Hugging Face saves it: "transformer."-prefixed
// names in its order, Conv1D weights (in, out), c_attn fused (H, 3·H), lm_head tied (not written).
std::vector<ParamInfo> gpt2_checkpoint_params(const ModelConfig& c) {
  std::vector<ParamInfo> out;
  auto add = [&out](const std::string& name, std::vector<std::int64_t> shape, int layer) {
    out.push_back(ParamInfo{name, name.substr(0, name.rfind('.')), std::move(shape), layer, std::nullopt, std::nullopt});
  };
  const std::int64_t H = c.hidden_size, I = c.intermediate_size;
  add("transformer.wte.weight", {c.vocab_size, H}, -1);
  add("transformer.wpe.weight", {c.max_position_embeddings, H}, -1);
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    add(p + "ln_1.weight", {H}, l);
    add(p + "ln_1.bias", {H}, l);
    add(p + "attn.c_attn.weight", {H, 3 * H}, l);
    add(p + "attn.c_attn.bias", {3 * H}, l);
    add(p + "attn.c_proj.weight", {H, H}, l);
    add(p + "attn.c_proj.bias", {H}, l);
    add(p + "ln_2.weight", {H}, l);
    add(p + "ln_2.bias", {H}, l);
    add(p + "mlp.c_fc.weight", {H, I}, l);
    add(p + "mlp.c_fc.bias", {I}, l);
    add(p + "mlp.c_proj.weight", {I, H}, l);
    add(p + "mlp.c_proj.bias", {H}, l);
  }
  add("transformer.ln_f.weight", {H}, -1);
  add("transformer.ln_f.bias", {H}, -1);
  return out;
}

// GPT2Config's names for a GPT-2 config.
Json gpt2_config_json(const ModelConfig& c, DType dtype) {
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"n_embd", c.hidden_size},
          {"n_layer", c.num_layers},
          {"n_head", c.num_heads},
          {"n_positions", c.max_position_embeddings},
          {"n_ctx", c.max_position_embeddings},
          {"n_inner", c.intermediate_size == 4 * c.hidden_size ? Json(nullptr) : Json(c.intermediate_size)},
          {"vocab_size", c.vocab_size},
          {"layer_norm_epsilon", c.rms_norm_eps},
          {"activation_function", "gelu_new"},
          {"scale_attn_weights", true},
          {"scale_attn_by_inverse_layer_idx", false},
          {"reorder_and_upcast_attn", false},
          {"tie_word_embeddings", true},
          {"bos_token_id", c.bos_token_id.value_or(c.vocab_size - 1)},
          {"eos_token_id", c.eos_token_ids.empty() ? c.vocab_size - 1 : c.eos_token_ids[0]},
          {"torch_dtype", std::string(dtype_torch_name(dtype))}};
}

}  // namespace

std::vector<std::string> preset_names() {
  return {"tiny",          "small",         "llama-3.2-1b", "llama-3.1-8b", "mixtral-8x7b", "qwen3-30b-a3b",
          "gpt-oss-20b",   "moe-cpu-bench", "phi-3.5-mini", "gemma-2-2b",   "gemma-3-1b",
          "gpt2"};
}

std::optional<Arch> preset_arch(const std::string& preset) {
  if (preset == "llama-3.2-1b" || preset == "llama-3.1-8b") return Arch::kLlama;
  if (preset == "mixtral-8x7b") return Arch::kMixtral;
  if (preset == "qwen3-30b-a3b" || preset == "moe-cpu-bench") return Arch::kQwen3Moe;
  if (preset == "gpt-oss-20b") return Arch::kGptOss;
  if (preset == "phi-3.5-mini") return Arch::kPhi3;
  if (preset == "gemma-2-2b") return Arch::kGemma2;
  if (preset == "gemma-3-1b") return Arch::kGemma3;
  if (preset == "gpt2") return Arch::kGpt2;
  return std::nullopt;
}

std::string preset_list() {
  std::string s;
  const std::vector<std::string> names = preset_names();
  for (std::size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

bool is_bulk_preset(const std::string& preset) { return preset_arch(preset).has_value(); }

ModelConfig preset_config(const std::string& preset, Arch arch, std::int64_t vocab_size) {
  ModelConfig c;
  c.arch = arch;
  c.architecture = std::string(arch_name(arch));
  if (preset == "tiny") {
    c.hidden_size = 64, c.num_layers = 4, c.num_heads = 4, c.num_kv_heads = 2, c.head_dim = 16;
    c.intermediate_size = 176, c.vocab_size = 32000, c.tie_word_embeddings = false;
  } else if (preset == "small") {
    c.hidden_size = 576, c.num_layers = 30, c.num_heads = 9, c.num_kv_heads = 3, c.head_dim = 64;
    c.intermediate_size = 1536, c.vocab_size = 32000, c.tie_word_embeddings = true;
  } else if (preset == "llama-3.2-1b" || preset == "llama-3.1-8b") {
    return real_llama_config(preset, arch, vocab_size);
  } else if (preset == "gpt-oss-20b") {
    ModelConfig g = gpt_oss_20b_config(arch, vocab_size);
    set_gpt_oss_defaults(g);
    return g;
  } else if (preset == "phi-3.5-mini") {
    return phi35_mini_config(arch, vocab_size);
  } else if (is_gemma_preset(preset)) {
    if (arch != *preset_arch(preset)) {
      throw InputError("preset '" + preset + "' is a " + std::string(arch_name(*preset_arch(preset))) +
                       ": leave --arch out (or give " + (preset == "gemma-2-2b" ? "gemma2" : "gemma3") + ")");
    }
    return gemma_preset_config(preset, vocab_size);
  } else if (preset == "gpt2") {  // GPT-2 small (124M), as openai-community/gpt2's config.json
    if (arch != Arch::kGpt2 && arch != Arch::kLlama) throw InputError("preset 'gpt2' is a GPT-2: leave --arch out (or give gpt2)");
    c.arch = Arch::kGpt2;
    c.architecture = std::string(arch_name(c.arch));
    c.hidden_size = 768, c.num_layers = 12, c.num_heads = 12, c.vocab_size = vocab_size > 0 ? vocab_size : 50257;
    c.max_position_embeddings = 1024;
    set_gpt2_defaults(c);
    return c;
  } else if (const std::optional<Arch> own = preset_arch(preset)) {
    if (arch != *own) {
      throw InputError("preset '" + preset + "' is a " + std::string(arch_name(*own)) + ": leave --arch out (or give " +
                       (*own == Arch::kMixtral ? "mixtral" : "qwen3-moe") + ")");
    }
    return real_moe_config(preset, vocab_size);
  } else {
    throw InputError("unknown preset '" + preset + "' (use " + preset_list() + ")");
  }
  if (vocab_size > 0) c.vocab_size = vocab_size;
  c.max_position_embeddings = 2048;
  c.rms_norm_eps = 1e-6;
  switch (arch) {
    case Arch::kLlama: c.model_type = "llama"; c.rope_theta = 10000.0; break;
    case Arch::kMistral: c.model_type = "mistral"; c.rope_theta = 10000.0; break;
    case Arch::kQwen2: c.model_type = "qwen2"; c.rope_theta = 1000000.0; c.qkv_bias = true; break;
    case Arch::kQwen3: c.model_type = "qwen3"; c.rope_theta = 1000000.0; c.qk_norm = true; break;
    case Arch::kMixtral:  // 4 experts of the preset's MLP width, 2 per token
      c.model_type = "mixtral";
      c.rope_theta = 1000000.0;
      c.moe = {4, 2, c.intermediate_size, true, 1, {}};
      break;
    case Arch::kQwen3Moe:  // 8 narrow experts, 2 per token; layer 1 keeps a dense MLP (mlp_only_layers)
      c.model_type = "qwen3_moe";
      c.rope_theta = 1000000.0;
      c.qk_norm = true;
      c.moe = {8, 2, c.intermediate_size / 4, true, 1, {1}};
      break;
    case Arch::kGptOss:  // 4 experts as wide as the model, 2 per token; window 8 on layers 0 and 2;
      // YaRN 32 from 64 positions (so the tests' 24 tokens pass the original context's ramp)
      c.model_type = "gpt_oss";
      c.rope_theta = 150000.0;
      c.intermediate_size = c.hidden_size;
      c.sliding_window = 8;
      c.rope_original_max_position = 64;
      c.moe = {4, 2, c.intermediate_size, true, 1, {}};
      set_gpt_oss_defaults(c);
      break;
    case Arch::kPhi3:  // Phi-4-mini's partial rotary (0.75) and LongRoPE from 16 to 128 positions
      // (the tests' prompts fall on either side), factors 1.0-1.5 short and 1-20 long
      c.model_type = "phi3";
      c.rope_theta = 10000.0;
      c.rms_norm_eps = 1e-5;
      c.partial_rotary_factor = 0.75;
      c.max_position_embeddings = 128;
      c.rope_scaling = RopeScaling::kLongRope;
      c.rope_original_max_position = 16;
      for (std::int64_t i = 0; i < c.rotary_dim() / 2; ++i) {
        const double x = static_cast<double>(i) / static_cast<double>(c.rotary_dim() / 2 - 1);
        c.rope_short_factor.push_back(1.0 + 0.5 * x);
        c.rope_long_factor.push_back(1.0 + 19.0 * x * x);
      }
      break;
    case Arch::kGemma2:
    case Arch::kGemma3: set_gemma_small_preset(c); break;
    case Arch::kGpt2:  // 1024 learned positions
      c.max_position_embeddings = 1024;
      set_gpt2_defaults(c);
      return c;
  }
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  return c;
}

Json config_to_json(const ModelConfig& c, DType dtype) {
  if (c.arch == Arch::kGpt2) return gpt2_config_json(c, dtype);
  Json j = {{"architectures", {c.architecture}},
            {"model_type", c.model_type},
            {"hidden_size", c.hidden_size},
            {"num_hidden_layers", c.num_layers},
            {"num_attention_heads", c.num_heads},
            {"num_key_value_heads", c.num_kv_heads},
            {"head_dim", c.head_dim},
            {"intermediate_size", c.intermediate_size},
            {"vocab_size", c.vocab_size},
            {"max_position_embeddings", c.max_position_embeddings},
            {"rms_norm_eps", c.rms_norm_eps},
            {"rope_theta", c.rope_theta},
            {"hidden_act", "silu"},
            {"tie_word_embeddings", c.tie_word_embeddings},
            {"attention_bias", c.arch == Arch::kQwen2 ? true : c.o_bias},
            {"torch_dtype", std::string(dtype_torch_name(dtype))}};
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty()) j["eos_token_id"] = c.eos_token_ids;
  if (c.sliding_window > 0) j["sliding_window"] = c.sliding_window;
  if (c.rope_scaling == RopeScaling::kLlama3) {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", c.rope_factor},
                         {"low_freq_factor", c.rope_low_freq_factor},
                         {"high_freq_factor", c.rope_high_freq_factor},
                         {"original_max_position_embeddings", c.rope_original_max_position}};
  } else if (c.rope_scaling == RopeScaling::kLinear) {
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.rope_factor}};
  }
  if (c.arch == Arch::kPhi3) {  // Phi3Config's names; its attention has no bias field
    j.erase("attention_bias");
    j["original_max_position_embeddings"] = c.rope_original_max_position;
    if (c.partial_rotary_factor != 1.0) j["partial_rotary_factor"] = c.partial_rotary_factor;
    j["sliding_window"] = c.sliding_window > 0 ? Json(c.sliding_window) : Json(nullptr);
    if (c.rope_scaling == RopeScaling::kLongRope) {
      j["rope_scaling"] = {{"type", "longrope"}, {"short_factor", c.rope_short_factor}, {"long_factor", c.rope_long_factor}};
    }
  }
  if (c.arch == Arch::kGptOss) {  // GptOssConfig's names
    j["num_local_experts"] = c.moe.num_experts;
    j["num_experts_per_tok"] = c.moe.experts_per_token;
    j["experts_per_token"] = c.moe.experts_per_token;
    j["swiglu_limit"] = c.moe.swiglu_limit;
    j["attention_bias"] = true;
    Json types = Json::array();
    for (const bool sliding : c.sliding_layers) types.push_back(sliding ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    j["rope_scaling"] = {{"rope_type", "yarn"},
                         {"factor", c.rope_factor},
                         {"beta_fast", c.rope_beta_fast},
                         {"beta_slow", c.rope_beta_slow},
                         {"truncate", c.rope_truncate},
                         {"original_max_position_embeddings", c.rope_original_max_position}};
    j["hidden_act"] = "silu";
  } else if (c.arch == Arch::kMixtral) {
    j["num_local_experts"] = c.moe.num_experts;
    j["num_experts_per_tok"] = c.moe.experts_per_token;
  } else if (c.arch == Arch::kQwen3Moe) {
    j["num_experts"] = c.moe.num_experts;
    j["num_experts_per_tok"] = c.moe.experts_per_token;
    j["moe_intermediate_size"] = c.moe.expert_intermediate_size;
    j["norm_topk_prob"] = c.moe.normalize_top_k;
    j["decoder_sparse_step"] = c.moe.sparse_step;
    j["mlp_only_layers"] = c.moe.mlp_only_layers;
  }
  if (c.gemma) add_gemma_config_json(c, j);
  if (c.model_type == "llama") {  // the rest of what Meta's Llama config.json files hold
    j["attention_dropout"] = 0.0;
    j["initializer_range"] = 0.02;
    j["mlp_bias"] = false;
    j["pretraining_tp"] = 1;
    j["use_cache"] = true;
  }
  return j;
}

Json gpt_oss_mxfp4_quantization_config() {
  return {{"modules_to_not_convert", {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}},
          {"quant_method", "mxfp4"}};
}

std::int64_t write_random_model(const std::string& out_dir, const MakeModelOptions& o) {
  if (o.shards < 1) throw InputError("--shards must be at least 1");
  ModelConfig config = preset_config(o.preset, o.arch, o.vocab_size);
  if (o.bos_token_id) config.bos_token_id = *o.bos_token_id;
  if (o.eos_token_id) config.eos_token_ids = {*o.eos_token_id};
  if (o.moe) {
    if (!config.is_moe()) throw InputError("a mixture of experts needs a MoE architecture (mixtral, qwen3-moe, gpt-oss)");
    const MoeConfig preset = config.moe;
    config.moe = *o.moe;
    if (config.arch == Arch::kGptOss) {  // the mixture's sizes; gpt-oss's router and experts stay
      config.moe.top_k_then_softmax = preset.top_k_then_softmax, config.moe.biases = preset.biases;
      config.moe.swiglu_alpha = preset.swiglu_alpha, config.moe.swiglu_limit = preset.swiglu_limit;
      config.intermediate_size = config.moe.expert_intermediate_size;
    }
  }
  if (o.mxfp4_experts) {
    if (config.arch != Arch::kGptOss) {
      throw InputError("MXFP4 experts (--expert-dtype mxfp4) are gpt-oss's; this is a " + std::string(arch_name(config.arch)));
    }
    if (config.hidden_size % 32 != 0 || config.moe.expert_intermediate_size % 32 != 0) {
      throw InputError("MXFP4 experts need hidden_size and intermediate_size multiples of 32 (MXFP4's block), got " +
                       std::to_string(config.hidden_size) + " and " + std::to_string(config.moe.expert_intermediate_size));
    }
  }
  Json config_json = config_to_json(config, o.dtype);
  if (o.mxfp4_experts) config_json["quantization_config"] = gpt_oss_mxfp4_quantization_config();
  const ModuleTree tree = ModuleTree::from_config(config);
  // GPT-2 is written in its own names and Conv1D layout (the engine's names are read from them).
  const std::vector<ParamInfo> gpt2 = config.arch == Arch::kGpt2 ? gpt2_checkpoint_params(config) : std::vector<ParamInfo>{};
  make_dir(out_dir);
  std::vector<const ParamInfo*> params;
  std::int64_t n_params = 0;
  for (const ParamInfo& p : config.arch == Arch::kGpt2 ? gpt2 : tree.params()) {
    if (p.tied_to) continue;
    params.push_back(&p);
    n_params += p.numel();
  }
  auto is_norm = [](const ParamInfo& p) {
    return p.shape.size() == 1 && (p.name.find("norm") != std::string::npos ||
                                   (p.name.find(".ln_") != std::string::npos && p.name.ends_with(".weight")));  // GPT-2's
  };
  if (o.config_only) {
    write_file_atomically(out_dir + "/config.json", config_json.dump(2) + "\n");
    return n_params;
  }
  const bool bulk = is_bulk_preset(o.preset);
  std::int64_t done = 0;
  auto advance = [&](std::int64_t n) {
    done += n;
    if (o.progress) o.progress(done, n_params);
  };
  NormalRng rng(o.seed);  // one sequence through every shard, in tensor order
  // Writes params[begin, end) as `file`.
  auto write_shard = [&](const std::string& file, std::size_t begin, std::size_t end) {
    const std::string path = out_dir + "/" + file;
    if (bulk) {
      std::vector<BulkTensor> part;
      for (std::size_t i = begin; i < end; ++i) {
        const ParamInfo& p = *params[i];
        if (written_as_mxfp4(p, config, o)) {  // the stored orientation, outputs first
          const std::vector<std::int64_t> rc = mxfp4_expert_shape(config, p.name);
          part.push_back({p.name, {p.shape[0], rc[0], rc[1]}, false, i, true});
        } else {
          part.push_back({p.name, p.shape, is_norm(p) && !config.gemma, i});  // Gemma's norms: (1 + w), w near 0
        }
      }
      BulkOptions b;
      b.dtype = o.dtype, b.seed = o.seed, b.std = o.std, b.threads = o.threads, b.stop_requested = o.stop_requested;
      b.progress = advance;
      write_bulk_safetensors(path, part, b);
      return;
    }
    std::vector<FileTensor> tensors;
    for (std::size_t i = begin; i < end; ++i) {
      const ParamInfo& p = *params[i];
      check_stop(o, out_dir);
      const std::int64_t n = p.numel();
      if (written_as_mxfp4(p, config, o)) {  // values drawn in the stored orientation (E, rows, cols)
        const std::vector<std::int64_t> rc = mxfp4_expert_shape(config, p.name);
        std::vector<float> values(static_cast<std::size_t>(n));
        for (float& v : values) v = static_cast<float>(o.std * rng.next());
        auto [blocks, scales] = hf_mxfp4_tensors(p.name, {p.shape[0], rc[0], rc[1]}, values);
        tensors.push_back(std::move(blocks));
        tensors.push_back(std::move(scales));
        advance(n);
        continue;
      }
      std::string bytes;
      bytes.reserve(static_cast<std::size_t>(n) * dtype_size(o.dtype));
      for (std::int64_t e = 0; e < n; ++e) {
        const double z = rng.next();
        // Norms near 1 (Gemma's stored as w of its (1 + w): near 0).
        append_value(bytes, o.dtype, static_cast<float>(is_norm(p) ? (config.gemma ? 0.0 : 1.0) + 0.1 * z : o.std * z));
      }
      tensors.push_back({p.name, std::string(dtype_name(o.dtype)), p.shape, std::move(bytes)});
      advance(n);
    }
    write_safetensors(path, tensors, o);
  };
  check_stop(o, out_dir);
  if (o.shards == 1) {
    write_shard("model.safetensors", 0, params.size());
  } else {
    // Contiguous groups of tensors, about equal in bytes.
    auto file_bytes = [&](const ParamInfo& p) {  // MXFP4: 17 bytes a block of 32
      return static_cast<std::uint64_t>(written_as_mxfp4(p, config, o) ? p.numel() / 32 * 17
                                                                       : p.numel() * static_cast<std::int64_t>(dtype_size(o.dtype)));
    };
    std::uint64_t total = 0;
    for (const ParamInfo* p : params) total += file_bytes(*p);
    Json weight_map = Json::object();
    std::size_t i = 0;
    std::uint64_t done = 0;
    for (int k = 1; k <= o.shards; ++k) {
      const std::size_t begin = i;
      const std::uint64_t target = total * static_cast<std::uint64_t>(k) / static_cast<std::uint64_t>(o.shards);
      while (i < params.size() && (done < target || k == o.shards)) {
        const ParamInfo& p = *params[i++];
        done += file_bytes(p);
        if (written_as_mxfp4(p, config, o)) {
          weight_map[p.name + kMxfp4BlocksSuffix] = shard_name(k, o.shards);
          weight_map[p.name + kMxfp4ScalesSuffix] = shard_name(k, o.shards);
        } else {
          weight_map[p.name] = shard_name(k, o.shards);
        }
      }
      write_shard(shard_name(k, o.shards), begin, i);
    }
    const Json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    write_file_atomically(out_dir + "/model.safetensors.index.json", index.dump(2) + "\n");
  }
  check_stop(o, out_dir);
  write_file_atomically(out_dir + "/config.json", config_json.dump(2) + "\n");
  return n_params;
}

}  // namespace plexus
