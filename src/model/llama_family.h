// The forward pass of the Llama family: Llama 2/3/3.1, Mistral, Qwen2 (q/k/v bias) and Qwen3
// (q/k RMSNorm), and the mixtures of experts Mixtral, Qwen3-MoE and gpt-oss (attention sinks,
// alternating sliding/full layers, YaRN, a biased top-k-then-softmax router, clamped SwiGLU
// experts), and Gemma 2 / Gemma 3 (ModelConfig::gemma: √H-scaled embeddings, (1 + w) norms also
// after the attention and around the MLP, GeGLU, soft-capped scores and logits, Gemma 3's local
// rope base on its sliding layers). Pre-norm decoder layers, rotate-half RoPE, grouped-query
// attention, a SiLU-gated MLP or a routed mixture of them. Knows nothing of devices: it computes through a device's
// ComputeOps (compute/compute_ops.h) on whatever buffers and weights it is given.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "compute/compute_ops.h"
#include "compute/kv_cache.h"
#include "compute/workspace.h"
#include "kernels/weight_matrix.h"
#include "model/config.h"

namespace plexus {

class Checkpoint;

struct LayerWeights {
  WeightMatrix q, k, v, o;            // (q_dim, H) (kv_dim, H) (kv_dim, H) (H, q_dim)
  // GPT-2 read in place: q is c_attn whole, (3·H, H) stored (in, out), k and v empty (fuse_in_out_qkv).
  WeightMatrix gate, up, down;        // (I, H) (I, H) (H, I); empty (no data) in a mixture-of-experts layer
  WeightMatrix router;                // (E, H); mixture-of-experts layers only
  std::vector<ExpertWeights> experts;  // (E); empty in a dense layer
  VectorView q_bias, k_bias, v_bias, o_bias;  // (q_dim) (kv_dim) (kv_dim) (H); empty when absent
  VectorView q_norm, k_norm;                  // (head_dim); Qwen3 only
  // (H); GPT-2's LayerNorms (2·H): the weight, then the bias.
  VectorView input_norm, post_attention_norm;
  // Gemma only (empty otherwise): the norms before and after the MLP; post_attention_norm is then
  // the norm of the attention's output. Gemma's norms are held as (1 + w).
  VectorView pre_feedforward_norm, post_feedforward_norm;  // (H)
  VectorView up_bias, down_bias;  // (I) (H); GPT-2 only (c_fc's and the MLP c_proj's biases)
  // gpt-oss only (empty otherwise): attention sinks, the router's bias, and the experts' biases
  // (gate_up_proj_bias de-interleaved into gate and up).
  VectorView sinks;                                                  // (n_heads)
  VectorView router_bias;                                            // (E)
  VectorView expert_gate_bias, expert_up_bias, expert_down_bias;     // (E·Ie) (E·Ie) (E·H)
};

// A layer's matrices, in one fixed order (q k v o, then gate up down or router and each
// expert's gate up down): the order the weight store packs them in. Empty ones are left out.
std::vector<const WeightMatrix*> layer_matrices(const LayerWeights& w);
std::vector<WeightMatrix*> layer_matrices(LayerWeights& w);

// Every weight of a model, as views (the model or its owner keeps the memory).
struct ModelWeights {
  WeightMatrix embed, lm_head;     // (vocab, H) (vocab rows of the head, H)
  WeightMatrix positions;          // GPT-2's learned positions (n_positions, H); empty otherwise
  VectorView final_norm;           // (H); GPT-2: weight and bias (2·H)
  std::vector<LayerWeights> layers;  // (num_layers)
};

// The model's attention geometry as every layer's forward (inference and training) takes it:
// the score scale (Gemma's query_pre_attn_scalar, YaRN/LongRoPE's attention factor), windows,
// soft-capping, partial rotary and the number of rope tables.
AttentionShape attention_of(const ModelConfig& c);

class LlamaFamilyModel {
 public:
  // Views the checkpoint's weights in place (the checkpoint must outlive the model); small
  // vectors (norms, biases) are kept as f32 in host memory the model owns. InputError naming
  // the tensor on a mismatch.
  LlamaFamilyModel(const ModelConfig& config, const Checkpoint& checkpoint);
  // A model with `config`'s geometry over weights viewed elsewhere, which must outlive it: a
  // tensor-parallel rank's shard (model/tensor_split.h), whose config has its share of the heads.
  LlamaFamilyModel(const ModelConfig& config, ModelWeights weights);
  LlamaFamilyModel(const LlamaFamilyModel&) = delete;  // its weights view its own vectors
  LlamaFamilyModel& operator=(const LlamaFamilyModel&) = delete;

  const ModelConfig& config() const { return config_; }
  const LayerWeights& layer_weights(int l) const { return layers_[static_cast<std::size_t>(l)]; }
  const WeightMatrix& embedding() const { return embed_; }
  const WeightMatrix& lm_head() const { return lm_head_; }
  // GPT-2's learned positions (n_positions, H); empty (no data) for every other family.
  const WeightMatrix& position_embedding() const { return positions_; }
  VectorView final_norm() const { return final_norm_; }  // (H); GPT-2 (2·H): weight, then bias
  std::int64_t weight_bytes() const;  // bytes of all weights as stored (tied counted once)

  // RoPE inverse frequencies (rope_tables · head_dim / 2, rope_table_freqs) and the attention geometry, for ops.begin_batch and
  // the attention operations.
  std::span<const double> inv_freq() const { return inv_freq_; }
  // The frequencies for a batch at positions `pos` (host): inv_freq(), except under LongRoPE
  // (Phi-3), whose long factors take over once the batch reaches past the original context
  // (largest position + 1 > rope_original_max_position), as Hugging Face's dynamic longrope
  // update decides per forward call from its largest position. Keys already cached keep the
  // rotation they were stored with, as in Hugging Face's cache.
  std::span<const double> inv_freq(std::span<const std::int32_t> pos) const;
  const AttentionShape& attention_shape() const { return attention_; }
  // Decoder layer l's attention: attention_shape() with the layer's window (gpt-oss alternates
  // sliding and full layers) and its sinks from w.
  AttentionShape layer_attention(int l, const LayerWeights& w) const;

  // Every step runs through `ops`, between ops.begin_batch(batch, inv_freq(), ...) and
  // ops.end_batch(); pointers are in the memory of ops' device.
  // x (n, H) = embedding rows of ids (n, host). InputError unless every id is in [0, vocab).
  void embed(ComputeOps& ops, std::span<const std::int32_t> ids, float* x) const;
  // One decoder layer, in place on x (n, H); writes this layer's keys/values into the caches.
  void layer(ComputeOps& ops, int l, float* x, const TokenBatch& batch, Workspace& ws) const;
  // logits (n, vocab) = lm_head(final_norm(x (n, H))); x is normalised in place.
  void head(ComputeOps& ops, float* x, std::int64_t n, float* logits) const;

  // The same steps with the weights to use given (a device's copy, a streamed copy): same math.
  void embed(ComputeOps& ops, const WeightMatrix& table, std::span<const std::int32_t> ids, float* x) const;
  // GPT-2: x (n, H) = table rows of batch.ids + `positions` rows of batch.pos (ws.xb the scratch);
  // InputError for a position outside the table. Other families: embed(ops, table, batch.ids, x).
  void embed(ComputeOps& ops, const WeightMatrix& table, const WeightMatrix& positions, const TokenBatch& batch,
             Workspace& ws, float* x) const;
  void layer(ComputeOps& ops, int l, const LayerWeights& w, float* x, const TokenBatch& batch, Workspace& ws) const;
  void head(ComputeOps& ops, const WeightMatrix& lm_head, VectorView final_norm, float* x, std::int64_t n,
            float* logits) const;

 private:
  ModelConfig config_;
  WeightMatrix embed_, lm_head_;
  WeightMatrix positions_;  // GPT-2 only
  std::vector<std::vector<float>> vectors_;  // the f32 small vectors the views below point at
  // gpt-oss experts stored (in, out) in the checkpoint, transposed here to (out, in) per expert;
  // or stored as MXFP4 in Hugging Face's block layout, repacked here into plexus's MXFP4 blocks.
  std::vector<std::vector<std::uint8_t>> transposed_;
  VectorView final_norm_;
  std::vector<LayerWeights> layers_;
  std::vector<double> inv_freq_;  // (head_dim / 2), rope scaling applied
  std::vector<double> long_inv_freq_;  // (head_dim / 2) LongRoPE's long factors; empty otherwise
  AttentionShape attention_;

  // Layer l's gpt-oss experts and their biases from the checkpoint's fused tensors: bf16/f32/f16
  // gate_up_proj and down_proj (dense), or their MXFP4 _blocks and _scales (model/gpt_oss_mxfp4.h;
  // false when the layer holds none).
  void load_gpt_oss_experts(const Checkpoint& ck, int l, LayerWeights& w);
  void load_gpt_oss_dense_experts(const Checkpoint& ck, int l, LayerWeights& w);
  bool load_gpt_oss_mxfp4_experts(const Checkpoint& ck, int l, LayerWeights& w);
  void load_gpt_oss_expert_biases(const Checkpoint& ck, int l, LayerWeights& w);
  // gpt-oss's router and expert biases as GGUF holds them (MoeConfig::split_experts), the
  // experts' matrices being read as any mixture's, in place.
  void load_split_expert_biases(const Checkpoint& ck, int l, LayerWeights& w);
  // x (n, H) += the layer's MLP of ws.xb (n, H): dense, or routed through the experts.
  void mlp(ComputeOps& ops, const LayerWeights& w, float* x, std::int64_t n, Workspace& ws) const;
  // Gemma, after the attention's output in ws.xb (n, H): x += post_attention_norm(xb), then
  // x += post_feedforward_norm(GeGLU MLP(pre_feedforward_norm(x))).
  void gemma_block_rest(ComputeOps& ops, const LayerWeights& w, float* x, std::int64_t n, Workspace& ws) const;
  float embed_scale_ = 1;  // Gemma: √hidden rounded to the embedding's dtype; 1 otherwise
  // GPT2Block on x (n, H), in place: x += attn(ln_1(x)); x += mlp(ln_2(x)), every linear biased,
  // no rotary embedding, the MLP c_proj(gelu_tanh(c_fc(·))).
  void gpt2_layer(ComputeOps& ops, int l, const LayerWeights& w, float* x, const TokenBatch& batch, Workspace& ws) const;
};

// Bytes of a layer's small vectors (biases, norms) as f32, each starting on a 64-byte line, in
// LayerWeights order: their copy on the device that computes the layer.
std::int64_t layer_vector_bytes(const ModelConfig& config);
// Bytes of the final norm's copy (H f32 on whole 64-byte lines) on the head's device.
std::int64_t final_norm_bytes(const ModelConfig& config);

// RoPE inverse frequencies with the config's rope_scaling applied (exposed for tests).
// Partial rotary: rotary_dim / 2 frequencies of a rotary_dim-wide rope, then zeros to head_dim / 2.
// LongRoPE: the short factors, or with `long_context` the long ones. GPT-2 has no rotary
// embedding: its are all zero, so every device's rotation is the identity (cos 1, sin 0).
std::vector<double> rope_inv_freq(const ModelConfig& config, bool long_context = false);
// The model's rope tables one after another (LayerShape::rope_tables of head_dim / 2): the
// global one (rope_inv_freq), then for Gemma 3 the local one (rope_local_theta, no scaling).
std::vector<double> rope_table_freqs(const ModelConfig& config);
// Gemma's embedding multiplier: √hidden_size rounded to the embedding's dtype as Hugging Face
// rounds it (torch.tensor(√H, dtype=...)): bf16 and f16 tables, else the config's torch_dtype
// (a quantised table), else f32. 1 for every other architecture.
float embed_scale(const ModelConfig& config, DType embed_dtype);

}  // namespace plexus
