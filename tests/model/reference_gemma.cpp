// Double-precision Gemma 2 / Gemma 3 reference: every buffer a std::vector<double>, every loop direct.
#include "reference_gemma.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "core/dtype.h"
#include "core/json.h"
#include "core/mmap_file.h"
#include "model/safetensors.h"

namespace plexus::testing {
namespace {

using Vec = std::vector<double>;

struct Mat {
  Vec data;
  std::int64_t rows = 0, cols = 0;
};

// config.json's number `key`, or Hugging Face's default.
double num(const Json& c, const char* key, double fallback) {
  return c.contains(key) && !c[key].is_null() ? c[key].get<double>() : fallback;
}

struct GemmaRef {
  bool gemma3 = false;
  std::string prefix;  // "language_model." inside a Gemma3ForConditionalGeneration checkpoint (its older layout)
  std::int64_t H = 0, L = 0, heads = 0, kv_heads = 0, hd = 0, I = 0, vocab = 0;
  double eps = 1e-6, query_pre_attn_scalar = 256, attn_cap = 0, final_cap = 0;
  std::int64_t window = 0;
  std::vector<bool> sliding;
  double rope_theta = 10000, rope_local = 10000, linear_factor = 1;
};

GemmaRef read_config(const std::string& dir) {
  Json top = parse_json(read_text_file(dir + "/config.json"), dir);
  const std::string arch = top["architectures"][0].get<std::string>();
  GemmaRef g;
  Json c = top;
  if (arch == "Gemma3ForConditionalGeneration") c = top["text_config"], g.prefix = "language_model.";
  g.gemma3 = arch != "Gemma2ForCausalLM";
  g.H = static_cast<std::int64_t>(num(c, "hidden_size", 2304));
  g.L = static_cast<std::int64_t>(num(c, "num_hidden_layers", 26));
  g.heads = static_cast<std::int64_t>(num(c, "num_attention_heads", 8));
  g.kv_heads = static_cast<std::int64_t>(num(c, "num_key_value_heads", 4));
  g.hd = static_cast<std::int64_t>(num(c, "head_dim", 256));
  g.I = static_cast<std::int64_t>(num(c, "intermediate_size", 9216));
  g.vocab = static_cast<std::int64_t>(num(c, "vocab_size", g.gemma3 ? 262208 : 256000));
  g.eps = num(c, "rms_norm_eps", 1e-6);
  g.query_pre_attn_scalar = num(c, "query_pre_attn_scalar", 256);
  // Gemma2Config defaults the caps to 50 and 30; Gemma3TextConfig to none.
  g.attn_cap = c.contains("attn_logit_softcapping") ? num(c, "attn_logit_softcapping", 0) : (g.gemma3 ? 0 : 50);
  g.final_cap = c.contains("final_logit_softcapping") ? num(c, "final_logit_softcapping", 0) : (g.gemma3 ? 0 : 30);
  g.window = static_cast<std::int64_t>(num(c, "sliding_window", 4096));
  g.rope_theta = num(c, "rope_theta", g.gemma3 ? 1e6 : 1e4);
  g.rope_local = num(c, "rope_local_base_freq", 1e4);
  if (c.contains("rope_scaling") && c["rope_scaling"].is_object()) {
    const Json& rs = c["rope_scaling"];
    const std::string type = rs.contains("rope_type") ? rs["rope_type"].get<std::string>() : rs["type"].get<std::string>();
    if (type != "linear") throw std::runtime_error("reference Gemma: rope_scaling " + type);
    g.linear_factor = rs["factor"].get<double>();
  }
  const std::int64_t pattern = static_cast<std::int64_t>(num(c, "sliding_window_pattern", 6));
  for (std::int64_t l = 0; l < g.L; ++l) {
    if (c.contains("layer_types") && c["layer_types"].is_array()) {
      g.sliding.push_back(c["layer_types"][static_cast<std::size_t>(l)].get<std::string>() == "sliding_attention");
    } else {
      g.sliding.push_back(g.gemma3 ? (l + 1) % pattern != 0 : (l + 1) % 2 != 0);
    }
  }
  return g;
}

double element(const TensorInfo& t, const void* data, std::size_t i) {
  switch (t.dtype) {
    case DType::kF32: return static_cast<const float*>(data)[i];
    case DType::kBF16: return bf16_to_f32(static_cast<const std::uint16_t*>(data)[i]);
    case DType::kF16: return f16_to_f32(static_cast<const std::uint16_t*>(data)[i]);
    default: throw std::runtime_error(t.name + ": the reference reads f32, bf16 or f16");
  }
}

Mat load(const SafetensorsFile& f, const std::string& name) {
  const TensorInfo* t = f.find(name);
  if (t == nullptr) throw std::runtime_error("reference Gemma: no tensor " + name);
  Mat m;
  m.rows = t->shape[0];
  m.cols = t->shape.size() > 1 ? t->shape[1] : 1;
  m.data.resize(static_cast<std::size_t>(m.rows * m.cols));
  for (std::size_t i = 0; i < m.data.size(); ++i) m.data[i] = element(*t, f.data(*t), i);
  return m;
}

Vec linear(const Mat& w, const double* x) {  // w (rows, cols) · x (cols)
  Vec y(static_cast<std::size_t>(w.rows), 0.0);
  for (std::int64_t r = 0; r < w.rows; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < w.cols; ++c) s += w.data[static_cast<std::size_t>(r * w.cols + c)] * x[c];
    y[static_cast<std::size_t>(r)] = s;
  }
  return y;
}

// Gemma's RMSNorm: x / sqrt(mean(x²) + eps) · (1 + w), in place on x (n).
void gemma_rmsnorm(double* x, const Mat& w, std::int64_t n, double eps) {
  double ss = 0;
  for (std::int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (std::int64_t i = 0; i < n; ++i) x[i] = x[i] * s * (1.0 + w.data[static_cast<std::size_t>(i)]);
}

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

// Rotate-half RoPE of one head x (hd) at `pos` with base `theta`, frequencies ÷ `factor`.
void rope(double* x, std::int64_t hd, std::int64_t pos, double theta, double factor) {
  const std::int64_t half = hd / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    const double inv = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(hd)) / factor;
    const double a = static_cast<double>(pos) * inv, c = std::cos(a), s = std::sin(a);
    const double x0 = x[i], x1 = x[i + half];
    x[i] = x0 * c - x1 * s;
    x[i + half] = x1 * c + x0 * s;
  }
}

struct Layer {
  Mat q, k, v, o, gate, up, down, in_norm, post_attn_norm, pre_ff_norm, post_ff_norm, q_norm, k_norm;
};

}  // namespace

std::vector<double> reference_gemma_nll(const std::string& dir, const std::vector<std::int32_t>& ids,
                                        std::vector<double>* last_logits) {
  const GemmaRef g = read_config(dir);
  const SafetensorsFile f(dir + "/model.safetensors");
  // A vision-language checkpoint holds the language model as language_model.model.* (and
  // language_model.lm_head.*) or, in newer transformers' layout, model.language_model.* (and lm_head.*).
  std::string m = g.prefix + "model.", head_name = g.prefix + "lm_head.weight";
  if (!g.prefix.empty() && f.find(m + "embed_tokens.weight") == nullptr) m = "model.language_model.", head_name = "lm_head.weight";
  const Mat embed = load(f, m + "embed_tokens.weight");
  const Mat final_norm = load(f, m + "norm.weight");
  const Mat head = f.find(head_name) != nullptr ? load(f, head_name) : embed;
  // The normalizer √H as a tensor of the model's dtype (Hugging Face: torch.tensor(√H, dtype)).
  const DType dt = f.find(m + "embed_tokens.weight")->dtype;
  const float sqrt_h = static_cast<float>(std::sqrt(static_cast<double>(g.H)));
  const double normalizer = dt == DType::kBF16  ? bf16_to_f32(f32_to_bf16(sqrt_h))
                            : dt == DType::kF16 ? f16_to_f32(f32_to_f16(sqrt_h))
                                                : static_cast<double>(sqrt_h);
  std::vector<Layer> layers(static_cast<std::size_t>(g.L));
  for (std::int64_t l = 0; l < g.L; ++l) {
    const std::string p = m + "layers." + std::to_string(l) + ".";
    Layer& w = layers[static_cast<std::size_t>(l)];
    w.q = load(f, p + "self_attn.q_proj.weight"), w.k = load(f, p + "self_attn.k_proj.weight");
    w.v = load(f, p + "self_attn.v_proj.weight"), w.o = load(f, p + "self_attn.o_proj.weight");
    w.gate = load(f, p + "mlp.gate_proj.weight"), w.up = load(f, p + "mlp.up_proj.weight");
    w.down = load(f, p + "mlp.down_proj.weight");
    w.in_norm = load(f, p + "input_layernorm.weight"), w.post_attn_norm = load(f, p + "post_attention_layernorm.weight");
    w.pre_ff_norm = load(f, p + "pre_feedforward_layernorm.weight");
    w.post_ff_norm = load(f, p + "post_feedforward_layernorm.weight");
    if (g.gemma3) w.q_norm = load(f, p + "self_attn.q_norm.weight"), w.k_norm = load(f, p + "self_attn.k_norm.weight");
  }
  const std::int64_t T = static_cast<std::int64_t>(ids.size()), H = g.H, hd = g.hd, group = g.heads / g.kv_heads;
  // keys/values (L, T, kv_heads·hd)
  std::vector<Vec> keys(static_cast<std::size_t>(g.L)), values(static_cast<std::size_t>(g.L));
  std::vector<double> nll;
  for (std::int64_t t = 0; t < T; ++t) {
    Vec h(static_cast<std::size_t>(H));
    for (std::int64_t i = 0; i < H; ++i) h[static_cast<std::size_t>(i)] = embed.data[static_cast<std::size_t>(ids[static_cast<std::size_t>(t)] * H + i)] * normalizer;
    for (std::int64_t l = 0; l < g.L; ++l) {
      const Layer& w = layers[static_cast<std::size_t>(l)];
      const bool sliding = g.sliding[static_cast<std::size_t>(l)];
      Vec x = h;
      gemma_rmsnorm(x.data(), w.in_norm, H, g.eps);
      Vec q = linear(w.q, x.data()), k = linear(w.k, x.data()), v = linear(w.v, x.data());
      // Gemma 3: local layers rotate with rope_local_base_freq unscaled; global ones with rope_theta and the scaling.
      const double theta = g.gemma3 && sliding ? g.rope_local : g.rope_theta;
      const double factor = g.gemma3 && sliding ? 1.0 : g.linear_factor;
      for (std::int64_t a = 0; a < g.heads; ++a) {
        if (g.gemma3) gemma_rmsnorm(q.data() + a * hd, w.q_norm, hd, g.eps);
        rope(q.data() + a * hd, hd, t, theta, factor);
      }
      for (std::int64_t a = 0; a < g.kv_heads; ++a) {
        if (g.gemma3) gemma_rmsnorm(k.data() + a * hd, w.k_norm, hd, g.eps);
        rope(k.data() + a * hd, hd, t, theta, factor);
      }
      Vec& K = keys[static_cast<std::size_t>(l)];
      Vec& V = values[static_cast<std::size_t>(l)];
      K.insert(K.end(), k.begin(), k.end());
      V.insert(V.end(), v.begin(), v.end());
      const std::int64_t KV = g.kv_heads * hd;
      Vec att(static_cast<std::size_t>(g.heads * hd), 0.0);
      const double scaling = 1.0 / std::sqrt(g.query_pre_attn_scalar);
      for (std::int64_t a = 0; a < g.heads; ++a) {
        const std::int64_t kvh = a / group;
        // The mask: causal, and on sliding layers the last `window` positions (t − j < window).
        const std::int64_t first = sliding && g.window > 0 ? std::max<std::int64_t>(0, t - g.window + 1) : 0;
        Vec s;
        double mx = -INFINITY;
        for (std::int64_t j = first; j <= t; ++j) {
          double d = 0;
          for (std::int64_t c = 0; c < hd; ++c) d += q[static_cast<std::size_t>(a * hd + c)] * K[static_cast<std::size_t>(j * KV + kvh * hd + c)];
          d *= scaling;
          if (g.attn_cap > 0) d = std::tanh(d / g.attn_cap) * g.attn_cap;
          s.push_back(d);
          mx = std::max(mx, d);
        }
        double sum = 0;
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (std::int64_t j = first; j <= t; ++j) {
          const double p = s[static_cast<std::size_t>(j - first)] / sum;
          for (std::int64_t c = 0; c < hd; ++c) att[static_cast<std::size_t>(a * hd + c)] += p * V[static_cast<std::size_t>(j * KV + kvh * hd + c)];
        }
      }
      Vec o = linear(w.o, att.data());
      gemma_rmsnorm(o.data(), w.post_attn_norm, H, g.eps);
      for (std::int64_t i = 0; i < H; ++i) h[static_cast<std::size_t>(i)] += o[static_cast<std::size_t>(i)];
      x = h;
      gemma_rmsnorm(x.data(), w.pre_ff_norm, H, g.eps);
      Vec gt = linear(w.gate, x.data());
      const Vec ut = linear(w.up, x.data());
      for (std::size_t i = 0; i < gt.size(); ++i) gt[i] = gelu_tanh(gt[i]) * ut[i];
      Vec mlp = linear(w.down, gt.data());
      gemma_rmsnorm(mlp.data(), w.post_ff_norm, H, g.eps);
      for (std::int64_t i = 0; i < H; ++i) h[static_cast<std::size_t>(i)] += mlp[static_cast<std::size_t>(i)];
    }
    gemma_rmsnorm(h.data(), final_norm, H, g.eps);
    Vec logits = linear(head, h.data());
    if (g.final_cap > 0) {
      for (double& z : logits) z = std::tanh(z / g.final_cap) * g.final_cap;
    }
    if (t + 1 < T) {
      double mx = -INFINITY;
      for (double z : logits) mx = std::max(mx, z);
      double sum = 0;
      for (double z : logits) sum += std::exp(z - mx);
      nll.push_back(std::log(sum) + mx - logits[static_cast<std::size_t>(ids[static_cast<std::size_t>(t + 1)])]);
    } else if (last_logits != nullptr) {
      *last_logits = logits;
    }
  }
  return nll;
}

}  // namespace plexus::testing
