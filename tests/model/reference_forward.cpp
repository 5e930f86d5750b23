// Double-precision reference: every buffer is a std::vector<double>, every loop is direct.
#include "reference_forward.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/json.h"
#include "core/mmap_file.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/module_tree.h"

namespace plexus::testing {
namespace {

using Vec = std::vector<double>;

struct Tensor {
  std::vector<double> data;
  std::int64_t rows = 0, cols = 0;
};

Tensor load(const Checkpoint& ck, const std::string& name) {
  const TensorRef r = ck.get(name);
  Tensor t;
  t.rows = r.info->shape[0];
  t.cols = r.info->shape.size() > 1 ? r.info->shape[1] : 1;
  t.data.resize(static_cast<std::size_t>(t.rows * t.cols));
  for (std::size_t i = 0; i < t.data.size(); ++i) {
    switch (r.info->dtype) {
      case DType::kF32: t.data[i] = static_cast<const float*>(r.data)[i]; break;
      case DType::kBF16: t.data[i] = bf16_to_f32(static_cast<const std::uint16_t*>(r.data)[i]); break;
      case DType::kF16: t.data[i] = f16_to_f32(static_cast<const std::uint16_t*>(r.data)[i]); break;
      default: throw std::runtime_error(name + ": the reference forward reads f32, bf16 or f16 checkpoints");  // a block format
    }
  }
  return t;
}

Vec linear(const Tensor& w, const Vec& x) {  // w (rows, cols) · x (cols)
  Vec y(static_cast<std::size_t>(w.rows), 0.0);
  for (std::int64_t r = 0; r < w.rows; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < w.cols; ++c) s += w.data[static_cast<std::size_t>(r * w.cols + c)] * x[static_cast<std::size_t>(c)];
    y[static_cast<std::size_t>(r)] = s;
  }
  return y;
}

void rmsnorm(double* x, const Tensor& w, std::int64_t n, double eps) {
  double ss = 0;
  for (std::int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] * s * w.data[static_cast<std::size_t>(i)];
}

void add(Vec& a, const Tensor& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b.data[i];
}

// down · (silu(gate · h) ⊙ up · h)
Vec gated_mlp(const Tensor& wg, const Tensor& wu, const Tensor& wd, const Vec& h) {
  Vec gt = linear(wg, h), ut = linear(wu, h);
  for (std::size_t i = 0; i < gt.size(); ++i) gt[i] = gt[i] / (1 + std::exp(-gt[i])) * ut[i];
  return linear(wd, gt);
}

// The mixture-of-experts fields of config.json, read here by Hugging Face's names and defaults
// (MixtralConfig, Qwen3MoeConfig), not through plexus's config parser.
struct Moe {
  std::string arch;  // "" for a dense model
  std::int64_t experts = 0, top_k = 0, sparse_step = 1;
  bool norm_topk_prob = true;
  std::vector<std::int64_t> mlp_only_layers;
  // Qwen3MoeDecoderLayer: sparse unless listed in mlp_only_layers, and (l + 1) % step == 0.
  bool sparse(std::int64_t l) const {
    if (arch.empty()) return false;
    for (std::int64_t d : mlp_only_layers)
      if (d == l) return false;
    return (l + 1) % sparse_step == 0;
  }
};

Moe read_moe(const std::string& model_dir) {
  const Json j = parse_json(read_text_file(model_dir + "/config.json"), "config.json");
  Moe m;
  const std::string type = j.value("model_type", "");
  if (type == "mixtral") {
    m.arch = type, m.experts = j.at("num_local_experts").get<std::int64_t>(), m.top_k = j.at("num_experts_per_tok").get<std::int64_t>();
  } else if (type == "qwen3_moe") {
    m.arch = type, m.experts = j.at("num_experts").get<std::int64_t>(), m.top_k = j.at("num_experts_per_tok").get<std::int64_t>();
    m.norm_topk_prob = j.value("norm_topk_prob", false);
    m.sparse_step = j.value("decoder_sparse_step", std::int64_t{1});
    if (j.contains("mlp_only_layers")) m.mlp_only_layers = j["mlp_only_layers"].get<std::vector<std::int64_t>>();
  }
  return m;
}

// The sparse block: p = softmax(router · h); the top_k largest (renormalised when
// norm_topk_prob); Σ p_e · expert_e(h).
Vec moe_mlp(const Checkpoint& ck, const Moe& m, const std::string& layer, const Vec& h) {
  const bool mixtral = m.arch == "mixtral";
  const std::string base = layer + (mixtral ? ".block_sparse_moe." : ".mlp.");
  Vec p = linear(load(ck, base + "gate.weight"), h);
  const double mx = *std::max_element(p.begin(), p.end());
  double tot = 0;
  for (double& z : p) tot += (z = std::exp(z - mx));
  for (double& z : p) z /= tot;
  std::vector<std::int64_t> order(p.size());
  for (std::size_t e = 0; e < order.size(); ++e) order[e] = static_cast<std::int64_t>(e);
  std::stable_sort(order.begin(), order.end(), [&p](std::int64_t a, std::int64_t b) { return p[static_cast<std::size_t>(a)] > p[static_cast<std::size_t>(b)]; });
  order.resize(static_cast<std::size_t>(m.top_k));
  double chosen = 0;
  for (std::int64_t e : order) chosen += p[static_cast<std::size_t>(e)];
  Vec out(h.size(), 0.0);
  for (std::int64_t e : order) {
    const std::string x = base + "experts." + std::to_string(e) + ".";
    const Vec y = mixtral ? gated_mlp(load(ck, x + "w1.weight"), load(ck, x + "w3.weight"), load(ck, x + "w2.weight"), h)
                          : gated_mlp(load(ck, x + "gate_proj.weight"), load(ck, x + "up_proj.weight"), load(ck, x + "down_proj.weight"), h);
    const double w = p[static_cast<std::size_t>(e)] / (m.norm_topk_prob ? chosen : 1.0);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += w * y[i];
  }
  return out;
}

}  // namespace

std::vector<double> reference_nll(const std::string& model_dir, const std::vector<std::int32_t>& ids,
                                  std::vector<double>* last_logits) {
  const ModelConfig c = load_model_config(model_dir);
  const Checkpoint ck(model_dir);
  const std::int64_t H = c.hidden_size, hd = c.head_dim, nh = c.num_heads, nkv = c.num_kv_heads;
  const std::int64_t T = static_cast<std::int64_t>(ids.size());
  const Moe moe = read_moe(model_dir);

  // Rotary frequencies, written out again here (llama3 scaling included).
  std::vector<double> inv(static_cast<std::size_t>(hd / 2));
  for (std::int64_t i = 0; i < hd / 2; ++i) {
    double f = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
    if (c.rope_scaling == RopeScaling::kLinear) f /= c.rope_factor;
    if (c.rope_scaling == RopeScaling::kLlama3) {
      const double wl = 2 * M_PI / f, lo = c.rope_original_max_position / c.rope_low_freq_factor,
                   hi = c.rope_original_max_position / c.rope_high_freq_factor;
      if (wl > lo) f /= c.rope_factor;
      else if (wl >= hi) {
        const double sm = (c.rope_original_max_position / wl - c.rope_low_freq_factor) / (c.rope_high_freq_factor - c.rope_low_freq_factor);
        f = (1 - sm) * f / c.rope_factor + sm * f;
      }
    }
    inv[static_cast<std::size_t>(i)] = f;
  }
  auto rope = [&](double* v, std::int64_t pos) {
    for (std::int64_t i = 0; i < hd / 2; ++i) {
      const double a = static_cast<double>(pos) * inv[static_cast<std::size_t>(i)];
      const double x0 = v[i], x1 = v[i + hd / 2];
      v[i] = x0 * std::cos(a) - x1 * std::sin(a);
      v[i + hd / 2] = x1 * std::cos(a) + x0 * std::sin(a);
    }
  };

  const Tensor embed = load(ck, "model.embed_tokens.weight");
  std::vector<Vec> x(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t) {
    x[static_cast<std::size_t>(t)].assign(embed.data.begin() + ids[static_cast<std::size_t>(t)] * H,
                                          embed.data.begin() + (ids[static_cast<std::size_t>(t)] + 1) * H);
  }
  for (std::int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l);
    const Tensor wq = load(ck, p + ".self_attn.q_proj.weight"), wk = load(ck, p + ".self_attn.k_proj.weight"),
                 wv = load(ck, p + ".self_attn.v_proj.weight"), wo = load(ck, p + ".self_attn.o_proj.weight"),
                 n1 = load(ck, p + ".input_layernorm.weight"), n2 = load(ck, p + ".post_attention_layernorm.weight");
    Tensor wg, wu, wd;  // a dense layer's MLP
    if (!moe.sparse(l)) wg = load(ck, p + ".mlp.gate_proj.weight"), wu = load(ck, p + ".mlp.up_proj.weight"), wd = load(ck, p + ".mlp.down_proj.weight");
    std::vector<Vec> q(static_cast<std::size_t>(T)), k(q.size()), v(q.size());
    for (std::int64_t t = 0; t < T; ++t) {
      Vec h = x[static_cast<std::size_t>(t)];
      rmsnorm(h.data(), n1, H, c.rms_norm_eps);
      Vec& qt = q[static_cast<std::size_t>(t)] = linear(wq, h);
      Vec& kt = k[static_cast<std::size_t>(t)] = linear(wk, h);
      Vec& vt = v[static_cast<std::size_t>(t)] = linear(wv, h);
      if (c.qkv_bias) {
        add(qt, load(ck, p + ".self_attn.q_proj.bias"));
        add(kt, load(ck, p + ".self_attn.k_proj.bias"));
        add(vt, load(ck, p + ".self_attn.v_proj.bias"));
      }
      if (c.qk_norm) {
        const Tensor qn = load(ck, p + ".self_attn.q_norm.weight"), kn = load(ck, p + ".self_attn.k_norm.weight");
        for (std::int64_t h2 = 0; h2 < nh; ++h2) rmsnorm(qt.data() + h2 * hd, qn, hd, c.rms_norm_eps);
        for (std::int64_t h2 = 0; h2 < nkv; ++h2) rmsnorm(kt.data() + h2 * hd, kn, hd, c.rms_norm_eps);
      }
      for (std::int64_t h2 = 0; h2 < nh; ++h2) rope(qt.data() + h2 * hd, t);
      for (std::int64_t h2 = 0; h2 < nkv; ++h2) rope(kt.data() + h2 * hd, t);
    }
    for (std::int64_t t = 0; t < T; ++t) {
      Vec att(static_cast<std::size_t>(nh * hd), 0.0);
      for (std::int64_t h2 = 0; h2 < nh; ++h2) {
        const std::int64_t g = h2 / (nh / nkv);
        const std::int64_t first = c.sliding_window > 0 ? std::max<std::int64_t>(0, t - c.sliding_window + 1) : 0;
        std::vector<double> s;
        double mx = -1e300;
        for (std::int64_t j = first; j <= t; ++j) {
          double d = 0;
          for (std::int64_t i = 0; i < hd; ++i) d += q[static_cast<std::size_t>(t)][static_cast<std::size_t>(h2 * hd + i)] * k[static_cast<std::size_t>(j)][static_cast<std::size_t>(g * hd + i)];
          s.push_back(d / std::sqrt(static_cast<double>(hd)));
          mx = std::max(mx, s.back());
        }
        double tot = 0;
        for (double& e : s) tot += (e = std::exp(e - mx));
        for (std::int64_t j = first; j <= t; ++j) {
          for (std::int64_t i = 0; i < hd; ++i) {
            att[static_cast<std::size_t>(h2 * hd + i)] += s[static_cast<std::size_t>(j - first)] / tot * v[static_cast<std::size_t>(j)][static_cast<std::size_t>(g * hd + i)];
          }
        }
      }
      Vec o = linear(wo, att);
      if (c.o_bias) add(o, load(ck, p + ".self_attn.o_proj.bias"));
      Vec& xt = x[static_cast<std::size_t>(t)];
      for (std::int64_t i = 0; i < H; ++i) xt[static_cast<std::size_t>(i)] += o[static_cast<std::size_t>(i)];
      Vec h = xt;
      rmsnorm(h.data(), n2, H, c.rms_norm_eps);
      const Vec d = moe.sparse(l) ? moe_mlp(ck, moe, p, h) : gated_mlp(wg, wu, wd, h);
      for (std::int64_t i = 0; i < H; ++i) xt[static_cast<std::size_t>(i)] += d[static_cast<std::size_t>(i)];
    }
  }
  const Tensor norm = load(ck, "model.norm.weight");
  const Tensor head = c.tie_word_embeddings ? embed : load(ck, "lm_head.weight");
  std::vector<double> nll;
  for (std::int64_t t = 0; t < T; ++t) {
    if (t + 1 == T && !last_logits) break;
    Vec h = x[static_cast<std::size_t>(t)];
    rmsnorm(h.data(), norm, H, c.rms_norm_eps);
    Vec logits = linear(head, h);
    if (t + 1 == T) {
      *last_logits = logits;
      break;
    }
    double mx = -1e300, s = 0;
    for (double z : logits) mx = std::max(mx, z);
    for (double z : logits) s += std::exp(z - mx);
    nll.push_back(mx + std::log(s) - logits[static_cast<std::size_t>(ids[static_cast<std::size_t>(t + 1)])]);
  }
  return nll;
}

}  // namespace plexus::testing
