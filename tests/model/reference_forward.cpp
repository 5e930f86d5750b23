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

// Any tensor's elements, flat (gpt-oss's 3-D expert tensors).
Vec load_flat(const Checkpoint& ck, const std::string& name) {
  const TensorRef r = ck.get(name);
  Tensor t = load(ck, name);
  if (static_cast<std::int64_t>(t.data.size()) != r.info->numel()) {
    t.data.resize(static_cast<std::size_t>(r.info->numel()));
    for (std::size_t i = 0; i < t.data.size(); ++i) {
      t.data[i] = r.info->dtype == DType::kF32   ? static_cast<const float*>(r.data)[i]
                  : r.info->dtype == DType::kBF16 ? bf16_to_f32(static_cast<const std::uint16_t*>(r.data)[i])
                                                  : f16_to_f32(static_cast<const std::uint16_t*>(r.data)[i]);
    }
  }
  return t.data;
}

// A gpt-oss fused expert tensor NAME as the bf16 model holds it: NAME itself, or dequantised from
// NAME_blocks (E, R, G, 16) and NAME_scales (E, R, G), uint8, as transformers'
// convert_moe_packed_tensors does: block g of row r holds elements 32g + 2i (byte i's low nibble)
// and 32g + 2i + 1 (its high nibble) as E2M1 codes, times 2^(scale − 127); the (E, R, 32·G)
// result transposed to (E, 32·G, R).
Vec load_experts(const Checkpoint& ck, const std::string& name) {
  if (!ck.contains(name + "_blocks")) return load_flat(ck, name);
  static constexpr double kFp4[16] = {+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0,
                                      -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};
  const TensorRef b = ck.get(name + "_blocks"), s = ck.get(name + "_scales");
  if (b.info->dtype_name != "U8" || s.info->dtype_name != "U8") throw std::runtime_error(name + ": MXFP4 parts must be U8");
  const std::int64_t E = b.info->shape[0], R = b.info->shape[1], G = b.info->shape[2], C = 32 * G;
  if (b.info->shape[3] != 16 || s.info->shape != std::vector<std::int64_t>{E, R, G}) throw std::runtime_error(name + ": MXFP4 shapes");
  const auto* bytes = static_cast<const std::uint8_t*>(b.data);
  const auto* scales = static_cast<const std::uint8_t*>(s.data);
  Vec out(static_cast<std::size_t>(E * C * R));
  for (std::int64_t e = 0; e < E; ++e) {
    for (std::int64_t r = 0; r < R; ++r) {
      for (std::int64_t g = 0; g < G; ++g) {
        const std::int64_t block = (e * R + r) * G + g;
        const int exponent = static_cast<int>(scales[block]) - 127;
        for (std::int64_t i = 0; i < 16; ++i) {
          const std::uint8_t v = bytes[block * 16 + i];
          const std::int64_t c = 32 * g + 2 * i;
          out[static_cast<std::size_t>((e * C + c) * R + r)] = std::ldexp(kFp4[v & 15], exponent);
          out[static_cast<std::size_t>((e * C + c + 1) * R + r)] = std::ldexp(kFp4[v >> 4], exponent);
        }
      }
    }
  }
  return out;
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

// gpt-oss's fields, read by GptOssConfig's names and defaults (configuration_gpt_oss.py), and
// YaRN's as modeling_rope_utils' _compute_yarn_parameters reads them.
struct GptOss {
  bool on = false;
  std::int64_t experts = 0, top_k = 4, window = 128;
  double alpha = 1.702, limit = 7.0, eps = 1e-5;
  std::vector<bool> sliding;  // per layer
  double attention_factor = 1;
  std::vector<double> inv_freq;  // (head_dim / 2)
};

// config.json's number `key`, or `fallback` when absent or null (GptOssConfig's default).
double number_or(const Json& j, const char* key, double fallback) {
  return j.contains(key) && !j[key].is_null() ? j[key].get<double>() : fallback;
}

GptOss read_gpt_oss(const std::string& model_dir) {
  const Json j = parse_json(read_text_file(model_dir + "/config.json"), "config.json");
  GptOss g;
  if (j.value("model_type", "") != "gpt_oss") return g;
  g.on = true;
  g.experts = j.at("num_local_experts").get<std::int64_t>();
  g.top_k = static_cast<std::int64_t>(number_or(j, "num_experts_per_tok", 4));
  g.window = static_cast<std::int64_t>(number_or(j, "sliding_window", 128));
  g.alpha = number_or(j, "swiglu_alpha", 1.702), g.limit = number_or(j, "swiglu_limit", 7.0);
  g.eps = number_or(j, "rms_norm_eps", 1e-5);
  const bool types = j.contains("layer_types") && j["layer_types"].is_array();
  const std::int64_t L = j.at("num_hidden_layers").get<std::int64_t>();
  for (std::int64_t l = 0; l < L; ++l) {
    g.sliding.push_back(types ? j["layer_types"][static_cast<std::size_t>(l)].get<std::string>() == "sliding_attention"
                                                  : (l + 1) % 2 == 1);
  }
  const std::int64_t hd = j.contains("head_dim") && !j["head_dim"].is_null() ? j["head_dim"].get<std::int64_t>()
                                                 : j.at("hidden_size").get<std::int64_t>() / j.at("num_attention_heads").get<std::int64_t>();
  const double base = number_or(j, "rope_theta", 150000.0), dim = static_cast<double>(hd);
  const auto max_pos = static_cast<std::int64_t>(number_or(j, "max_position_embeddings", 131072));
  Json rs = j.contains("rope_scaling") && j["rope_scaling"].is_object()
                ? j["rope_scaling"]
                : Json{{"factor", 32.0}, {"beta_fast", 32.0}, {"beta_slow", 1.0}, {"truncate", false}, {"original_max_position_embeddings", 4096}};
  const double orig = rs.contains("original_max_position_embeddings") ? rs["original_max_position_embeddings"].get<double>()
                                                                      : static_cast<double>(max_pos);
  const double factor = rs.contains("factor") ? rs["factor"].get<double>() : static_cast<double>(max_pos) / orig;
  g.attention_factor = rs.contains("attention_factor") ? rs["attention_factor"].get<double>() : (factor <= 1 ? 1.0 : 0.1 * std::log(factor) + 1.0);
  const double beta_fast = number_or(rs, "beta_fast", 32.0), beta_slow = number_or(rs, "beta_slow", 1.0);
  const bool truncate = !rs.contains("truncate") || rs["truncate"].is_null() || rs["truncate"].get<bool>();
  auto corr = [&](double rot) { return dim * std::log(orig / (rot * 2 * M_PI)) / (2 * std::log(base)); };
  double low = corr(beta_fast), high = corr(beta_slow);
  if (truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0), high = std::min(high, dim - 1);
  if (low == high) high += 0.001;
  for (std::int64_t i = 0; i < hd / 2; ++i) {
    const double pos_freq = std::pow(base, 2.0 * static_cast<double>(i) / dim);
    const double extra = 1.0 - std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    g.inv_freq.push_back(1.0 / (factor * pos_freq) * (1 - extra) + 1.0 / pos_freq * extra);
  }
  return g;
}

// GptOssMLP: logits = router·h + b; the top k softmaxed among themselves; each chosen expert's
// gate_up = h·gate_up_proj[e] + bias (gate_up_proj and down_proj bf16/f32, or dequantised from MXFP4) (gate = even columns, up = odd), clamped, (up + 1)·gate·
// sigmoid(alpha·gate), ·down_proj[e] + bias; summed with the weights.
Vec gpt_oss_mlp(const Checkpoint& ck, const GptOss& g, const std::string& layer, const Vec& h) {
  const std::string base = layer + ".mlp.";
  Vec logits = linear(load(ck, base + "router.weight"), h);
  const Tensor rb = load(ck, base + "router.bias");
  add(logits, rb);
  std::vector<std::int64_t> order(logits.size());
  for (std::size_t e = 0; e < order.size(); ++e) order[e] = static_cast<std::int64_t>(e);
  std::stable_sort(order.begin(), order.end(), [&logits](std::int64_t a, std::int64_t b) { return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)]; });
  order.resize(static_cast<std::size_t>(g.top_k));
  const double mx = logits[static_cast<std::size_t>(order[0])];
  double tot = 0;
  for (std::int64_t e : order) tot += std::exp(logits[static_cast<std::size_t>(e)] - mx);
  const Vec gu = load_experts(ck, base + "experts.gate_up_proj"), gub = load_flat(ck, base + "experts.gate_up_proj_bias");
  const Vec dp = load_experts(ck, base + "experts.down_proj"), dpb = load_flat(ck, base + "experts.down_proj_bias");
  const std::int64_t H = static_cast<std::int64_t>(h.size()), I = static_cast<std::int64_t>(gub.size()) / g.experts / 2;
  Vec out(h.size(), 0.0);
  std::sort(order.begin(), order.end());  // summed in ascending expert order
  for (std::int64_t e : order) {
    Vec act(static_cast<std::size_t>(I));
    for (std::int64_t i = 0; i < I; ++i) {
      double gate = gub[static_cast<std::size_t>(e * 2 * I + 2 * i)], up = gub[static_cast<std::size_t>(e * 2 * I + 2 * i + 1)];
      for (std::int64_t d = 0; d < H; ++d) {
        gate += h[static_cast<std::size_t>(d)] * gu[static_cast<std::size_t>((e * H + d) * 2 * I + 2 * i)];
        up += h[static_cast<std::size_t>(d)] * gu[static_cast<std::size_t>((e * H + d) * 2 * I + 2 * i + 1)];
      }
      gate = std::min(gate, g.limit);
      up = std::clamp(up, -g.limit, g.limit);
      act[static_cast<std::size_t>(i)] = (up + 1) * gate / (1 + std::exp(-g.alpha * gate));
    }
    const double w = std::exp(logits[static_cast<std::size_t>(e)] - mx) / tot;
    for (std::int64_t d = 0; d < H; ++d) {
      double y = dpb[static_cast<std::size_t>(e * H + d)];
      for (std::int64_t i = 0; i < I; ++i) y += act[static_cast<std::size_t>(i)] * dp[static_cast<std::size_t>((e * I + i) * H + d)];
      out[static_cast<std::size_t>(d)] += w * y;
    }
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
  const GptOss oss = read_gpt_oss(model_dir);
  const double eps = oss.on ? oss.eps : c.rms_norm_eps;

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
  if (oss.on) inv = oss.inv_freq;
  const double m = oss.attention_factor;  // gpt-oss's YaRN: cos and sin scaled
  auto rope = [&](double* v, std::int64_t pos) {
    for (std::int64_t i = 0; i < hd / 2; ++i) {
      const double a = static_cast<double>(pos) * inv[static_cast<std::size_t>(i)];
      const double x0 = v[i], x1 = v[i + hd / 2];
      v[i] = x0 * std::cos(a) * m - x1 * std::sin(a) * m;
      v[i + hd / 2] = x1 * std::cos(a) * m + x0 * std::sin(a) * m;
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
    if (!moe.sparse(l) && !oss.on) wg = load(ck, p + ".mlp.gate_proj.weight"), wu = load(ck, p + ".mlp.up_proj.weight"), wd = load(ck, p + ".mlp.down_proj.weight");
    std::vector<Vec> q(static_cast<std::size_t>(T)), k(q.size()), v(q.size());
    for (std::int64_t t = 0; t < T; ++t) {
      Vec h = x[static_cast<std::size_t>(t)];
      rmsnorm(h.data(), n1, H, eps);
      Vec& qt = q[static_cast<std::size_t>(t)] = linear(wq, h);
      Vec& kt = k[static_cast<std::size_t>(t)] = linear(wk, h);
      Vec& vt = v[static_cast<std::size_t>(t)] = linear(wv, h);
      if (c.qkv_bias || oss.on) {
        add(qt, load(ck, p + ".self_attn.q_proj.bias"));
        add(kt, load(ck, p + ".self_attn.k_proj.bias"));
        add(vt, load(ck, p + ".self_attn.v_proj.bias"));
      }
      if (c.qk_norm) {
        const Tensor qn = load(ck, p + ".self_attn.q_norm.weight"), kn = load(ck, p + ".self_attn.k_norm.weight");
        for (std::int64_t h2 = 0; h2 < nh; ++h2) rmsnorm(qt.data() + h2 * hd, qn, hd, eps);
        for (std::int64_t h2 = 0; h2 < nkv; ++h2) rmsnorm(kt.data() + h2 * hd, kn, hd, eps);
      }
      for (std::int64_t h2 = 0; h2 < nh; ++h2) rope(qt.data() + h2 * hd, t);
      for (std::int64_t h2 = 0; h2 < nkv; ++h2) rope(kt.data() + h2 * hd, t);
    }
    for (std::int64_t t = 0; t < T; ++t) {
      Vec att(static_cast<std::size_t>(nh * hd), 0.0);
      for (std::int64_t h2 = 0; h2 < nh; ++h2) {
        const std::int64_t g = h2 / (nh / nkv);
        const std::int64_t window = oss.on ? (oss.sliding[static_cast<std::size_t>(l)] ? oss.window : 0) : c.sliding_window;
        const std::int64_t first = window > 0 ? std::max<std::int64_t>(0, t - window + 1) : 0;
        std::vector<double> s;
        double mx = -1e300;
        double sink = 0;  // gpt-oss: one more logit in the denominator
        if (oss.on) mx = sink = load(ck, p + ".self_attn.sinks").data[static_cast<std::size_t>(h2)];
        for (std::int64_t j = first; j <= t; ++j) {
          double d = 0;
          for (std::int64_t i = 0; i < hd; ++i) d += q[static_cast<std::size_t>(t)][static_cast<std::size_t>(h2 * hd + i)] * k[static_cast<std::size_t>(j)][static_cast<std::size_t>(g * hd + i)];
          s.push_back(d / std::sqrt(static_cast<double>(hd)));
          mx = std::max(mx, s.back());
        }
        double tot = oss.on ? std::exp(sink - mx) : 0;
        for (double& e : s) tot += (e = std::exp(e - mx));
        for (std::int64_t j = first; j <= t; ++j) {
          for (std::int64_t i = 0; i < hd; ++i) {
            att[static_cast<std::size_t>(h2 * hd + i)] += s[static_cast<std::size_t>(j - first)] / tot * v[static_cast<std::size_t>(j)][static_cast<std::size_t>(g * hd + i)];
          }
        }
      }
      Vec o = linear(wo, att);
      if (c.o_bias || oss.on) add(o, load(ck, p + ".self_attn.o_proj.bias"));
      Vec& xt = x[static_cast<std::size_t>(t)];
      for (std::int64_t i = 0; i < H; ++i) xt[static_cast<std::size_t>(i)] += o[static_cast<std::size_t>(i)];
      Vec h = xt;
      rmsnorm(h.data(), n2, H, eps);
      const Vec d = oss.on ? gpt_oss_mlp(ck, oss, p, h) : moe.sparse(l) ? moe_mlp(ck, moe, p, h) : gated_mlp(wg, wu, wd, h);
      for (std::int64_t i = 0; i < H; ++i) xt[static_cast<std::size_t>(i)] += d[static_cast<std::size_t>(i)];
    }
  }
  const Tensor norm = load(ck, "model.norm.weight");
  const Tensor head = c.tie_word_embeddings ? embed : load(ck, "lm_head.weight");
  std::vector<double> nll;
  for (std::int64_t t = 0; t < T; ++t) {
    if (t + 1 == T && !last_logits) break;
    Vec h = x[static_cast<std::size_t>(t)];
    rmsnorm(h.data(), norm, H, eps);
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
