// Llama-family forward pass, top to bottom: embed -> layers -> final norm -> lm_head.
#include "model/llama_family.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <numbers>
#include <utility>

#include "core/error.h"
#include "kernels/cpu/isa.h"
#include "model/checkpoint.h"
#include "model/gpt_oss_mxfp4.h"
#include "model/module_tree.h"
#include "model/token_id.h"

namespace plexus {

namespace {

WeightMatrix matrix(const Checkpoint& ck, const std::string& name) {
  const TensorRef r = ck.get(name);
  WeightMatrix m{r.data, r.info->dtype, r.info->shape[0], r.info->shape.size() > 1 ? r.info->shape[1] : 1};
  m.in_out_ld = r.in_out_ld;  // GPT-2's Conv1D weights: stored (in, out), read in place
  return m;
}

// Outputs [first, first + rows) of `m` stored (in, out) (WeightMatrix::in_out), viewed in place:
// a column slice of the stored matrix.
WeightMatrix column_range(const WeightMatrix& m, std::int64_t first, std::int64_t rows) {
  assert(m.in_out() && first + rows <= m.rows);
  WeightMatrix out = m;
  out.data = static_cast<const std::uint8_t*>(m.data) + static_cast<std::size_t>(first) * dtype_size(m.dtype);
  out.rows = rows;
  return out;
}

// GPT-2's q, k and v read in place are column thirds of one stored c_attn (in, 3·H): held as the
// one (3·H, H) matrix in w.q, w.k and w.v left empty, so every copy of the layer's weights
// (WeightStore's to a device) moves c_attn once; gpt2_layer views the thirds again with
// column_range. Separate (out, in) q, k, v (quantised copies, a GGUF file) stay as they are.
void fuse_in_out_qkv(LayerWeights& w) {
  const WeightMatrix &q = w.q, &k = w.k, &v = w.v;
  if (!q.in_out() || !k.in_out() || !v.in_out() || q.dtype != k.dtype || q.dtype != v.dtype) return;
  const std::size_t es = dtype_size(q.dtype);
  const auto* at = static_cast<const std::uint8_t*>(q.data);
  const bool adjacent = k.data == at + q.rows * es && v.data == at + (q.rows + k.rows) * es &&
                        q.in_out_ld == q.rows + k.rows + v.rows && k.in_out_ld == q.in_out_ld && v.in_out_ld == q.in_out_ld;
  if (!adjacent) return;
  w.q.rows = q.in_out_ld;
  w.k = WeightMatrix{};
  w.v = WeightMatrix{};
}

// Rows [first, first + rows) of `m`, viewed in place (a part of a fused weight: Phi-3's qkv_proj, gate_up_proj).
WeightMatrix row_range(const WeightMatrix& m, std::int64_t first, std::int64_t rows) {
  return WeightMatrix{m.row(first), m.dtype, rows, m.cols};
}

// The tensor as f32 in `store` (kept there), and a view of it.
VectorView vector_f32(const Checkpoint& ck, const std::string& name, std::vector<std::vector<float>>& store) {
  const TensorRef r = ck.get(name);
  std::vector<float>& out = store.emplace_back(static_cast<std::size_t>(r.info->numel()));
  generic_kernels().to_f32(r.info->dtype, r.data, out.data(), r.info->numel());
  return VectorView{out.data(), r.info->numel()};  // moving `store`'s vectors keeps their buffers
}

// A LayerNorm's weight and bias (H each) as one f32 vector (2·H) in `store`: GPT-2's norms.
VectorView layernorm_f32(const Checkpoint& ck, const std::string& module, std::vector<std::vector<float>>& store) {
  const TensorRef w = ck.get(module + ".weight"), b = ck.get(module + ".bias");
  const std::int64_t d = w.info->numel();
  std::vector<float>& out = store.emplace_back(static_cast<std::size_t>(2 * d));
  generic_kernels().to_f32(w.info->dtype, w.data, out.data(), d);
  generic_kernels().to_f32(b.info->dtype, b.data, out.data() + d, d);  // ModuleTree checked both are (H)
  return VectorView{out.data(), 2 * d};
}

// A norm's weight as f32 in `store`; Gemma's as (1 + w), the factor its RMSNorm multiplies by
// (a GGUF file holds that already: ModelConfig::norm_weights_hold_one).
VectorView norm_vector_f32(const Checkpoint& ck, const std::string& name, const ModelConfig& c, std::vector<std::vector<float>>& store) {
  const VectorView v = vector_f32(ck, name, store);
  if (c.gemma && !c.norm_weights_hold_one) {
    for (float& x : store.back()) x += 1.0f;
  }
  return v;
}

// dst (cols, rows) = src (rows, cols) transposed, elements of `size` bytes.
void transpose_into(const std::uint8_t* src, std::int64_t rows, std::int64_t cols, std::size_t size, std::uint8_t* dst) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) std::memcpy(dst + (c * rows + r) * size, src + (r * cols + c) * size, size);
}

}  // namespace

// The model's attention geometry; YaRN's attention factor multiplies both cos and sin (Hugging
// Face scales the rotated q and k by it), so q·k, and with it the softmax scale, grows by its square.
// With partial rotary (Phi-4-mini) only the rotated dims are scaled (Hugging Face scales cos and
// sin), so the factor goes to the rope itself (AttentionShape::rope_scale) instead.
AttentionShape attention_of(const ModelConfig& c) {
  const double m = c.rope_attention_factor;
  const bool partial = c.rotary_dim() != c.head_dim;
  // Gemma scales scores by query_pre_attn_scalar^-0.5 in place of head_dim^-0.5.
  const double scaled_by = c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : static_cast<double>(c.head_dim);
  AttentionShape a{c.num_heads, c.num_kv_heads, c.head_dim, c.sliding_window,
                   static_cast<float>(1.0 / std::sqrt(scaled_by) * (partial ? 1.0 : m * m)), c.rope_interleaved};
  if (partial) a.rotary_dim = c.rotary_dim(), a.rope_scale = static_cast<float>(m);
  a.softcap = static_cast<float>(c.attn_logit_softcap);
  a.rope_tables = c.rope_local_theta > 0 ? 2 : 1;
  return a;
}

std::vector<double> rope_inv_freq(const ModelConfig& c, bool long_context) {
  const std::int64_t dim = c.rotary_dim(), half = dim / 2;  // partial rotary: the rotated dims alone
  std::vector<double> f(static_cast<std::size_t>(half));
  if (c.arch == Arch::kGpt2) return f;  // no rotary embedding: zero frequencies, the identity rotation
  for (std::int64_t i = 0; i < half; ++i) {
    f[static_cast<std::size_t>(i)] = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(dim));
  }
  switch (c.rope_scaling) {
    case RopeScaling::kNone: break;
    case RopeScaling::kLongRope: {  // Hugging Face's _compute_longrope_parameters: 1 / (factor_i · base^(2i/dim))
      const std::vector<double>& ext = long_context ? c.rope_long_factor : c.rope_short_factor;
      for (std::int64_t i = 0; i < half; ++i) f[static_cast<std::size_t>(i)] /= ext[static_cast<std::size_t>(i)];
      break;
    }
    case RopeScaling::kLinear:
      for (double& x : f) x /= c.rope_factor;
      break;
    case RopeScaling::kLlama3: {
      // Long wavelengths are slowed by `factor`, short ones kept, the band between blended.
      const double old_ctx = static_cast<double>(c.rope_original_max_position);
      const double low_wavelen = old_ctx / c.rope_low_freq_factor;
      const double high_wavelen = old_ctx / c.rope_high_freq_factor;
      for (double& x : f) {
        const double wavelen = 2.0 * std::numbers::pi / x;
        if (wavelen < high_wavelen) continue;
        if (wavelen > low_wavelen) {
          x /= c.rope_factor;
        } else {
          const double smooth = (old_ctx / wavelen - c.rope_low_freq_factor) /
                                (c.rope_high_freq_factor - c.rope_low_freq_factor);
          x = (1.0 - smooth) * x / c.rope_factor + smooth * x;
        }
      }
      break;
    }
    case RopeScaling::kYarn: {
      // Hugging Face's _compute_yarn_parameters: frequencies that turn fewer than beta_slow times
      // over the original context are interpolated (÷ factor), more than beta_fast kept, a linear
      // ramp between over the dimension index; the range is rounded outward only with truncate.
      const double d = static_cast<double>(dim), base = c.rope_theta;
      auto correction_dim = [&](double rotations) {
        return d * std::log(static_cast<double>(c.rope_original_max_position) / (rotations * 2 * std::numbers::pi)) /
               (2 * std::log(base));
      };
      double low = correction_dim(c.rope_beta_fast), high = correction_dim(c.rope_beta_slow);
      if (c.rope_truncate) low = std::floor(low), high = std::ceil(high);
      low = std::max(low, 0.0), high = std::min(high, d - 1);
      if (low == high) high += 0.001;  // as Hugging Face: no zero-width ramp
      for (std::int64_t i = 0; i < half; ++i) {
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolation = 1.0 - ramp;  // the share of the unscaled frequency
        double& x = f[static_cast<std::size_t>(i)];
        x = x / c.rope_factor * (1.0 - extrapolation) + x * extrapolation;
      }
      break;
    }
  }
  // GGUF llama3-style scaling: per-frequency divisors (ModelConfig::rope_freq_factors).
  for (std::size_t i = 0; i < c.rope_freq_factors.size() && i < f.size(); ++i) f[i] /= c.rope_freq_factors[i];
  // Partial rotary: the tables stay head_dim/2 wide; the unrotated tail has frequency 0 (the ops
  // read only AttentionShape::rotary_dim / 2 of them).
  f.resize(static_cast<std::size_t>(c.head_dim / 2), 0.0);
  return f;
}

std::vector<double> rope_table_freqs(const ModelConfig& c) {
  std::vector<double> f = rope_inv_freq(c);
  if (c.rope_local_theta > 0) {
    ModelConfig local = c;
    local.rope_theta = c.rope_local_theta, local.rope_scaling = RopeScaling::kNone, local.rope_freq_factors.clear();
    const std::vector<double> l = rope_inv_freq(local);
    f.insert(f.end(), l.begin(), l.end());
  }
  return f;
}

float embed_scale(const ModelConfig& c, DType embed_dtype) {
  if (!c.gemma) return 1;
  const float s = static_cast<float>(std::sqrt(static_cast<double>(c.hidden_size)));
  DType d = embed_dtype;
  if (d != DType::kBF16 && d != DType::kF16 && d != DType::kF32) d = c.torch_dtype.value_or(DType::kF32);
  if (d == DType::kBF16) return bf16_to_f32(f32_to_bf16(s));
  if (d == DType::kF16) return f16_to_f32(f32_to_f16(s));
  return s;
}

std::int64_t layer_vector_bytes(const ModelConfig& c) {
  auto f32 = [](std::int64_t n) { return round_up_line(n) * static_cast<std::int64_t>(sizeof(float)); };
  // input and post-attention norms (GPT-2's LayerNorms: weight and bias each), GPT-2's MLP biases
  std::int64_t b = c.arch == Arch::kGpt2 ? 2 * f32(2 * c.hidden_size) + f32(c.intermediate_size) + f32(c.hidden_size)
                                         : 2 * f32(c.hidden_size);
  if (c.qkv_bias) b += f32(c.q_dim()) + 2 * f32(c.kv_dim());
  if (c.o_bias) b += f32(c.hidden_size);
  if (c.qk_norm) b += 2 * f32(c.head_dim);
  if (c.gemma) b += 2 * f32(c.hidden_size);  // pre- and post-feedforward norms
  if (c.attention_sinks) b += f32(c.num_heads);
  if (c.moe.biases) {
    const std::int64_t E = c.moe.num_experts, Ie = c.moe.expert_intermediate_size;
    b += f32(E) + 2 * f32(E * Ie) + f32(E * c.hidden_size);
  }
  return b;
}

std::int64_t final_norm_bytes(const ModelConfig& c) {
  const std::int64_t d = c.arch == Arch::kGpt2 ? 2 * c.hidden_size : c.hidden_size;  // GPT-2: weight and bias
  return round_up_line(d) * static_cast<std::int64_t>(sizeof(float));
}

LlamaFamilyModel::LlamaFamilyModel(const ModelConfig& config, const Checkpoint& ck)
    : config_(config),
      inv_freq_(rope_table_freqs(config)),
      attention_(attention_of(config)) {
  if (config.rope_scaling == RopeScaling::kLongRope) long_inv_freq_ = rope_inv_freq(config, true);
  const ModuleTree tree = ModuleTree::from_checkpoint(config, ck);  // validates names and shapes
  embed_ = matrix(ck, "model.embed_tokens.weight");
  embed_scale_ = embed_scale(config, embed_.dtype);
  const ParamInfo* head = tree.find("lm_head.weight");
  lm_head_ = head->tied_to ? embed_ : matrix(ck, head->name);
  const bool gpt2 = config.arch == Arch::kGpt2;
  if (gpt2) positions_ = matrix(ck, "model.embed_tokens.positions");
  final_norm_ = gpt2 ? layernorm_f32(ck, "model.norm", vectors_) : norm_vector_f32(ck, "model.norm.weight", config, vectors_);
  layers_.resize(static_cast<std::size_t>(config.num_layers));
  for (int l = 0; l < config.num_layers; ++l) {
    const std::string p = ModuleTree::layer_prefix(l);
    LayerWeights& w = layers_[static_cast<std::size_t>(l)];
    if (config.fused_qkv_gate_up()) {  // Phi-3: row ranges of qkv_proj (Q + 2·KV, H) and gate_up_proj (2·I, H)
      const WeightMatrix qkv = matrix(ck, p + ".self_attn.qkv_proj.weight");
      const WeightMatrix gate_up = matrix(ck, p + ".mlp.gate_up_proj.weight");
      const std::int64_t Q = config.q_dim(), KV = config.kv_dim(), I = config.intermediate_size;
      w.q = row_range(qkv, 0, Q), w.k = row_range(qkv, Q, KV), w.v = row_range(qkv, Q + KV, KV);
      w.o = matrix(ck, p + ".self_attn.o_proj.weight");
      w.gate = row_range(gate_up, 0, I), w.up = row_range(gate_up, I, I);
      w.down = matrix(ck, p + ".mlp.down_proj.weight");
      w.input_norm = vector_f32(ck, p + ".input_layernorm.weight", vectors_);
      w.post_attention_norm = vector_f32(ck, p + ".post_attention_layernorm.weight", vectors_);
      continue;
    }
    w.q = matrix(ck, p + ".self_attn.q_proj.weight");
    w.k = matrix(ck, p + ".self_attn.k_proj.weight");
    w.v = matrix(ck, p + ".self_attn.v_proj.weight");
    w.o = matrix(ck, p + ".self_attn.o_proj.weight");
    if (config.arch == Arch::kGptOss && !config.moe.split_experts) {
      load_gpt_oss_experts(ck, l, w);
    } else if (config.moe_layer(l)) {
      const MoeNames n = moe_names(config.arch);
      w.router = matrix(ck, p + n.router + ".weight");
      w.experts.resize(static_cast<std::size_t>(config.moe.num_experts));
      for (std::size_t e = 0; e < w.experts.size(); ++e) {
        const std::string x = p + n.experts + std::to_string(e) + ".";
        w.experts[e] = {matrix(ck, x + n.gate + ".weight"), matrix(ck, x + n.up + ".weight"), matrix(ck, x + n.down + ".weight")};
      }
      if (config.moe.biases) load_split_expert_biases(ck, l, w);
    } else if (gpt2) {  // c_fc and c_proj, biased; no gate
      w.up = matrix(ck, p + ".mlp.up_proj.weight");
      w.down = matrix(ck, p + ".mlp.down_proj.weight");
      w.up_bias = vector_f32(ck, p + ".mlp.up_proj.bias", vectors_);
      w.down_bias = vector_f32(ck, p + ".mlp.down_proj.bias", vectors_);
    } else {
      w.gate = matrix(ck, p + ".mlp.gate_proj.weight");
      w.up = matrix(ck, p + ".mlp.up_proj.weight");
      w.down = matrix(ck, p + ".mlp.down_proj.weight");
    }
    if (config.qkv_bias) {
      w.q_bias = vector_f32(ck, p + ".self_attn.q_proj.bias", vectors_);
      w.k_bias = vector_f32(ck, p + ".self_attn.k_proj.bias", vectors_);
      w.v_bias = vector_f32(ck, p + ".self_attn.v_proj.bias", vectors_);
    }
    if (config.o_bias) w.o_bias = vector_f32(ck, p + ".self_attn.o_proj.bias", vectors_);
    if (config.qk_norm) {
      w.q_norm = norm_vector_f32(ck, p + ".self_attn.q_norm.weight", config, vectors_);
      w.k_norm = norm_vector_f32(ck, p + ".self_attn.k_norm.weight", config, vectors_);
    }
    if (config.attention_sinks) w.sinks = vector_f32(ck, p + ".self_attn.sinks", vectors_);
    if (gpt2) {
      fuse_in_out_qkv(w);
      w.input_norm = layernorm_f32(ck, p + ".input_layernorm", vectors_);
      w.post_attention_norm = layernorm_f32(ck, p + ".post_attention_layernorm", vectors_);
      continue;
    }
    w.input_norm = norm_vector_f32(ck, p + ".input_layernorm.weight", config, vectors_);
    w.post_attention_norm = norm_vector_f32(ck, p + ".post_attention_layernorm.weight", config, vectors_);
    if (config.gemma) {
      w.pre_feedforward_norm = norm_vector_f32(ck, p + ".pre_feedforward_layernorm.weight", config, vectors_);
      w.post_feedforward_norm = norm_vector_f32(ck, p + ".post_feedforward_layernorm.weight", config, vectors_);
    }
  }
}

LlamaFamilyModel::LlamaFamilyModel(const ModelConfig& config, ModelWeights weights)
    : config_(config),
      embed_(weights.embed),
      lm_head_(weights.lm_head),
      positions_(weights.positions),
      final_norm_(weights.final_norm),
      layers_(std::move(weights.layers)),
      inv_freq_(rope_table_freqs(config)),
      attention_(attention_of(config)) {
  if (config.rope_scaling == RopeScaling::kLongRope) long_inv_freq_ = rope_inv_freq(config, true);
  embed_scale_ = embed_scale(config, embed_.dtype);
  assert(static_cast<std::int64_t>(layers_.size()) == config.num_layers);
}

void LlamaFamilyModel::load_gpt_oss_experts(const Checkpoint& ck, int l, LayerWeights& w) {
  const std::string p = ModuleTree::layer_prefix(l) + ".mlp.";
  w.router = matrix(ck, p + "router.weight");  // (E, H)
  w.router_bias = vector_f32(ck, p + "router.bias", vectors_);
  if (!load_gpt_oss_mxfp4_experts(ck, l, w)) load_gpt_oss_dense_experts(ck, l, w);
  load_gpt_oss_expert_biases(ck, l, w);
}

void LlamaFamilyModel::load_gpt_oss_dense_experts(const Checkpoint& ck, int l, LayerWeights& w) {
  const std::string p = ModuleTree::layer_prefix(l) + ".mlp.";
  const std::int64_t E = config_.moe.num_experts, H = config_.hidden_size, Ie = config_.moe.expert_intermediate_size;
  const TensorRef gate_up = ck.get(p + "experts.gate_up_proj"), down = ck.get(p + "experts.down_proj");
  for (const TensorRef* t : {&gate_up, &down}) {
    const DType d = t->info->dtype;
    if (d != DType::kF32 && d != DType::kBF16 && d != DType::kF16) {
      throw InputError(t->path() + ": tensor '" + t->info->name + "' is " + std::string(dtype_name(d)) +
                       "; gpt-oss experts are read as f32, bf16 or f16");
    }
  }
  // gate_up_proj (E, H, 2·Ie) holds (in, out) with gate and up interleaved (gate = columns 0::2,
  // up = 1::2); down_proj (E, Ie, H) is (in, out). The engine's matrices are (out, in).
  const std::size_t es = dtype_size(gate_up.info->dtype), ds = dtype_size(down.info->dtype);
  w.experts.resize(static_cast<std::size_t>(E));
  for (std::int64_t e = 0; e < E; ++e) {
    const auto* gu = static_cast<const std::uint8_t*>(gate_up.data) + static_cast<std::size_t>(e * H * 2 * Ie) * es;  // (H, Ie, 2)
    std::vector<std::uint8_t> gate(static_cast<std::size_t>(Ie * H) * es), up(gate.size());
    for (std::int64_t h = 0; h < H; ++h) {
      for (std::int64_t i = 0; i < Ie; ++i) {
        const std::uint8_t* pair = gu + static_cast<std::size_t>((h * Ie + i) * 2) * es;
        std::memcpy(gate.data() + static_cast<std::size_t>(i * H + h) * es, pair, es);
        std::memcpy(up.data() + static_cast<std::size_t>(i * H + h) * es, pair + es, es);
      }
    }
    std::vector<std::uint8_t> dn(static_cast<std::size_t>(H * Ie) * ds);
    transpose_into(static_cast<const std::uint8_t*>(down.data) + static_cast<std::size_t>(e * Ie * H) * ds, Ie, H, ds, dn.data());
    // Moving a vector into transposed_ keeps its buffer where the views point.
    w.experts[static_cast<std::size_t>(e)] = {WeightMatrix{gate.data(), gate_up.info->dtype, Ie, H},
                                              WeightMatrix{up.data(), gate_up.info->dtype, Ie, H},
                                              WeightMatrix{dn.data(), down.info->dtype, H, Ie}};
    transposed_.push_back(std::move(gate));
    transposed_.push_back(std::move(up));
    transposed_.push_back(std::move(dn));
  }
}

bool LlamaFamilyModel::load_gpt_oss_mxfp4_experts(const Checkpoint& ck, int l, LayerWeights& w) {
  const std::string p = ModuleTree::layer_prefix(l) + ".mlp.experts.";
  const std::optional<Mxfp4Experts> gate_up = gpt_oss_mxfp4_experts(ck, config_, p + "gate_up_proj");
  const std::optional<Mxfp4Experts> down = gpt_oss_mxfp4_experts(ck, config_, p + "down_proj");
  if (!gate_up && !down) return false;
  if (!gate_up || !down) {
    const std::string mx = gate_up ? "gate_up_proj" : "down_proj", dense = gate_up ? "down_proj" : "gate_up_proj";
    throw InputError(ck.dir() + ": '" + p + mx + "' is stored as MXFP4 (_blocks, _scales) but '" + p + dense +
                     "' is not: plexus reads a layer's gpt-oss experts all MXFP4 or all f32/bf16/f16");
  }
  // Stored (E, 2·Ie, H) with the gate in rows 0::2 and the up in 1::2, and (E, H, Ie): rows are
  // outputs already, so each expert's matrices are its rows repacked, block for block.
  const std::int64_t E = gate_up->experts, Ie = gate_up->rows / 2, H = gate_up->cols;
  const std::int64_t gu_row = dtype_row_bytes(DType::kMXFP4, H), dn_row = dtype_row_bytes(DType::kMXFP4, Ie);
  w.experts.resize(static_cast<std::size_t>(E));
  for (std::int64_t e = 0; e < E; ++e) {
    std::vector<std::uint8_t> gate(static_cast<std::size_t>(Ie * gu_row)), up(gate.size()), dn(static_cast<std::size_t>(H * dn_row));
    for (std::int64_t i = 0; i < Ie; ++i) {
      gate_up->repack_row(e, 2 * i, gate.data() + i * gu_row);
      gate_up->repack_row(e, 2 * i + 1, up.data() + i * gu_row);
    }
    for (std::int64_t h = 0; h < H; ++h) down->repack_row(e, h, dn.data() + h * dn_row);
    w.experts[static_cast<std::size_t>(e)] = {WeightMatrix{gate.data(), DType::kMXFP4, Ie, H},
                                              WeightMatrix{up.data(), DType::kMXFP4, Ie, H},
                                              WeightMatrix{dn.data(), DType::kMXFP4, H, Ie}};
    transposed_.push_back(std::move(gate));  // moved, the buffers stay where the views point
    transposed_.push_back(std::move(up));
    transposed_.push_back(std::move(dn));
  }
  return true;
}

void LlamaFamilyModel::load_gpt_oss_expert_biases(const Checkpoint& ck, int l, LayerWeights& w) {
  const std::string p = ModuleTree::layer_prefix(l) + ".mlp.";
  const std::int64_t E = config_.moe.num_experts, Ie = config_.moe.expert_intermediate_size;
  // gate_up_proj_bias (E, 2·Ie) interleaved as the weights; down_proj_bias (E, H).
  const VectorView gu_bias = vector_f32(ck, p + "experts.gate_up_proj_bias", vectors_);
  std::vector<float> gate_bias(static_cast<std::size_t>(E * Ie)), up_bias(gate_bias.size());
  for (std::int64_t i = 0; i < E * Ie; ++i) {
    gate_bias[static_cast<std::size_t>(i)] = gu_bias.data[2 * i];
    up_bias[static_cast<std::size_t>(i)] = gu_bias.data[2 * i + 1];
  }
  w.expert_gate_bias = VectorView{gate_bias.data(), E * Ie};
  w.expert_up_bias = VectorView{up_bias.data(), E * Ie};
  vectors_.push_back(std::move(gate_bias));
  vectors_.push_back(std::move(up_bias));
  w.expert_down_bias = vector_f32(ck, p + "experts.down_proj_bias", vectors_);
}

void LlamaFamilyModel::load_split_expert_biases(const Checkpoint& ck, int l, LayerWeights& w) {
  const std::string p = ModuleTree::layer_prefix(l) + ".mlp.";
  w.router_bias = vector_f32(ck, p + "router.bias", vectors_);                     // (E)
  w.expert_gate_bias = vector_f32(ck, p + "experts.gate_proj_bias", vectors_);     // (E, Ie)
  w.expert_up_bias = vector_f32(ck, p + "experts.up_proj_bias", vectors_);         // (E, Ie)
  w.expert_down_bias = vector_f32(ck, p + "experts.down_proj_bias", vectors_);     // (E, H)
}

std::vector<const WeightMatrix*> layer_matrices(const LayerWeights& w) {
  std::vector<const WeightMatrix*> out = {&w.q, &w.k, &w.v, &w.o};
  if (w.experts.empty()) {
    out.insert(out.end(), {&w.gate, &w.up, &w.down});
    return out;
  }
  out.push_back(&w.router);
  for (const ExpertWeights& e : w.experts) out.insert(out.end(), {&e.gate, &e.up, &e.down});
  return out;
}

std::vector<WeightMatrix*> layer_matrices(LayerWeights& w) {
  std::vector<WeightMatrix*> out;
  for (const WeightMatrix* m : layer_matrices(std::as_const(w))) out.push_back(const_cast<WeightMatrix*>(m));
  return out;
}

std::int64_t LlamaFamilyModel::weight_bytes() const {
  std::int64_t b = embed_.bytes() + (lm_head_.data == embed_.data ? 0 : lm_head_.bytes());
  for (const LayerWeights& w : layers_) {
    for (const WeightMatrix* m : layer_matrices(w)) b += m->bytes();
  }
  return b;
}

std::span<const double> LlamaFamilyModel::inv_freq(std::span<const std::int32_t> pos) const {
  if (long_inv_freq_.empty()) return inv_freq_;
  std::int64_t length = 0;  // the longest sequence the batch reaches: its largest position + 1
  for (const std::int32_t p : pos) length = std::max<std::int64_t>(length, std::int64_t{p} + 1);
  return length > config_.rope_original_max_position ? std::span<const double>(long_inv_freq_) : inv_freq_;
}

void LlamaFamilyModel::embed(ComputeOps& ops, std::span<const std::int32_t> ids, float* x) const {
  embed(ops, embed_, ids, x);
}

void LlamaFamilyModel::embed(ComputeOps& ops, const WeightMatrix& table, std::span<const std::int32_t> ids,
                             float* x) const {
  for (const std::int32_t id : ids) check_token_id(id, table.rows);
  ops.embed(table, ids, x);
  if (config_.gemma) ops.scale(x, embed_scale_, static_cast<std::int64_t>(ids.size()) * table.cols);  // x (n, H) · √H
}

void LlamaFamilyModel::embed(ComputeOps& ops, const WeightMatrix& table, const WeightMatrix& positions,
                             const TokenBatch& batch, Workspace& ws, float* x) const {
  embed(ops, table, batch.ids, x);
  if (config_.arch != Arch::kGpt2) return;
  for (const std::int32_t p : batch.pos) {
    if (p < 0 || p >= positions.rows) {
      throw InputError("position " + std::to_string(p) + " is beyond GPT-2's " + std::to_string(positions.rows) +
                       " learned positions (n_positions in config.json)");
    }
  }
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  ops.embed(positions, batch.pos, ws.xb.data());  // (n, H) the positions' rows
  ops.add(x, ws.xb.data(), n * config_.hidden_size);
}

void LlamaFamilyModel::layer(ComputeOps& ops, int l, float* x, const TokenBatch& batch, Workspace& ws) const {
  layer(ops, l, layers_[static_cast<std::size_t>(l)], x, batch, ws);
}

void LlamaFamilyModel::layer(ComputeOps& ops, int l, const LayerWeights& w, float* x, const TokenBatch& batch,
                             Workspace& ws) const {
  if (config_.arch == Arch::kGpt2) {
    gpt2_layer(ops, l, w, x, batch, ws);
    return;
  }
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  const std::int64_t H = config_.hidden_size, Q = config_.q_dim(), KV = config_.kv_dim();
  const std::int64_t hd = config_.head_dim;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  auto add_bias = [&ops, n](float* y, VectorView bias) {
    if (!bias.empty()) ops.add_bias(y, bias.data, n, bias.size);
  };

  // Attention block: xb = norm(x); q, k, v = xb·Wᵀ (+ b); q, k = rope(norm(q, k)).
  ops.rmsnorm(x, w.input_norm.data, n, H, eps, ws.xb.data());
  const MatmulPart qkv[] = {{w.q, ws.q.data(), Q}, {w.k, ws.k.data(), KV}, {w.v, ws.v.data(), KV}};
  ops.matmul(qkv, ws.xb.data(), n, H);
  add_bias(ws.q.data(), w.q_bias);  // (n, Q)
  add_bias(ws.k.data(), w.k_bias);  // (n, KV)
  add_bias(ws.v.data(), w.v_bias);  // (n, KV)
  if (config_.qk_norm) {
    ops.rmsnorm(ws.q.data(), w.q_norm.data, n * config_.num_heads, hd, eps, ws.q.data());
    ops.rmsnorm(ws.k.data(), w.k_norm.data, n * config_.num_kv_heads, hd, eps, ws.k.data());
  }
  const AttentionShape attention = layer_attention(l, w);
  ops.rope_store_kv(l, batch, attention, ws);
  ops.attention(l, batch, attention, ws);  // ws.att (n, Q)
  // x += att·Woᵀ (+ b), through xb as the product's destination.
  const MatmulPart o[] = {{w.o, ws.xb.data(), H}};
  ops.matmul(o, ws.att.data(), n, Q);
  add_bias(ws.xb.data(), w.o_bias);
  if (config_.gemma) {
    gemma_block_rest(ops, w, x, n, ws);
    return;
  }
  // MLP block on xb = norm(x): the attention's residual add and this norm in one step.
  ops.add_rmsnorm(x, ws.xb.data(), w.post_attention_norm.data, n, H, eps, ws.xb.data());
  mlp(ops, w, x, n, ws);
}

void LlamaFamilyModel::gpt2_layer(ComputeOps& ops, int l, const LayerWeights& w, float* x, const TokenBatch& batch,
                                  Workspace& ws) const {
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  // Q = KV = H, but a tensor-parallel shard's are its heads' share (model/tensor_split.h).
  const std::int64_t H = config_.hidden_size, I = config_.intermediate_size, Q = config_.q_dim(), KV = config_.kv_dim();
  const float eps = static_cast<float>(config_.rms_norm_eps);  // layer_norm_epsilon
  // Attention: xb = ln_1(x); q, k, v = xb·Wᵀ + b (c_attn's thirds); no rotation (zero frequencies).
  ops.layernorm(x, w.input_norm.data, w.input_norm.data + H, n, H, eps, ws.xb.data());
  const bool fused = w.k.data == nullptr;  // c_attn read in place: q, k, v its column ranges (fuse_in_out_qkv)
  const WeightMatrix wq = fused ? column_range(w.q, 0, Q) : w.q, wk = fused ? column_range(w.q, Q, KV) : w.k,
                     wv = fused ? column_range(w.q, Q + KV, KV) : w.v;
  const MatmulPart qkv[] = {{wq, ws.q.data(), Q}, {wk, ws.k.data(), KV}, {wv, ws.v.data(), KV}};
  ops.matmul(qkv, ws.xb.data(), n, H);
  ops.add_bias(ws.q.data(), w.q_bias.data, n, Q);
  ops.add_bias(ws.k.data(), w.k_bias.data, n, KV);
  ops.add_bias(ws.v.data(), w.v_bias.data, n, KV);
  const AttentionShape attention = layer_attention(l, w);
  ops.rope_store_kv(l, batch, attention, ws);
  ops.attention(l, batch, attention, ws);  // ws.att (n, Q)
  // x += att·Woᵀ + b (attn.c_proj; under --tp the ranks' partial products summed before the bias)
  const MatmulPart o[] = {{w.o, ws.xb.data(), H}};
  ops.matmul(o, ws.att.data(), n, Q);
  ops.add_bias(ws.xb.data(), w.o_bias.data, n, H);
  ops.add(x, ws.xb.data(), n * H);
  // MLP: x += gelu_tanh(ln_2(x)·Wfcᵀ + b)·Wprojᵀ + b
  ops.layernorm(x, w.post_attention_norm.data, w.post_attention_norm.data + H, n, H, eps, ws.xb.data());
  const MatmulPart up[] = {{w.up, ws.up.data(), I}};
  ops.matmul(up, ws.xb.data(), n, H);
  ops.add_bias(ws.up.data(), w.up_bias.data, n, I);
  ops.gelu_tanh(ws.up.data(), n * I);  // (n, I) in place
  const MatmulPart down[] = {{w.down, ws.xb.data(), H}};
  ops.matmul(down, ws.up.data(), n, I);
  ops.add_bias(ws.xb.data(), w.down_bias.data, n, H);
  ops.add(x, ws.xb.data(), n * H);
}

AttentionShape LlamaFamilyModel::layer_attention(int l, const LayerWeights& w) const {
  AttentionShape a = attention_;
  a.window = config_.layer_window(l);
  a.sinks = w.sinks.data;
  a.rope_table = config_.local_rope_layer(l) ? 1 : 0;
  return a;
}

void LlamaFamilyModel::gemma_block_rest(ComputeOps& ops, const LayerWeights& w, float* x, std::int64_t n, Workspace& ws) const {
  const std::int64_t H = config_.hidden_size, I = config_.intermediate_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  // x += post_attention_norm(att·Woᵀ); xb = pre_feedforward_norm(x).
  ops.rmsnorm(ws.xb.data(), w.post_attention_norm.data, n, H, eps, ws.xb.data());
  ops.add_rmsnorm(x, ws.xb.data(), w.pre_feedforward_norm.data, n, H, eps, ws.xb.data());
  // gate (n, I) = gelu_tanh(xb·Wgᵀ) · xb·Wuᵀ; x += post_feedforward_norm(gate·Wdᵀ).
  const MatmulPart gate_up[] = {{w.gate, ws.gate.data(), I}, {w.up, ws.up.data(), I}};
  ops.matmul(gate_up, ws.xb.data(), n, H);
  ops.gelu_tanh_mul(ws.gate.data(), ws.up.data(), ws.gate.data(), n * I);
  const MatmulPart down[] = {{w.down, ws.xb.data(), H}};
  ops.matmul(down, ws.gate.data(), n, I);
  ops.rmsnorm(ws.xb.data(), w.post_feedforward_norm.data, n, H, eps, ws.xb.data());
  ops.add(x, ws.xb.data(), n * H);
}

void LlamaFamilyModel::mlp(ComputeOps& ops, const LayerWeights& w, float* x, std::int64_t n, Workspace& ws) const {
  const std::int64_t H = config_.hidden_size;
  if (!w.experts.empty()) {
    // Mixture: router logits (n, E) = xb·Wrᵀ; each token's top k experts by softmax probability
    // (renormalised to sum 1 where the config says so); x += Σ_j p_j · expert_j(xb).
    const std::int64_t E = config_.moe.num_experts, k = config_.moe.experts_per_token;
    const MatmulPart router[] = {{w.router, ws.router.data(), E}};
    ops.matmul(router, ws.xb.data(), n, H);
    MoeRouting routing{E, k, config_.moe.normalize_top_k};
    if (config_.moe.biases) {  // gpt-oss: logits + bias, softmax of the top k, clamped SwiGLU experts with biases
      ops.add_bias(ws.router.data(), w.router_bias.data, n, E);
      routing.top_k_then_softmax = config_.moe.top_k_then_softmax;
      routing.swiglu_alpha = static_cast<float>(config_.moe.swiglu_alpha);
      routing.swiglu_limit = static_cast<float>(config_.moe.swiglu_limit);
      routing.gate_bias = w.expert_gate_bias.data, routing.up_bias = w.expert_up_bias.data;
      routing.down_bias = w.expert_down_bias.data;
    }
    ops.moe_route(ws.router.data(), n, routing, ws);
    ops.moe_experts(w.experts, ws.xb.data(), n, routing, ws.moe_out.data(), ws);
    ops.add(x, ws.moe_out.data(), n * H);
    return;
  }
  // Dense: x += (silu(xb·Wgᵀ) * xb·Wuᵀ)·Wdᵀ.
  const std::int64_t I = config_.intermediate_size;
  ops.matmul_silu_mul({w.gate, ws.gate.data(), I}, {w.up, ws.up.data(), I}, ws.xb.data(), n, H);
  const MatmulPart down[] = {{w.down, ws.xb.data(), H}};
  ops.matmul(down, ws.gate.data(), n, I);
  ops.add(x, ws.xb.data(), n * H);
}

void LlamaFamilyModel::head(ComputeOps& ops, float* x, std::int64_t n, float* logits) const {
  head(ops, lm_head_, final_norm_, x, n, logits);
}

void LlamaFamilyModel::head(ComputeOps& ops, const WeightMatrix& lm_head, VectorView final_norm, float* x,
                            std::int64_t n, float* logits) const {
  const std::int64_t H = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  if (config_.arch == Arch::kGpt2) ops.layernorm(x, final_norm.data, final_norm.data + H, n, H, eps, x);  // ln_f
  else ops.rmsnorm(x, final_norm.data, n, H, eps, x);
  const MatmulPart p[] = {{lm_head, logits, lm_head.rows}};
  ops.matmul(p, x, n, config_.hidden_size);
  if (config_.final_logit_softcap > 0) ops.softcap(logits, static_cast<float>(config_.final_logit_softcap), n * lm_head.rows);
}

}  // namespace plexus
