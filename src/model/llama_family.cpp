// Llama-family forward pass, top to bottom: embed -> layers -> final norm -> lm_head.
#include "model/llama_family.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "model/token_id.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "model/checkpoint.h"
#include "model/module_tree.h"

namespace plexus {

namespace {

WeightMatrix matrix(const Checkpoint& ck, const std::string& name) {
  const TensorRef r = ck.get(name);
  return WeightMatrix{r.data, r.info->dtype, r.info->shape[0], r.info->shape.size() > 1 ? r.info->shape[1] : 1};
}

// The tensor as f32 in `store` (kept there), and a view of it.
VectorView vector_f32(const Checkpoint& ck, const std::string& name, std::vector<std::vector<float>>& store) {
  const TensorRef r = ck.get(name);
  std::vector<float>& out = store.emplace_back(static_cast<std::size_t>(r.info->numel()));
  generic_kernels().to_f32(r.info->dtype, r.data, out.data(), r.info->numel());
  return VectorView{out.data(), r.info->numel()};  // moving `store`'s vectors keeps their buffers
}

void add_bias(float* y, VectorView bias, std::int64_t n, std::int64_t d) {
  if (bias.empty()) return;
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t i = 0; i < d; ++i) y[t * d + i] += bias.data[i];
}

}  // namespace

std::vector<double> rope_inv_freq(const ModelConfig& c) {
  const std::int64_t half = c.head_dim / 2;
  std::vector<double> f(static_cast<std::size_t>(half));
  for (std::int64_t i = 0; i < half; ++i) {
    f[static_cast<std::size_t>(i)] = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(c.head_dim));
  }
  switch (c.rope_scaling) {
    case RopeScaling::kNone: break;
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
  }
  return f;
}

namespace {
// Element counts of the workspace's buffers, in declaration order.
std::vector<std::int64_t> workspace_sizes(const ModelConfig& c, std::int64_t max_tokens, std::int64_t max_context,
                                          int n_threads) {
  return {max_tokens * c.hidden_size, max_tokens * c.q_dim(), max_tokens * c.kv_dim(), max_tokens * c.kv_dim(),
          max_tokens * c.q_dim(), max_tokens * c.intermediate_size, max_tokens * c.intermediate_size,
          max_tokens * c.head_dim / 2, max_tokens * c.head_dim / 2,
          n_threads * (c.num_heads / c.num_kv_heads) * max_context};
}
constexpr std::int64_t kFloatsPerLine = 16;  // each buffer starts on a 64-byte line
std::int64_t round_up_line(std::int64_t n) { return (n + kFloatsPerLine - 1) / kFloatsPerLine * kFloatsPerLine; }
}  // namespace

std::int64_t Workspace::bytes_for(const ModelConfig& c, std::int64_t max_tokens, std::int64_t max_context, int n_threads) {
  std::int64_t floats = 0;
  for (std::int64_t n : workspace_sizes(c, max_tokens, max_context, n_threads)) floats += round_up_line(n);
  return floats * static_cast<std::int64_t>(sizeof(float));
}

Workspace::Workspace(const ModelConfig& c, std::int64_t max_tokens, std::int64_t max_context, int n_threads, float* memory)
    : max_tokens_(max_tokens), max_context_(max_context) {
  if (memory == nullptr) {
    owned_.resize(static_cast<std::size_t>(bytes_for(c, max_tokens, max_context, n_threads) / sizeof(float)));
    memory = owned_.data();
  }
  std::span<float>* fields[] = {&xb, &q, &k, &v, &att, &gate, &up, &rope_cos, &rope_sin, &scores};
  const std::vector<std::int64_t> sizes = workspace_sizes(c, max_tokens, max_context, n_threads);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    *fields[i] = std::span<float>(memory, static_cast<std::size_t>(sizes[i]));
    memory += round_up_line(sizes[i]);
  }
}

LlamaFamilyModel::LlamaFamilyModel(const ModelConfig& config, const Checkpoint& ck)
    : config_(config), inv_freq_(rope_inv_freq(config)) {
  const ModuleTree tree = ModuleTree::from_checkpoint(config, ck);  // validates names and shapes
  embed_ = matrix(ck, "model.embed_tokens.weight");
  const ParamInfo* head = tree.find("lm_head.weight");
  lm_head_ = head->tied_to ? embed_ : matrix(ck, head->name);
  final_norm_ = vector_f32(ck, "model.norm.weight", vectors_);
  layers_.resize(static_cast<std::size_t>(config.num_layers));
  for (int l = 0; l < config.num_layers; ++l) {
    const std::string p = ModuleTree::layer_prefix(l);
    LayerWeights& w = layers_[static_cast<std::size_t>(l)];
    w.q = matrix(ck, p + ".self_attn.q_proj.weight");
    w.k = matrix(ck, p + ".self_attn.k_proj.weight");
    w.v = matrix(ck, p + ".self_attn.v_proj.weight");
    w.o = matrix(ck, p + ".self_attn.o_proj.weight");
    w.gate = matrix(ck, p + ".mlp.gate_proj.weight");
    w.up = matrix(ck, p + ".mlp.up_proj.weight");
    w.down = matrix(ck, p + ".mlp.down_proj.weight");
    if (config.qkv_bias) {
      w.q_bias = vector_f32(ck, p + ".self_attn.q_proj.bias", vectors_);
      w.k_bias = vector_f32(ck, p + ".self_attn.k_proj.bias", vectors_);
      w.v_bias = vector_f32(ck, p + ".self_attn.v_proj.bias", vectors_);
    }
    if (config.o_bias) w.o_bias = vector_f32(ck, p + ".self_attn.o_proj.bias", vectors_);
    if (config.qk_norm) {
      w.q_norm = vector_f32(ck, p + ".self_attn.q_norm.weight", vectors_);
      w.k_norm = vector_f32(ck, p + ".self_attn.k_norm.weight", vectors_);
    }
    w.input_norm = vector_f32(ck, p + ".input_layernorm.weight", vectors_);
    w.post_attention_norm = vector_f32(ck, p + ".post_attention_layernorm.weight", vectors_);
  }
}

std::int64_t LlamaFamilyModel::weight_bytes() const {
  std::int64_t b = embed_.bytes() + (lm_head_.data == embed_.data ? 0 : lm_head_.bytes());
  for (const LayerWeights& w : layers_) {
    for (const WeightMatrix* m : {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down}) b += m->bytes();
  }
  return b;
}

void LlamaFamilyModel::embed(const Compute& c, std::span<const std::int32_t> ids, float* x) const {
  embed(c, embed_, ids, x);
}

void LlamaFamilyModel::embed(const Compute& c, const WeightMatrix& table, std::span<const std::int32_t> ids,
                             float* x) const {
  const std::int64_t H = config_.hidden_size;
  for (std::size_t t = 0; t < ids.size(); ++t) {
    check_token_id(ids[t], table.rows);
    c.k.to_f32(table.dtype, table.row(ids[t]), x + static_cast<std::int64_t>(t) * H, H);
  }
}

void LlamaFamilyModel::prepare_rope(const TokenBatch& batch, Workspace& ws) const {
  const std::int64_t half = config_.head_dim / 2;
  for (std::size_t t = 0; t < batch.pos.size(); ++t) {
    for (std::int64_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(batch.pos[t]) * inv_freq_[static_cast<std::size_t>(i)];
      ws.rope_cos[t * half + i] = static_cast<float>(std::cos(a));
      ws.rope_sin[t * half + i] = static_cast<float>(std::sin(a));
    }
  }
}

void LlamaFamilyModel::layer(const Compute& c, int l, float* x, const TokenBatch& batch, Workspace& ws) const {
  layer(c, l, layers_[static_cast<std::size_t>(l)], x, batch, ws);
}

void LlamaFamilyModel::layer(const Compute& c, int l, const LayerWeights& w, float* x, const TokenBatch& batch,
                             Workspace& ws) const {
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  const std::int64_t H = config_.hidden_size, Q = config_.q_dim(), KV = config_.kv_dim(), I = config_.intermediate_size;
  const std::int64_t hd = config_.head_dim, half = hd / 2;
  const float eps = static_cast<float>(config_.rms_norm_eps);

  // Attention block: xb = norm(x); q, k, v = xb·Wᵀ (+ b); q, k = rope(norm(q, k)).
  rmsnorm(c.k, x, w.input_norm.data, n, H, eps, ws.xb.data());
  const MatmulPart qkv[] = {{w.q, ws.q.data(), Q}, {w.k, ws.k.data(), KV}, {w.v, ws.v.data(), KV}};
  matmul(c.k, c.pool, qkv, ws.xb.data(), n, H);
  add_bias(ws.q.data(), w.q_bias, n, Q);
  add_bias(ws.k.data(), w.k_bias, n, KV);
  add_bias(ws.v.data(), w.v_bias, n, KV);
  if (config_.qk_norm) {
    rmsnorm(c.k, ws.q.data(), w.q_norm.data, n * config_.num_heads, hd, eps, ws.q.data());
    rmsnorm(c.k, ws.k.data(), w.k_norm.data, n * config_.num_kv_heads, hd, eps, ws.k.data());
  }
  for (std::int64_t t = 0; t < n; ++t) {
    const float* cs = ws.rope_cos.data() + t * half;
    const float* sn = ws.rope_sin.data() + t * half;
    rope(ws.q.data() + t * Q, config_.num_heads, hd, cs, sn);
    rope(ws.k.data() + t * KV, config_.num_kv_heads, hd, cs, sn);
    // Store this token's keys and values at its position in its sequence's cache.
    KvCache& cache = *batch.cache[static_cast<std::size_t>(t)];
    const std::int64_t p = batch.pos[static_cast<std::size_t>(t)];
    for (std::int64_t g = 0; g < config_.num_kv_heads; ++g) {
      std::copy_n(ws.k.data() + t * KV + g * hd, hd, cache.keys(l, g) + p * hd);
      std::copy_n(ws.v.data() + t * KV + g * hd, hd, cache.values(l, g) + p * hd);
    }
  }
  attention(c, l, batch, ws);
  // x += att·Woᵀ (+ b), through xb as the product's destination.
  const MatmulPart o[] = {{w.o, ws.xb.data(), H}};
  matmul(c.k, c.pool, o, ws.att.data(), n, Q);
  add_bias(ws.xb.data(), w.o_bias, n, H);
  for (std::int64_t i = 0; i < n * H; ++i) x[i] += ws.xb[static_cast<std::size_t>(i)];

  // MLP block: x += (silu(xb·Wgᵀ) * xb·Wuᵀ)·Wdᵀ with xb = norm(x).
  rmsnorm(c.k, x, w.post_attention_norm.data, n, H, eps, ws.xb.data());
  const MatmulPart gate_up[] = {{w.gate, ws.gate.data(), I}, {w.up, ws.up.data(), I}};
  matmul(c.k, c.pool, gate_up, ws.xb.data(), n, H);
  silu_mul(c.k, c.pool, ws.gate.data(), ws.up.data(), ws.gate.data(), n * I);
  const MatmulPart down[] = {{w.down, ws.xb.data(), H}};
  matmul(c.k, c.pool, down, ws.gate.data(), n, I);
  for (std::int64_t i = 0; i < n * H; ++i) x[i] += ws.xb[static_cast<std::size_t>(i)];
}

void LlamaFamilyModel::attention(const Compute& c, int l, const TokenBatch& batch, Workspace& ws) const {
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  const std::int64_t hd = config_.head_dim, Q = config_.q_dim();
  const std::int64_t group = config_.num_heads / config_.num_kv_heads;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  const std::int64_t window = config_.sliding_window;
  const std::int64_t nkv = config_.num_kv_heads;
  // One chunk per (token, kv head): the `group` query heads that share a kv head read its keys
  // and values together. Causal rows of different lengths balance by chunk claiming.
  auto task = [&](std::int64_t item, int thread) {
    const std::int64_t t = item / nkv, g = item % nkv;
    KvCache& cache = *batch.cache[static_cast<std::size_t>(t)];
    const std::int64_t p = batch.pos[static_cast<std::size_t>(t)];
    const std::int64_t first = window > 0 ? std::max<std::int64_t>(0, p - window + 1) : 0;
    const std::int64_t n_keys = p + 1 - first;
    float* scores = ws.scores.data() + thread * group * ws.max_context();  // (group, n_keys)
    const float* q = ws.q.data() + t * Q + g * group * hd;                  // (group, hd)
    const float* keys = cache.keys(l, g) + first * hd;                      // (n_keys, hd)
    const float* values = cache.values(l, g) + first * hd;                  // (n_keys, hd)
    c.k.dot_tile(DType::kF32, keys, hd, q, hd, scores, n_keys, group, n_keys, hd);
    for (std::int64_t i = 0; i < group; ++i) {
      float* s = scores + i * n_keys;
      c.k.scale(scale, s, n_keys);
      softmax(c.k, s, n_keys);
      c.k.weighted_rows(s, n_keys, values, hd, ws.att.data() + t * Q + (g * group + i) * hd, hd);
    }
  };
  c.pool.run_chunks(n * nkv, ChunkFn(task));
}

void LlamaFamilyModel::head(const Compute& c, float* x, std::int64_t n, float* logits) const {
  head(c, lm_head_, x, n, logits);
}

void LlamaFamilyModel::head(const Compute& c, const WeightMatrix& lm_head, float* x, std::int64_t n, float* logits) const {
  rmsnorm(c.k, x, final_norm_.data, n, config_.hidden_size, static_cast<float>(config_.rms_norm_eps), x);
  const MatmulPart p[] = {{lm_head, logits, lm_head.rows}};
  matmul(c.k, c.pool, p, x, n, config_.hidden_size);
}

}  // namespace plexus
