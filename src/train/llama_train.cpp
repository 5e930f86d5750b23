// The Llama-family training step: forward keeping activations, chunked lm_head + cross-entropy,
// and the backward through every layer, all through TrainOps. What is kept and what recomputed:
// docs/train.md "The backward pass".
#include "train/llama_train.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "model/llama_family.h"
#include "model/token_id.h"

namespace plexus {

namespace {

constexpr std::int64_t kLine = 16;  // floats: every buffer starts on a 64-byte line
std::int64_t line(std::int64_t n) { return (n + kLine - 1) / kLine * kLine; }

// Rows of logits computed at a time: the lm_head and the cross-entropy run over the b·(T−1)
// predictions in chunks of this many rows, so the (rows, vocab) buffer does not grow with the batch.
constexpr std::int64_t kLogitRows = 1024;

// A buffer of TrainActivations: `copies` regions of `stride` floats from `offset` (one per layer
// for what the backward keeps — one in all when checkpointing — one for scratch).
struct Buf {
  std::int64_t offset = 0, stride = 0;
  float* at(float* base, std::int64_t copy = 0) const { return base + offset + copy * stride; }
};

// Where each buffer lies in the one allocation, for up to b sequences of T tokens.
struct ActPlan {
  // Kept by the forward for the backward, per layer (x: num_layers + 1 copies). Checkpointing
  // keeps x alone per layer and the rest for one layer, the one whose backward runs.
  Buf x;          // (n, H) the residual stream entering layer l; copy L enters the final norm
  Buf x_mid;      // (n, H) the residual after layer l's attention
  Buf q, k, v;    // (n, Q) (n, KV) (n, KV) projections (+ bias); q, k rotated unless qk_norm
  Buf att;        // (n, Q) attention output, before o_proj
  Buf lse;        // (b, n_heads, T) attention log-sum-exp
  Buf gate, up;   // (n, I) MLP projections
  Buf o_out;      // (n, H) Gemma: o_proj's output, before post_attention_layernorm; else empty
  Buf mlp_out;    // (n, H) Gemma: down_proj's output, before post_feedforward_layernorm; else empty
  // Scratch shared by the layers.
  Buf cos, sin;      // (rope tables, T, head_dim / 2): Gemma 3's local table second
  Buf norm_w;        // (max(H, head_dim)) Gemma: a norm's 1 + w; else empty
  Buf xn;            // (n, H) the normed residual (recomputed in the backward)
  Buf rstd;          // (n · n_heads) with qk_norm, else (n)
  Buf rstd_k;        // (n · n_kv_heads) with qk_norm, else empty
  Buf q_rot, k_rot;  // (n, Q) (n, KV) normed + rotated q, k with qk_norm, else empty
  Buf m;             // (n, I) act(gate) · up (silu, Gemma's gelu_tanh), then its gradient
  Buf dx, dh;        // (n, H) residual gradient; gradient of a normed input
  Buf datt, dq;      // (n, Q)
  Buf dk, dv;        // (n, KV)
  Buf xf;            // (b·(T−1), H) final-normed rows that predict, then their gradient
  Buf rstd_f;        // (b·(T−1))
  Buf logits;        // (min(b·(T−1), kLogitRows), vocab), then their gradient
  std::int64_t total = 0;  // floats
};

ActPlan plan_activations(const ModelConfig& c, std::int64_t b, std::int64_t T, bool checkpoint) {
  const std::int64_t n = b * T, np = b * (T - 1), L = c.num_layers, kept = checkpoint ? 1 : L;
  const std::int64_t H = c.hidden_size, Q = c.q_dim(), KV = c.kv_dim(), I = c.intermediate_size;
  ActPlan p;
  auto take = [&p](Buf& buf, std::int64_t count, std::int64_t copies) {
    buf.offset = p.total;
    buf.stride = line(count);
    p.total += copies * buf.stride;
  };
  take(p.x, n * H, L + 1);
  take(p.x_mid, n * H, kept);
  take(p.q, n * Q, kept);
  take(p.k, n * KV, kept);
  take(p.v, n * KV, kept);
  take(p.att, n * Q, kept);
  take(p.lse, b * c.num_heads * T, kept);
  take(p.gate, n * I, kept);
  take(p.up, n * I, kept);
  take(p.o_out, c.gemma ? n * H : 0, kept);
  take(p.mlp_out, c.gemma ? n * H : 0, kept);
  const std::int64_t tables = c.rope_local_theta > 0 ? 2 : 1;
  take(p.cos, tables * T * (c.head_dim / 2), 1);
  take(p.sin, tables * T * (c.head_dim / 2), 1);
  take(p.norm_w, c.gemma ? std::max(H, c.head_dim) : 0, 1);
  take(p.xn, n * H, 1);
  take(p.rstd, n * (c.qk_norm ? c.num_heads : 1), 1);
  take(p.rstd_k, c.qk_norm ? n * c.num_kv_heads : 0, 1);
  take(p.q_rot, c.qk_norm ? n * Q : 0, 1);
  take(p.k_rot, c.qk_norm ? n * KV : 0, 1);
  take(p.m, n * I, 1);
  take(p.dx, n * H, 1);
  take(p.dh, n * H, 1);
  take(p.datt, n * Q, 1);
  take(p.dq, n * Q, 1);
  take(p.dk, n * KV, 1);
  take(p.dv, n * KV, 1);
  take(p.xf, np * H, 1);
  take(p.rstd_f, np, 1);
  take(p.logits, std::min(np, kLogitRows) * c.vocab_size, 1);
  return p;
}

// One micro-batch through the model: the forward, then (when grads is set) the backward.
class Step {
 public:
  Step(const ModelConfig& c, const RopeFreqs& rope, const AttentionShape& attention, float embed_scale,
       TrainOps& ops, const ModelTensors& w, const MicroBatch& mb, TrainActivations& acts)
      : c_(c), rope_(rope), attention_(attention), embed_scale_(embed_scale), ops_(ops), w_(w), mb_(mb),
        p_(plan_activations(c, acts.max_b(), acts.T(), acts.checkpoint())), checkpoint_(acts.checkpoint()),
        base_(acts.data()),
        n_(mb.b * mb.T), np_(mb.b * (mb.T - 1)), eps_(static_cast<float>(c.rms_norm_eps)) {}

  // Embedding and every layer: the residual stream x(L) enters the final norm.
  void forward_layers() {
    // LongRoPE: the long factors once the sequence runs past the original context, as inference.
    const bool long_context = !rope_.long_context.empty() && mb_.T > c_.rope_original_max_position;
    const std::int64_t table = mb_.T * (c_.head_dim / 2);
    ops_.rope_table(long_context ? rope_.long_context : rope_.global, mb_.T, p_.cos.at(base_), p_.sin.at(base_));
    if (attention_.rope_scale != 1) {  // partial rotary: the attention factor scales the rotated dims
      ops_.scale(p_.cos.at(base_), attention_.rope_scale, table);
      ops_.scale(p_.sin.at(base_), attention_.rope_scale, table);
    }
    if (!rope_.local.empty()) ops_.rope_table(rope_.local, mb_.T, p_.cos.at(base_) + table, p_.sin.at(base_) + table);
    ops_.embed(w_.embed, mb_.tokens, c_.hidden_size, p_.x.at(base_, 0));
    if (c_.gemma) ops_.scale(p_.x.at(base_, 0), embed_scale_, n_ * c_.hidden_size);  // x (n, H) · √H
    for (int l = 0; l < c_.num_layers; ++l) layer_forward(l, false);
  }

  // The final norm of the predicting rows, then lm_head and the cross-entropy chunk by chunk;
  // with grads, each chunk's logits gradient goes into the lm_head gradient and the rows' xf
  // becomes their gradient. Returns the loss sum.
  double head(const ModelTensors* grads, float grad_scale) {
    const std::int64_t T = mb_.T, H = c_.hidden_size, V = c_.vocab_size;
    float* xf = p_.xf.at(base_);
    const float* final_norm = norm_weight(w_.final_norm, H);
    for (std::int64_t i = 0; i < mb_.b; ++i) {  // rows 0..T−2 of sequence i predict
      ops_.rmsnorm(p_.x.at(base_, c_.num_layers) + i * T * H, final_norm, T - 1, H, eps_, xf + i * (T - 1) * H,
                   p_.rstd_f.at(base_) + i * (T - 1));
    }
    std::vector<std::int32_t> targets(static_cast<std::size_t>(np_));  // (b·(T−1))
    for (std::int64_t i = 0; i < mb_.b; ++i) {
      for (std::int64_t t = 0; t + 1 < T; ++t) {
        targets[static_cast<std::size_t>(i * (T - 1) + t)] = mb_.tokens[static_cast<std::size_t>(i * T + t + 1)];
      }
    }
    float* logits = p_.logits.at(base_);
    double loss = 0;
    for (std::int64_t r0 = 0; r0 < np_; r0 += kLogitRows) {
      const std::int64_t rows = std::min(kLogitRows, np_ - r0);
      ops_.linear(xf + r0 * H, w_.lm_head, nullptr, rows, H, V, logits);  // (rows, V)
      const std::span<const std::int32_t> chunk =
          std::span<const std::int32_t>(targets).subspan(static_cast<std::size_t>(r0), static_cast<std::size_t>(rows));
      // Gemma 2: the logits soft-capped, the gradient through the cap.
      loss += c_.final_logit_softcap > 0
                  ? ops_.softcap_cross_entropy(logits, chunk, V, grad_scale, static_cast<float>(c_.final_logit_softcap))
                  : ops_.cross_entropy(logits, chunk, V, grad_scale);
      if (grads != nullptr) {
        ops_.linear_backward_weight(logits, xf + r0 * H, rows, H, V, grads->lm_head, nullptr);
        ops_.linear_backward_input(logits, w_.lm_head, rows, H, V, xf + r0 * H, false);
      }
    }
    return loss;
  }

  // From the gradient of xf (head with grads): every layer's backward, then the embedding's.
  void backward(const ModelTensors& g, const GradientsReady& ready) {
    const std::int64_t T = mb_.T, H = c_.hidden_size;
    float* dx = p_.dx.at(base_);
    ops_.zero(dx, n_ * H);  // the last position of each sequence predicts nothing: zero gradient
    const float* final_norm = norm_weight(w_.final_norm, H);
    for (std::int64_t i = 0; i < mb_.b; ++i) {
      ops_.rmsnorm_backward(p_.xf.at(base_) + i * (T - 1) * H, p_.x.at(base_, c_.num_layers) + i * T * H,
                            final_norm, p_.rstd_f.at(base_) + i * (T - 1), T - 1, H, dx + i * T * H,
                            g.final_norm);
    }
    for (int l = c_.num_layers - 1; l >= 0; --l) {
      // Checkpointing: layer l's forward again from the kept x(l), the same calls on the same
      // inputs (the same bits); the last layer's activations are still there from the forward.
      if (checkpoint_ && l < c_.num_layers - 1) layer_forward(l, true);
      layer_backward(l, g);
      if (ready) ready(l);
    }
    if (c_.gemma) ops_.scale(dx, embed_scale_, n_ * H);  // through x · √H
    ops_.embed_backward(dx, mb_.tokens, H, g.embed);
    if (ready) ready(-1);
  }

 private:
  const LayerTensors& lw(int l) const { return w_.layers[static_cast<std::size_t>(l)]; }
  // Layer l's copy of a buffer kept for the backward (the one copy when checkpointing).
  float* kept(const Buf& buf, int l) const { return buf.at(base_, checkpoint_ ? 0 : l); }

  // A norm's weight (d) as the norm multiplies by: Gemma's 1 + w, written to the norm_w scratch
  // (valid until the next call), else w itself. ∂/∂(1 + w) = ∂/∂w: the gradient goes to w.
  const float* norm_weight(const float* w, std::int64_t d) {
    if (!c_.gemma) return w;
    ops_.add_constant(w, 1.0f, p_.norm_w.at(base_), d);
    return p_.norm_w.at(base_);
  }

  // Layer l's attention: its window (Gemma 3's and Gemma 2's sliding layers, Mistral, Phi-3).
  AttentionShape layer_attention(int l) const {
    AttentionShape a = attention_;
    a.window = c_.layer_window(l);
    return a;
  }

  // Rotates x (n, heads, head_dim) in place with layer l's rope table (Gemma 3's sliding layers:
  // the local one), over the first rotary_dim dims (Phi-3's partial rotary) or the whole head.
  void rotate(float* x, std::int64_t heads, int l, bool inverse) {
    const std::int64_t hd = c_.head_dim, off = (c_.local_rope_layer(l) ? 1 : 0) * mb_.T * (hd / 2);
    const float* cos = p_.cos.at(base_) + off;
    const float* sin = p_.sin.at(base_) + off;
    if (c_.rotary_dim() != hd) {
      ops_.rope_partial(x, mb_.b, mb_.T, heads, hd, c_.rotary_dim(), cos, sin, inverse);
    } else {
      ops_.rope(x, mb_.b, mb_.T, heads, hd, cos, sin, inverse);
    }
  }

  // m (n·I) = act(gate) · up: Gemma's GeGLU (tanh GELU), else SwiGLU.
  void gated(const float* gate, const float* up, float* m, std::int64_t count) {
    if (c_.gemma) {
      ops_.gelu_tanh_mul(gate, up, m, count);
    } else {
      ops_.silu_mul(gate, up, m, count);
    }
  }

  // q, k as attention reads them: with qk_norm, normed per head into q_rot / k_rot (rstd,
  // rstd_k) from the kept pre-norm projections, then rotated; otherwise the kept q, k, rotated
  // in place by the forward.
  void attention_inputs(int l, const float** qa, const float** ka, bool rotate) {
    const std::int64_t hd = c_.head_dim;
    float* q = kept(p_.q, l);
    float* k = kept(p_.k, l);
    if (c_.qk_norm) {
      ops_.rmsnorm(q, norm_weight(lw(l).q_norm, hd), n_ * c_.num_heads, hd, eps_, p_.q_rot.at(base_), p_.rstd.at(base_));
      ops_.rmsnorm(k, norm_weight(lw(l).k_norm, hd), n_ * c_.num_kv_heads, hd, eps_, p_.k_rot.at(base_),
                   p_.rstd_k.at(base_));
      q = p_.q_rot.at(base_);
      k = p_.k_rot.at(base_);
      rotate = true;
    }
    if (rotate) {
      this->rotate(q, c_.num_heads, l, false);
      this->rotate(k, c_.num_kv_heads, l, false);
    }
    *qa = q;
    *ka = k;
  }

  // Layer l from x(l): what its backward reads, and x(l+1) unless `recompute` (checkpointing's
  // second forward before the backward, which has x(l+1)'s gradient and needs x(l+1) no more).
  void layer_forward(int l, bool recompute) {
    const std::int64_t n = n_, H = c_.hidden_size, Q = c_.q_dim(), KV = c_.kv_dim(), I = c_.intermediate_size;
    const LayerTensors& w = lw(l);
    float* x = p_.x.at(base_, l);
    float* xm = kept(p_.x_mid, l);
    float* xn = p_.xn.at(base_);
    // Attention block: xm = x + o_proj(attention(rope(q), rope(k), v)) of norm(x) (Gemma: x +
    // post_attention_norm(o_proj(...))).
    ops_.rmsnorm(x, norm_weight(w.input_norm, H), n, H, eps_, xn, p_.rstd.at(base_));
    ops_.linear(xn, w.q, w.q_bias, n, H, Q, kept(p_.q, l));
    ops_.linear(xn, w.k, w.k_bias, n, H, KV, kept(p_.k, l));
    ops_.linear(xn, w.v, w.v_bias, n, H, KV, kept(p_.v, l));
    const float *qa = nullptr, *ka = nullptr;
    attention_inputs(l, &qa, &ka, true);
    ops_.attention(qa, ka, kept(p_.v, l), mb_.b, mb_.T, layer_attention(l), kept(p_.att, l), kept(p_.lse, l));
    if (c_.gemma) {
      float* o_out = kept(p_.o_out, l);
      ops_.linear(kept(p_.att, l), w.o, w.o_bias, n, Q, H, o_out);
      ops_.rmsnorm(o_out, norm_weight(w.post_attention_norm, H), n, H, eps_, xm, p_.rstd.at(base_));
    } else {
      ops_.linear(kept(p_.att, l), w.o, w.o_bias, n, Q, H, xm);
    }
    ops_.add(xm, x, n * H);
    // MLP block: x(l+1) = xm + down(act(gate(h)) · up(h)), h = norm(xm) (Gemma: x(l+1) = xm +
    // post_feedforward_norm(down(...)), h = pre_feedforward_norm(xm)).
    ops_.rmsnorm(xm, norm_weight(mlp_norm(w), H), n, H, eps_, xn, p_.rstd.at(base_));
    ops_.linear(xn, w.gate, nullptr, n, H, I, kept(p_.gate, l));
    ops_.linear(xn, w.up, nullptr, n, H, I, kept(p_.up, l));
    if (recompute && !c_.gemma) return;
    gated(kept(p_.gate, l), kept(p_.up, l), p_.m.at(base_), n * I);
    float* x_next = p_.x.at(base_, l + 1);
    if (c_.gemma) {
      float* mlp_out = kept(p_.mlp_out, l);
      ops_.linear(p_.m.at(base_), w.down, nullptr, n, I, H, mlp_out);
      if (recompute) return;
      ops_.rmsnorm(mlp_out, norm_weight(w.post_feedforward_norm, H), n, H, eps_, x_next, p_.rstd.at(base_));
    } else {
      ops_.linear(p_.m.at(base_), w.down, nullptr, n, I, H, x_next);
    }
    ops_.add(x_next, xm, n * H);
  }

  // The norm before the MLP: Gemma's pre_feedforward_layernorm, else post_attention_layernorm.
  const float* mlp_norm(const LayerTensors& w) const { return c_.gemma ? w.pre_feedforward_norm : w.post_attention_norm; }

  // dx holds ∂loss/∂x(l+1) on entry and ∂loss/∂x(l) on return; layer l's gradients are final.
  void layer_backward(int l, const ModelTensors& grads) {
    const std::int64_t n = n_, H = c_.hidden_size, Q = c_.q_dim(), KV = c_.kv_dim(), I = c_.intermediate_size;
    const std::int64_t hd = c_.head_dim;
    const LayerTensors& w = lw(l);
    const LayerTensors& g = grads.layers[static_cast<std::size_t>(l)];
    float* x = p_.x.at(base_, l);
    float* xm = kept(p_.x_mid, l);
    float* xn = p_.xn.at(base_);
    float* rstd = p_.rstd.at(base_);
    float* dx = p_.dx.at(base_);
    float* dh = p_.dh.at(base_);
    float* m = p_.m.at(base_);
    float* gate = kept(p_.gate, l);
    float* up = kept(p_.up, l);

    // Gemma: through x(l+1) = xm + post_feedforward_norm(mlp_out): dh = ∂/∂mlp_out.
    const float* dmlp = dx;
    if (c_.gemma) {
      float* mlp_out = kept(p_.mlp_out, l);
      ops_.rmsnorm(mlp_out, norm_weight(w.post_feedforward_norm, H), n, H, eps_, xn, rstd);
      ops_.zero(dh, n * H);
      ops_.rmsnorm_backward(dx, mlp_out, norm_weight(w.post_feedforward_norm, H), rstd, n, H, dh,
                            g.post_feedforward_norm);
      dmlp = dh;
    }
    // MLP: recompute h = norm(xm) and m = act(gate) · up (bitwise the forward's).
    ops_.rmsnorm(xm, norm_weight(mlp_norm(w), H), n, H, eps_, xn, rstd);
    gated(gate, up, m, n * I);
    ops_.linear_backward_weight(dmlp, m, n, I, H, g.down, nullptr);
    ops_.linear_backward_input(dmlp, w.down, n, I, H, m, false);  // m = ∂/∂m
    if (c_.gemma) {
      ops_.gelu_tanh_mul_backward(m, gate, up, gate, up, n * I);  // gate, up = their gradients
    } else {
      ops_.silu_mul_backward(m, gate, up, gate, up, n * I);
    }
    ops_.linear_backward_weight(gate, xn, n, H, I, g.gate, nullptr);
    ops_.linear_backward_weight(up, xn, n, H, I, g.up, nullptr);
    ops_.linear_backward_input(gate, w.gate, n, H, I, dh, false);
    ops_.linear_backward_input(up, w.up, n, H, I, dh, true);
    ops_.rmsnorm_backward(dh, xm, norm_weight(mlp_norm(w), H), rstd, n, H, dx,
                          c_.gemma ? g.pre_feedforward_norm : g.post_attention_norm);  // dx = ∂/∂xm

    // Attention: o_proj (Gemma: post_attention_norm first), then attention over q, k as the
    // forward rotated them.
    float* datt = p_.datt.at(base_);
    float* dq = p_.dq.at(base_);
    float* dk = p_.dk.at(base_);
    float* dv = p_.dv.at(base_);
    const float* dattn_out = dx;
    if (c_.gemma) {
      float* o_out = kept(p_.o_out, l);
      ops_.rmsnorm(o_out, norm_weight(w.post_attention_norm, H), n, H, eps_, xn, rstd);
      ops_.zero(dh, n * H);
      ops_.rmsnorm_backward(dx, o_out, norm_weight(w.post_attention_norm, H), rstd, n, H, dh, g.post_attention_norm);
      dattn_out = dh;  // ∂/∂o_out
    }
    ops_.linear_backward_weight(dattn_out, kept(p_.att, l), n, Q, H, g.o, g.o_bias);
    ops_.linear_backward_input(dattn_out, w.o, n, Q, H, datt, false);
    const float *qa = nullptr, *ka = nullptr;
    attention_inputs(l, &qa, &ka, false);
    ops_.attention_backward(datt, qa, ka, kept(p_.v, l), kept(p_.att, l), kept(p_.lse, l), mb_.b, mb_.T,
                            layer_attention(l), dq, dk, dv);
    rotate(dq, c_.num_heads, l, true);
    rotate(dk, c_.num_kv_heads, l, true);
    if (c_.qk_norm) {  // through the per-head norms: the projections' gradients into datt, k_rot
      float* dq_pre = datt;
      float* dk_pre = p_.k_rot.at(base_);
      ops_.zero(dq_pre, n * Q);
      ops_.rmsnorm_backward(dq, kept(p_.q, l), norm_weight(w.q_norm, hd), rstd, n * c_.num_heads, hd, dq_pre,
                            g.q_norm);
      ops_.zero(dk_pre, n * KV);
      ops_.rmsnorm_backward(dk, kept(p_.k, l), norm_weight(w.k_norm, hd), p_.rstd_k.at(base_), n * c_.num_kv_heads,
                            hd, dk_pre, g.k_norm);
      dq = dq_pre;
      dk = dk_pre;
    }
    // q, k, v projections of xn = norm(x) (recomputed).
    ops_.rmsnorm(x, norm_weight(w.input_norm, H), n, H, eps_, xn, rstd);
    ops_.linear_backward_weight(dq, xn, n, H, Q, g.q, g.q_bias);
    ops_.linear_backward_weight(dk, xn, n, H, KV, g.k, g.k_bias);
    ops_.linear_backward_weight(dv, xn, n, H, KV, g.v, g.v_bias);
    ops_.linear_backward_input(dq, w.q, n, H, Q, dh, false);
    ops_.linear_backward_input(dk, w.k, n, H, KV, dh, true);
    ops_.linear_backward_input(dv, w.v, n, H, KV, dh, true);
    ops_.rmsnorm_backward(dh, x, norm_weight(w.input_norm, H), rstd, n, H, dx, g.input_norm);  // dx = ∂/∂x(l)
  }

  const ModelConfig& c_;
  const RopeFreqs& rope_;
  const AttentionShape& attention_;
  float embed_scale_;
  TrainOps& ops_;
  const ModelTensors& w_;
  const MicroBatch& mb_;
  ActPlan p_;
  bool checkpoint_;
  float* base_;
  std::int64_t n_, np_;
  float eps_;
};

void check_micro_batch(const ModelConfig& c, const MicroBatch& mb, const TrainActivations& acts) {
  if (mb.b < 1 || mb.b > acts.max_b() || mb.T != acts.T() ||
      static_cast<std::int64_t>(mb.tokens.size()) != mb.b * mb.T) {
    throw RuntimeError("training micro-batch of " + std::to_string(mb.b) + " x " + std::to_string(mb.T) + " tokens (" +
                       std::to_string(mb.tokens.size()) + " ids) does not fit activations for " +
                       std::to_string(acts.max_b()) + " x " + std::to_string(acts.T()));
  }
  check_token_ids(mb.tokens, c.vocab_size, "training data");
}

}  // namespace

std::int64_t TrainActivations::bytes_for(const ModelConfig& config, std::int64_t b, std::int64_t T, bool checkpoint) {
  return plan_activations(config, b, T, checkpoint).total * static_cast<std::int64_t>(sizeof(float));
}

TrainActivations::TrainActivations(const ModelConfig& /*config*/, std::int64_t b, std::int64_t T, float* memory, bool checkpoint)
    : b_(b), T_(T), checkpoint_(checkpoint), external_(memory) {
  if (b < 1 || T < 2) {
    throw InputError("training needs at least 1 sequence of 2 tokens per micro-batch; got " + std::to_string(b) +
                     " of " + std::to_string(T));
  }
}

TrainActivations::TrainActivations(const ModelConfig& config, std::int64_t b, std::int64_t T, bool checkpoint)
    : TrainActivations(config, b, T, nullptr, checkpoint) {
  memory_.resize(static_cast<std::size_t>(plan_activations(config, b, T, checkpoint).total));
}

namespace {

RopeFreqs training_rope(const ModelConfig& c) {
  RopeFreqs r;
  r.global = rope_inv_freq(c);
  if (c.rope_local_theta > 0) {
    const std::vector<double> both = rope_table_freqs(c);  // global, then local
    r.local.assign(both.begin() + static_cast<std::ptrdiff_t>(r.global.size()), both.end());
  }
  if (c.rope_scaling == RopeScaling::kLongRope) r.long_context = rope_inv_freq(c, true);
  return r;
}

}  // namespace

LlamaTrainModel::LlamaTrainModel(const ModelConfig& config)
    : config_(config),
      layout_(ParamLayout::of(config)),
      rope_(training_rope(config)),
      attention_(attention_of(config)),
      embed_scale_(embed_scale(config, DType::kF32)),
      family_ops_(config.gemma || attention_.rotary_dim > 0) {
  const std::string what = config.architecture.empty() ? std::string(arch_name(config.arch)) : config.architecture;
  if (config.rope_interleaved) {
    throw InputError(what + " model with interleaved rope (a GGUF file's permuted q/k rows): training reads "
                            "Hugging Face checkpoints (config.json + safetensors); convert the model to one");
  }
  if (!config.rope_freq_factors.empty()) {
    throw InputError(what + " model with rope frequency factors (a GGUF file's rope_freqs.weight): training reads "
                            "Hugging Face checkpoints (config.json + safetensors); convert the model to one");
  }
  if (config.head_dim % 2 != 0) {
    throw InputError(what + " model with odd head_dim " + std::to_string(config.head_dim) +
                     ": rotary embeddings need an even head_dim");
  }
}

void LlamaTrainModel::check_ops(const TrainOps& ops) const {
  if (family_ops_ && !ops.family_ops()) {
    const std::string what = config_.architecture.empty() ? std::string(arch_name(config_.arch)) : config_.architecture;
    throw InputError(what + ": training this model runs on the CPU only (its " +
                     (config_.gemma ? std::string("GeGLU, (1 + w) norms, embedding scale and soft-capping") : std::string("partial rotary")) +
                     " have no CUDA training kernels yet)");
  }
}

double LlamaTrainModel::forward_backward(TrainOps& ops, const ModelTensors& w, const ModelTensors& grads,
                                         const MicroBatch& mb, float grad_scale, TrainActivations& acts,
                                         const GradientsReady& ready) const {
  check_micro_batch(config_, mb, acts);
  check_ops(ops);
  Step step(config_, rope_, attention_, embed_scale_, ops, w, mb, acts);
  step.forward_layers();
  const double loss = step.head(&grads, grad_scale);
  step.backward(grads, ready);
  return loss;
}

double LlamaTrainModel::forward_loss(TrainOps& ops, const ModelTensors& w, const MicroBatch& mb,
                                     TrainActivations& acts) const {
  check_micro_batch(config_, mb, acts);
  check_ops(ops);
  Step step(config_, rope_, attention_, embed_scale_, ops, w, mb, acts);
  step.forward_layers();
  return step.head(nullptr, 1.0f);
}

}  // namespace plexus
