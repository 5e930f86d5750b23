// GPT-2 in double, as transformers' GPT2LMHeadModel computes it:
//   h = wte[ids] + wpe[positions]
//   per block: h += c_proj(attn(ln_1(h))); h += mlp.c_proj(gelu_new(c_fc(ln_2(h))))
//   attn: q, k, v = split(c_attn(x)) per head, softmax(q·kᵀ / sqrt(head_dim), causal)·v
//   logits = ln_f(h)·wteᵀ (lm_head tied)
// Conv1D(x) = x·W + b with W stored (in, out).
#include "reference_gpt2.h"

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

class Gpt2File {
 public:
  explicit Gpt2File(const std::string& dir) : file_(dir + "/model.safetensors") {}
  // NAME or transformer.NAME, flat, as double.
  Vec get(const std::string& name) const {
    const TensorInfo* t = file_.find("transformer." + name);
    if (!t) t = file_.find(name);
    if (!t) throw std::runtime_error("reference GPT-2: no tensor " + name);
    const void* d = file_.data(*t);
    Vec out(static_cast<std::size_t>(t->numel()));
    for (std::size_t i = 0; i < out.size(); ++i) {
      switch (t->dtype) {
        case DType::kF32: out[i] = static_cast<const float*>(d)[i]; break;
        case DType::kBF16: out[i] = bf16_to_f32(static_cast<const std::uint16_t*>(d)[i]); break;
        case DType::kF16: out[i] = f16_to_f32(static_cast<const std::uint16_t*>(d)[i]); break;
        default: throw std::runtime_error("reference GPT-2 reads f32, bf16 or f16");
      }
    }
    return out;
  }

 private:
  SafetensorsFile file_;
};

// y (n, out) = x (n, in)·W (in, out) + b (out): a Conv1D.
Vec conv1d(const Vec& x, std::int64_t n, std::int64_t in, const Vec& w, const Vec& b, std::int64_t out) {
  Vec y(static_cast<std::size_t>(n * out));
  for (std::int64_t t = 0; t < n; ++t) {
    for (std::int64_t o = 0; o < out; ++o) {
      double s = b[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < in; ++i) s += x[static_cast<std::size_t>(t * in + i)] * w[static_cast<std::size_t>(i * out + o)];
      y[static_cast<std::size_t>(t * out + o)] = s;
    }
  }
  return y;
}

Vec layer_norm(const Vec& x, std::int64_t n, std::int64_t d, const Vec& w, const Vec& b, double eps) {
  Vec y(x.size());
  for (std::int64_t t = 0; t < n; ++t) {
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < d; ++i) mean += x[static_cast<std::size_t>(t * d + i)];
    mean /= static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) {
      const double c = x[static_cast<std::size_t>(t * d + i)] - mean;
      var += c * c;
    }
    var /= static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) {
      const std::size_t k = static_cast<std::size_t>(t * d + i);
      y[k] = (x[k] - mean) / std::sqrt(var + eps) * w[static_cast<std::size_t>(i)] + b[static_cast<std::size_t>(i)];
    }
  }
  return y;
}

double gelu_new(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

std::int64_t config_int(const Json& j, const char* key, std::int64_t fallback) {
  return j.contains(key) && !j[key].is_null() ? j[key].get<std::int64_t>() : fallback;
}

}  // namespace

std::vector<double> reference_gpt2_nll(const std::string& model_dir, const std::vector<std::int32_t>& ids,
                                       std::vector<double>* last_logits) {
  const Json cfg = parse_json(read_text_file(model_dir + "/config.json"), model_dir + "/config.json");
  const std::int64_t H = config_int(cfg, "n_embd", 768), L = config_int(cfg, "n_layer", 12);
  const std::int64_t heads = config_int(cfg, "n_head", 12), I = config_int(cfg, "n_inner", 4 * H);
  const std::int64_t V = config_int(cfg, "vocab_size", 50257);
  const double eps = cfg.contains("layer_norm_epsilon") ? cfg["layer_norm_epsilon"].get<double>() : 1e-5;
  const std::int64_t hd = H / heads, n = static_cast<std::int64_t>(ids.size());
  const Gpt2File f(model_dir);

  const Vec wte = f.get("wte.weight"), wpe = f.get("wpe.weight");  // (V, H) (n_positions, H)
  Vec h(static_cast<std::size_t>(n * H));
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t i = 0; i < H; ++i)
      h[static_cast<std::size_t>(t * H + i)] = wte[static_cast<std::size_t>(ids[static_cast<std::size_t>(t)] * H + i)] +
                                              wpe[static_cast<std::size_t>(t * H + i)];
  for (std::int64_t l = 0; l < L; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    const Vec a = layer_norm(h, n, H, f.get(p + "ln_1.weight"), f.get(p + "ln_1.bias"), eps);
    const Vec qkv = conv1d(a, n, H, f.get(p + "attn.c_attn.weight"), f.get(p + "attn.c_attn.bias"), 3 * H);  // (n, 3H)
    Vec att(static_cast<std::size_t>(n * H));
    for (std::int64_t hh = 0; hh < heads; ++hh) {
      for (std::int64_t t = 0; t < n; ++t) {
        const double* q = &qkv[static_cast<std::size_t>(t * 3 * H + hh * hd)];
        Vec s(static_cast<std::size_t>(t + 1));
        double mx = -INFINITY;
        for (std::int64_t u = 0; u <= t; ++u) {
          const double* k = &qkv[static_cast<std::size_t>(u * 3 * H + H + hh * hd)];
          double d = 0;
          for (std::int64_t i = 0; i < hd; ++i) d += q[i] * k[i];
          s[static_cast<std::size_t>(u)] = d / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[static_cast<std::size_t>(u)]);
        }
        double z = 0;
        for (double& v : s) z += (v = std::exp(v - mx));
        for (std::int64_t u = 0; u <= t; ++u) {
          const double* v = &qkv[static_cast<std::size_t>(u * 3 * H + 2 * H + hh * hd)];
          for (std::int64_t i = 0; i < hd; ++i) att[static_cast<std::size_t>(t * H + hh * hd + i)] += s[static_cast<std::size_t>(u)] / z * v[i];
        }
      }
    }
    const Vec o = conv1d(att, n, H, f.get(p + "attn.c_proj.weight"), f.get(p + "attn.c_proj.bias"), H);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] += o[i];
    const Vec m = layer_norm(h, n, H, f.get(p + "ln_2.weight"), f.get(p + "ln_2.bias"), eps);
    Vec fc = conv1d(m, n, H, f.get(p + "mlp.c_fc.weight"), f.get(p + "mlp.c_fc.bias"), I);
    for (double& v : fc) v = gelu_new(v);
    const Vec pr = conv1d(fc, n, I, f.get(p + "mlp.c_proj.weight"), f.get(p + "mlp.c_proj.bias"), H);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] += pr[i];
  }
  const Vec x = layer_norm(h, n, H, f.get("ln_f.weight"), f.get("ln_f.bias"), eps);
  std::vector<double> nll;
  for (std::int64_t t = 0; t < n; ++t) {
    if (t + 1 >= n && !last_logits) break;
    Vec logits(static_cast<std::size_t>(V));
    double mx = -INFINITY;
    for (std::int64_t v = 0; v < V; ++v) {
      double s = 0;
      for (std::int64_t i = 0; i < H; ++i) s += x[static_cast<std::size_t>(t * H + i)] * wte[static_cast<std::size_t>(v * H + i)];
      logits[static_cast<std::size_t>(v)] = s;
      mx = std::max(mx, s);
    }
    if (t + 1 == n) {
      *last_logits = logits;
      break;
    }
    double z = 0;
    for (const double v : logits) z += std::exp(v - mx);
    nll.push_back(mx + std::log(z) - logits[static_cast<std::size_t>(ids[static_cast<std::size_t>(t + 1)])]);
  }
  return nll;
}

}  // namespace plexus::testing
