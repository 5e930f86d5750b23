// A model's config.json, parsed and checked: the hyper-parameters every other part reads.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compute/layer_shape.h"
#include "core/dtype.h"
#include "core/json.h"

namespace plexus {

enum class Arch { kLlama, kMistral, kQwen2, kQwen3, kMixtral, kQwen3Moe, kGptOss, kPhi3, kGemma2, kGemma3, kGpt2 };

// A mixture-of-experts MLP (Mixtral, Qwen3-MoE): a router scores every expert for each token,
// the token runs through the best `experts_per_token` of them, and their outputs are summed with
// the router's probabilities as weights. num_experts 0: a dense model.
struct MoeConfig {
  std::int64_t num_experts = 0;        // E
  std::int64_t experts_per_token = 0;  // k (num_experts_per_tok)
  std::int64_t expert_intermediate_size = 0;  // an expert's MLP width (Mixtral: intermediate_size; Qwen3-MoE: moe_intermediate_size)
  bool normalize_top_k = true;  // the k probabilities rescaled to sum to 1 (Mixtral always; Qwen3-MoE norm_topk_prob)
  std::int64_t sparse_step = 1;              // Qwen3-MoE decoder_sparse_step: layer l is sparse when (l + 1) % step == 0
  std::vector<std::int64_t> mlp_only_layers;  // Qwen3-MoE: layers that keep a dense MLP
  // gpt-oss (GptOssTopKRouter, GptOssExperts): the router's logits carry a bias and the k largest
  // are softmaxed among themselves (top-k, then softmax); each expert has biases and the clamped
  // activation (up + 1) · gate · sigmoid(alpha · gate), gate ≤ limit, |up| ≤ limit, in place of
  // silu(gate) · up. swiglu_limit 0: the SiLU-gated expert of Mixtral and Qwen3-MoE.
  bool top_k_then_softmax = false;
  bool biases = false;  // router bias (E) and expert biases
  // gpt-oss read from GGUF (llama.cpp's layout): each expert's gate, up and down apart, as
  // Qwen3-MoE's (….mlp.experts.E.{gate,up,down}_proj.weight), the biases as
  // ….mlp.experts.{gate,up,down}_proj_bias (E, Ie | Ie | H), in place of Hugging Face's fused
  // gate_up_proj (E, H, 2·Ie, gate and up interleaved) and down_proj (E, Ie, H).
  bool split_experts = false;
  double swiglu_alpha = 0, swiglu_limit = 0;
};

// rope_scaling as Hugging Face writes it; kNone when absent.
// kLongRope: Phi-3's LongRoPE ("longrope", formerly "su"): per-frequency divisors, the short
// factors up to rope_original_max_position positions and the long ones beyond (rope_inv_freq).
enum class RopeScaling { kNone, kLinear, kLlama3, kYarn, kLongRope };

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string architecture;  // e.g. "LlamaForCausalLM"
  std::string model_type;    // e.g. "llama"
  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t vocab_size = 0;
  std::int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling = RopeScaling::kNone;
  double rope_factor = 1.0;
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  std::int64_t rope_original_max_position = 8192;
  // YaRN (Hugging Face's _compute_yarn_parameters): the correction range from beta_fast/beta_slow,
  // rounded outward unless truncate is false; cos and sin are multiplied by the attention factor
  // (given, or 0.1·ln(factor) + 1, or the mscale/mscale_all_dim ratio).
  double rope_beta_fast = 32, rope_beta_slow = 1;
  bool rope_truncate = true;
  double rope_attention_factor = 1;  // 1 for every rope but YaRN and LongRoPE
  // LongRoPE (Phi-3): the divisors of inv_freq, rotary_dim()/2 each; the long ones once a batch's
  // sequence runs past rope_original_max_position positions.
  std::vector<double> rope_short_factor, rope_long_factor;
  // Phi-3 (Phi-4-mini 0.75): RoPE turns only the first rotary_dim() = int(head_dim ·
  // partial_rotary_factor) dims of each head (rotate-half over them); the rest pass unrotated.
  double partial_rotary_factor = 1;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;     // Qwen2 always; Llama with attention_bias
  bool o_bias = false;       // Llama with attention_bias
  bool qk_norm = false;      // Qwen3
  std::int64_t sliding_window = 0;  // 0 = full attention
  // Per layer (gpt-oss layer_types): true where the layer attends within sliding_window, false
  // for full attention. Empty: every layer uses sliding_window.
  std::vector<bool> sliding_layers;
  bool attention_sinks = false;  // gpt-oss: a learned logit per head in each softmax's denominator
  // RoPE rotates pairs (2i, 2i+1) of each head instead of (i, i + head_dim/2): Llama GGUF files,
  // whose q/k rows llama.cpp's converter permuted into that order (q·k is unchanged, so the
  // weights are used as stored). False for every Hugging Face checkpoint.
  bool rope_interleaved = false;
  // Per-frequency divisors of the rope inverse frequencies (inv_freq[i] / factors[i]), head_dim/2
  // of them: GGUF files store llama3-style scaling this way (tensor rope_freqs.weight). Empty
  // otherwise.
  std::vector<double> rope_freq_factors;
  std::optional<std::int64_t> bos_token_id;
  std::vector<std::int64_t> eos_token_ids;
  std::optional<DType> torch_dtype;
  MoeConfig moe;  // num_experts 0 for a dense model
  // Gemma 2 / Gemma 3 (all off for every other architecture): embeddings × √hidden (rounded to
  // the checkpoint's dtype), RMSNorm weights used as (1 + w), a GeGLU MLP (tanh GELU), norms after
  // the attention and the MLP (post_attention_layernorm on the attention's output,
  // pre/post_feedforward_layernorm around the MLP), the attention scaled by
  // query_pre_attn_scalar^-0.5, logits soft-capped as tanh(s / cap) · cap (0: not capped).
  bool gemma = false;
  double query_pre_attn_scalar = 0;   // 0: head_dim
  double attn_logit_softcap = 0;      // attention scores, before mask and softmax (Gemma 2)
  double final_logit_softcap = 0;     // the head's logits (Gemma 2)
  // Gemma 3: sliding layers rotate with this base and no rope_scaling (rope_local_base_freq);
  // 0: every layer uses rope_theta and rope_scaling.
  double rope_local_theta = 0;
  // Gemma read from GGUF: the norm weights are stored as (1 + w) (llama.cpp's converter adds the
  // 1), so they are used as stored. False for every Hugging Face checkpoint.
  bool norm_weights_hold_one = false;

  bool is_moe() const { return moe.num_experts > 0; }
  // Whether decoder layer l's MLP is a mixture of experts (else a dense MLP of intermediate_size).
  bool moe_layer(std::int64_t l) const;
  // The widest MLP of any layer: what the workspace's gate/up buffers hold per token.
  std::int64_t max_mlp_width() const;
  // The attention window of decoder layer l (0: the whole context).
  std::int64_t layer_window(std::int64_t l) const;

  // The rotated dims of each head (partial_rotary_factor; even): head_dim for whole-head rope.
  std::int64_t rotary_dim() const;
  // Phi-3: q, k, v in one self_attn.qkv_proj (q_dim + 2·kv_dim, H) and gate, up in one
  // mlp.gate_up_proj (2·I, H), viewed in place as row ranges.
  bool fused_qkv_gate_up() const { return arch == Arch::kPhi3; }

  std::int64_t q_dim() const { return num_heads * head_dim; }
  std::int64_t kv_dim() const { return num_kv_heads * head_dim; }
  LayerShape layer_shape() const;
  // Whether layer l rotates with the local rope table (Gemma 3 sliding layers).
  bool local_rope_layer(std::int64_t l) const { return rope_local_theta > 0 && layer_window(l) > 0; }
};

// Reads and validates MODEL_DIR/config.json (or the file itself; a .gguf file: its metadata). Throws InputError naming the
// file and field: missing fields, unknown architectures, inconsistent head counts.
ModelConfig load_model_config(const std::string& path);
// Throws InputError "model 'PATH' not found" when PATH does not exist, naming the nearest
// sibling, or for an "org/name" id the Hugging Face cache (model/model_location.h).
void require_model_path(const std::string& path);
ModelConfig parse_model_config(const Json& j, const std::string& where);
// GPT-2 (GPT2LMHeadModel, model/gpt2_config.cpp): config.json's own names (n_embd, n_layer,
// n_head, n_positions, n_inner, layer_norm_epsilon, activation_function) into a ModelConfig:
// full multi-head attention with q/k/v/o biases, no rotary embedding, LayerNorm with bias (eps in
// rms_norm_eps), a biased tanh-GELU MLP of width intermediate_size, learned positions
// (max_position_embeddings of them), tied embeddings. InputError naming a field plexus does not
// implement (scale_attn_by_inverse_layer_idx, reorder_and_upcast_attn true, another activation).
ModelConfig parse_gpt2_config(const Json& j, const std::string& where);

// The range of each float hyper-parameter, one rule whether it comes from config.json or from
// GGUF metadata: `key` is its config.json name (rms_norm_eps, rope_theta, partial_rotary_factor,
// and rope_scaling's factor, low_freq_factor, high_freq_factor). Returns `value`, or throws
// InputError "WHERE: SHOWN is VALUE; it must be ..." naming `shown` (the key as the file spells
// it: "rope_scaling.factor", "qwen3.rope.freq_base") for NaN, infinities and values out of range.
double check_float_hyper_parameter(std::string_view key, double value, const std::string& where, const std::string& shown);

// layer_types (gpt-oss, Gemma): "sliding_attention" | "full_attention" for each layer, into
// c.sliding_layers; absent or null, every `full_every`-th layer full ((l + 1) % full_every == 0) and
// the others sliding. InputError naming the field for a list of the wrong length or entry.
void parse_layer_types(const Json& j, const std::string& where, std::int64_t full_every, ModelConfig& c);

std::string_view arch_name(Arch a);  // "LlamaForCausalLM", ...

}  // namespace plexus
