// Double-precision Phi-3 reference: every buffer a std::vector<double>, every loop direct. Follows
// transformers' modeling_phi3 (Phi3Attention: qkv_proj split q | k | v, partial rotary over the
// first rotary_ndims dims of each head, rotate-half; Phi3MLP: gate_up_proj chunked gate | up,
// up · silu(gate)) and _compute_longrope_parameters / the dynamic longrope update.
#include "reference_phi3.h"

#include <cmath>
#include <stdexcept>

#include "core/json.h"
#include "core/mmap_file.h"
#include "model/checkpoint.h"

namespace plexus::testing {
namespace {

using Vec = std::vector<double>;

struct Mat {
  Vec data;  // (rows, cols)
  std::int64_t rows = 0, cols = 0;
};

Mat load_mat(const Checkpoint& ck, const std::string& name) {
  const TensorRef r = ck.get(name);
  Mat m;
  m.rows = r.info->shape[0];
  m.cols = r.info->shape.size() > 1 ? r.info->shape[1] : 1;
  m.data.resize(static_cast<std::size_t>(m.rows * m.cols));
  for (std::size_t i = 0; i < m.data.size(); ++i) {
    switch (r.info->dtype) {
      case DType::kF32: m.data[i] = static_cast<const float*>(r.data)[i]; break;
      case DType::kBF16: m.data[i] = bf16_to_f32(static_cast<const std::uint16_t*>(r.data)[i]); break;
      case DType::kF16: m.data[i] = f16_to_f32(static_cast<const std::uint16_t*>(r.data)[i]); break;
      default: throw std::runtime_error(name + ": the Phi-3 reference reads f32, bf16 or f16 checkpoints");
    }
  }
  return m;
}

// y = rows [r0, r0 + n) of w · x
Vec matvec(const Mat& w, const Vec& x, std::int64_t r0, std::int64_t n) {
  Vec y(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t r = 0; r < n; ++r) {
    double s = 0;
    const double* row = w.data.data() + (r0 + r) * w.cols;
    for (std::int64_t c = 0; c < w.cols; ++c) s += row[c] * x[static_cast<std::size_t>(c)];
    y[static_cast<std::size_t>(r)] = s;
  }
  return y;
}
Vec matvec(const Mat& w, const Vec& x) { return matvec(w, x, 0, w.rows); }

Vec rms_normed(const Vec& x, const Mat& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  Vec y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w.data[i];
  return y;
}

struct Layer {
  Mat qkv, o, gate_up, down, in_norm, post_norm;
};

// The config.json fields Phi3Config reads, with its defaults.
struct Phi3 {
  std::int64_t H = 0, L = 0, nh = 0, nkv = 0, hd = 0, I = 0, vocab = 0;
  double eps = 1e-5, theta = 10000;
  std::int64_t rot = 0;  // rotary_ndims = int(head_dim · partial_rotary_factor)
  std::int64_t window = 0;  // sliding_window; 0: none
  bool tied = false;
  bool longrope = false;
  Vec short_factor, long_factor;
  std::int64_t original_max = 4096;
  double attention_factor = 1;
};

// Whether config.json gives `key` (present and not null).
bool given(const Json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

Phi3 read_config(const std::string& dir) {
  const Json j = parse_json(read_text_file(dir + "/config.json"), "config.json");
  Phi3 c;
  c.H = j["hidden_size"].get<std::int64_t>();
  c.L = j["num_hidden_layers"].get<std::int64_t>();
  c.nh = j["num_attention_heads"].get<std::int64_t>();
  c.nkv = given(j, "num_key_value_heads") ? j["num_key_value_heads"].get<std::int64_t>() : c.nh;
  c.hd = given(j, "head_dim") ? j["head_dim"].get<std::int64_t>() : c.H / c.nh;
  c.I = j["intermediate_size"].get<std::int64_t>();
  c.vocab = j["vocab_size"].get<std::int64_t>();
  if (given(j, "rms_norm_eps")) c.eps = j["rms_norm_eps"].get<double>();
  if (given(j, "rope_theta")) c.theta = j["rope_theta"].get<double>();
  const double prf = given(j, "partial_rotary_factor") ? j["partial_rotary_factor"].get<double>() : 1.0;
  c.rot = static_cast<std::int64_t>(static_cast<double>(c.hd) * prf);
  if (given(j, "sliding_window")) c.window = j["sliding_window"].get<std::int64_t>();
  c.tied = given(j, "tie_word_embeddings") && j["tie_word_embeddings"].get<bool>();
  const std::int64_t max_pos = given(j, "max_position_embeddings") ? j["max_position_embeddings"].get<std::int64_t>() : 4096;
  if (given(j, "original_max_position_embeddings")) c.original_max = j["original_max_position_embeddings"].get<std::int64_t>();
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
    const Json& rs = j["rope_scaling"];
    const std::string type = rs.contains("rope_type") ? rs["rope_type"].get<std::string>() : rs["type"].get<std::string>();
    if (type != "longrope" && type != "su") throw std::runtime_error("the Phi-3 reference runs longrope, not " + type);
    c.longrope = true;
    for (const Json& v : rs["short_factor"]) c.short_factor.push_back(v.get<double>());
    for (const Json& v : rs["long_factor"]) c.long_factor.push_back(v.get<double>());
    const double factor = static_cast<double>(max_pos) / static_cast<double>(c.original_max);
    if (given(rs, "attention_factor")) {
      c.attention_factor = rs["attention_factor"].get<double>();
    } else {
      c.attention_factor = factor <= 1 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(static_cast<double>(c.original_max)));
    }
  }
  return c;
}

// q_rot = q[:rot] · cos + rotate_half(q[:rot]) · sin, cos/sin (rot) = [cos(p·f), cos(p·f)] ·
// attention_factor; q[rot:] unchanged. In place on one head x (hd).
void rotate(double* x, const Phi3& c, const Vec& inv_freq, std::int64_t pos) {
  const std::int64_t half = c.rot / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    const double a = static_cast<double>(pos) * inv_freq[static_cast<std::size_t>(i)];
    const double cs = std::cos(a) * c.attention_factor, sn = std::sin(a) * c.attention_factor;
    const double x0 = x[i], x1 = x[i + half];
    x[i] = x0 * cs - x1 * sn;
    x[i + half] = x1 * cs + x0 * sn;
  }
}

}  // namespace

std::vector<double> reference_phi3_nll(const std::string& model_dir, const std::vector<std::int32_t>& ids, std::int64_t chunk,
                                       std::vector<double>* last_logits) {
  const Phi3 c = read_config(model_dir);
  const Checkpoint ck(model_dir);
  const Mat embed = load_mat(ck, "model.embed_tokens.weight");
  const Mat head = c.tied ? embed : load_mat(ck, "lm_head.weight");
  const Mat final_norm = load_mat(ck, "model.norm.weight");
  std::vector<Layer> layers(static_cast<std::size_t>(c.L));
  for (std::int64_t l = 0; l < c.L; ++l) {
    const std::string p = "model.layers." + std::to_string(l);
    Layer& w = layers[static_cast<std::size_t>(l)];
    w.qkv = load_mat(ck, p + ".self_attn.qkv_proj.weight");
    w.o = load_mat(ck, p + ".self_attn.o_proj.weight");
    w.gate_up = load_mat(ck, p + ".mlp.gate_up_proj.weight");
    w.down = load_mat(ck, p + ".mlp.down_proj.weight");
    w.in_norm = load_mat(ck, p + ".input_layernorm.weight");
    w.post_norm = load_mat(ck, p + ".post_attention_layernorm.weight");
  }
  // inv_freq[i] = 1 / (ext_i · base^(2i/rot)), ext the short or long factors (1 without longrope).
  auto inv_freq_of = [&c](const Vec* ext) {
    Vec f(static_cast<std::size_t>(c.rot / 2));
    for (std::size_t i = 0; i < f.size(); ++i) {
      f[i] = 1.0 / ((ext ? (*ext)[i] : 1.0) * std::pow(c.theta, static_cast<double>(2 * i) / static_cast<double>(c.rot)));
    }
    return f;
  };
  const Vec short_freq = inv_freq_of(c.longrope ? &c.short_factor : nullptr);
  const Vec long_freq = inv_freq_of(c.longrope ? &c.long_factor : nullptr);

  const std::int64_t T = static_cast<std::int64_t>(ids.size()), Q = c.nh * c.hd, KV = c.nkv * c.hd, group = c.nh / c.nkv;
  const std::int64_t step = chunk > 0 ? chunk : T;
  // keys[l][t], values[l][t]: (KV) each, the cache.
  std::vector<std::vector<Vec>> keys(static_cast<std::size_t>(c.L)), values(static_cast<std::size_t>(c.L));
  std::vector<double> nll;
  for (std::int64_t t = 0; t < T; ++t) {
    // The forward call holding token t decides the factors by its largest position + 1.
    const std::int64_t call_end = std::min(T, (t / step + 1) * step);
    const Vec& inv_freq = c.longrope && call_end > c.original_max ? long_freq : short_freq;
    Vec x(embed.data.begin() + ids[static_cast<std::size_t>(t)] * c.H, embed.data.begin() + (ids[static_cast<std::size_t>(t)] + 1) * c.H);
    for (std::int64_t l = 0; l < c.L; ++l) {
      const Layer& w = layers[static_cast<std::size_t>(l)];
      const Vec h = rms_normed(x, w.in_norm, c.eps);
      Vec q = matvec(w.qkv, h, 0, Q), k = matvec(w.qkv, h, Q, KV), v = matvec(w.qkv, h, Q + KV, KV);
      for (std::int64_t a = 0; a < c.nh; ++a) rotate(q.data() + a * c.hd, c, inv_freq, t);
      for (std::int64_t g = 0; g < c.nkv; ++g) rotate(k.data() + g * c.hd, c, inv_freq, t);
      keys[static_cast<std::size_t>(l)].push_back(k);
      values[static_cast<std::size_t>(l)].push_back(v);
      // Causal, and within the window: key j is seen when t - window < j.
      const std::int64_t first = c.window > 0 ? std::max<std::int64_t>(0, t - c.window + 1) : 0;
      Vec att(static_cast<std::size_t>(Q), 0.0);
      for (std::int64_t a = 0; a < c.nh; ++a) {
        const std::int64_t g = a / group;
        Vec score;
        double mx = -1e300;
        for (std::int64_t j = first; j <= t; ++j) {
          double s = 0;
          for (std::int64_t d = 0; d < c.hd; ++d) s += q[static_cast<std::size_t>(a * c.hd + d)] * keys[static_cast<std::size_t>(l)][static_cast<std::size_t>(j)][static_cast<std::size_t>(g * c.hd + d)];
          score.push_back(s / std::sqrt(static_cast<double>(c.hd)));
          mx = std::max(mx, score.back());
        }
        double sum = 0;
        for (double& s : score) sum += (s = std::exp(s - mx));
        for (std::int64_t j = first; j <= t; ++j) {
          const double p = score[static_cast<std::size_t>(j - first)] / sum;
          for (std::int64_t d = 0; d < c.hd; ++d) att[static_cast<std::size_t>(a * c.hd + d)] += p * values[static_cast<std::size_t>(l)][static_cast<std::size_t>(j)][static_cast<std::size_t>(g * c.hd + d)];
        }
      }
      const Vec o = matvec(w.o, att);
      for (std::int64_t i = 0; i < c.H; ++i) x[static_cast<std::size_t>(i)] += o[static_cast<std::size_t>(i)];
      const Vec h2 = rms_normed(x, w.post_norm, c.eps);
      const Vec gate = matvec(w.gate_up, h2, 0, c.I), up = matvec(w.gate_up, h2, c.I, c.I);
      Vec act(static_cast<std::size_t>(c.I));
      for (std::size_t i = 0; i < act.size(); ++i) act[i] = up[i] * (gate[i] / (1 + std::exp(-gate[i])));
      const Vec d = matvec(w.down, act);
      for (std::int64_t i = 0; i < c.H; ++i) x[static_cast<std::size_t>(i)] += d[static_cast<std::size_t>(i)];
    }
    const Vec logits = matvec(head, rms_normed(x, final_norm, c.eps));
    if (t + 1 < T) {
      double mx = -1e300, sum = 0;
      for (double z : logits) mx = std::max(mx, z);
      for (double z : logits) sum += std::exp(z - mx);
      nll.push_back(std::log(sum) + mx - logits[static_cast<std::size_t>(ids[static_cast<std::size_t>(t + 1)])]);
    } else if (last_logits) {
      *last_logits = logits;
    }
  }
  return nll;
}

}  // namespace plexus::testing
