// RefTrainOps: every training op as the textbook formula, double accumulators, one thread; under
// kBf16 each product's inputs pass through operand() (rounded to bf16).
#include "train/ref_train_ops.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <limits>
#include <vector>

#include "core/dtype.h"

namespace plexus {

double RefTrainOps::operand(float v) const { return precision() == TrainPrecision::kBf16 ? round_to_bf16(v) : v; }

void RefTrainOps::embed(const float* table, std::span<const std::int32_t> ids, std::int64_t d, float* x) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (std::int64_t j = 0; j < d; ++j) x[static_cast<std::int64_t>(i) * d + j] = table[ids[i] * d + j];
}

void RefTrainOps::rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y,
                          float* rstd) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    double ss = 0;
    for (std::int64_t j = 0; j < d; ++j) ss += static_cast<double>(xr[j]) * xr[j];
    const float rs = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
    rstd[r] = rs;
    for (std::int64_t j = 0; j < d; ++j) y[r * d + j] = xr[j] * rs * w[j];
  }
}

void RefTrainOps::linear(const float* x, const float* w, const float* bias, std::int64_t n, std::int64_t in,
                         std::int64_t out, float* y) {
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t o = 0; o < out; ++o) {
      double acc = bias ? bias[o] : 0.0;
      for (std::int64_t i = 0; i < in; ++i) acc += operand(x[t * in + i]) * operand(w[o * in + i]);
      y[t * out + o] = static_cast<float>(acc);
    }
}

void RefTrainOps::rope(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim,
                       const float* cos, const float* sin, bool inverse) {
  rope_partial(x, b, T, heads, head_dim, head_dim, cos, sin, inverse);  // every dim of each head rotated
}

namespace {

// The first key position query t may read.
std::int64_t first_key(std::int64_t t, std::int64_t window) {
  return window > 0 ? std::max<std::int64_t>(0, t - window + 1) : 0;
}

}  // namespace

void RefTrainOps::attention(const float* q, const float* k, const float* v, std::int64_t b, std::int64_t T,
                            const AttentionShape& s, float* out, float* lse) {
  const std::int64_t hd = s.head_dim, qw = s.n_heads * hd, kw = s.n_kv_heads * hd;
  const std::int64_t group = s.n_heads / s.n_kv_heads;
  std::vector<double> p(static_cast<std::size_t>(T));
  for (std::int64_t sq = 0; sq < b; ++sq)
    for (std::int64_t h = 0; h < s.n_heads; ++h) {
      const std::int64_t kh = h / group;
      for (std::int64_t t = 0; t < T; ++t) {
        const float* qr = q + (sq * T + t) * qw + h * hd;
        const std::int64_t lo = first_key(t, s.window);
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = lo; j <= t; ++j) {
          const float* kr = k + (sq * T + j) * kw + kh * hd;
          double dot = 0;
          for (std::int64_t c = 0; c < hd; ++c) dot += operand(qr[c]) * operand(kr[c]);
          p[static_cast<std::size_t>(j)] = s.softcap > 0 ? s.softcap * std::tanh(dot * s.scale / s.softcap) : dot * s.scale;
          mx = std::max(mx, p[static_cast<std::size_t>(j)]);
        }
        double sum = 0;
        for (std::int64_t j = lo; j <= t; ++j) sum += std::exp(p[static_cast<std::size_t>(j)] - mx);
        lse[(sq * s.n_heads + h) * T + t] = static_cast<float>(mx + std::log(sum));
        float* o = out + (sq * T + t) * qw + h * hd;
        for (std::int64_t c = 0; c < hd; ++c) {
          double acc = 0;
          for (std::int64_t j = lo; j <= t; ++j)
            acc += operand(std::exp(p[static_cast<std::size_t>(j)] - mx) / sum) *
                   operand(v[(sq * T + j) * kw + kh * hd + c]);
          o[c] = static_cast<float>(acc);
        }
      }
    }
}

void RefTrainOps::silu_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

double RefTrainOps::cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                                  float grad_scale) {
  double loss = 0;
  for (std::size_t r = 0; r < targets.size(); ++r) {
    float* l = logits + static_cast<std::int64_t>(r) * vocab;
    double mx = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < vocab; ++j) mx = std::max(mx, static_cast<double>(l[j]));
    double sum = 0;
    for (std::int64_t j = 0; j < vocab; ++j) sum += std::exp(l[j] - mx);
    const double lse = mx + std::log(sum);
    loss += lse - l[targets[r]];
    for (std::int64_t j = 0; j < vocab; ++j) {
      const double g = std::exp(l[j] - lse) - (j == targets[r] ? 1.0 : 0.0);
      l[j] = static_cast<float>(g * grad_scale);
    }
  }
  return loss;
}

void RefTrainOps::linear_backward_input(const float* dy, const float* w, std::int64_t n, std::int64_t in,
                                        std::int64_t out, float* dx, bool accumulate) {
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t i = 0; i < in; ++i) {
      double acc = 0;
      for (std::int64_t o = 0; o < out; ++o) acc += operand(dy[t * out + o]) * operand(w[o * in + i]);
      dx[t * in + i] = accumulate ? static_cast<float>(dx[t * in + i] + acc) : static_cast<float>(acc);
    }
}

void RefTrainOps::linear_backward_weight(const float* dy, const float* x, std::int64_t n, std::int64_t in,
                                         std::int64_t out, float* dw, float* dbias) {
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      double acc = 0;
      for (std::int64_t t = 0; t < n; ++t) acc += operand(dy[t * out + o]) * operand(x[t * in + i]);
      dw[o * in + i] = static_cast<float>(dw[o * in + i] + acc);
    }
    if (dbias) {
      double acc = 0;
      for (std::int64_t t = 0; t < n; ++t) acc += dy[t * out + o];
      dbias[o] = static_cast<float>(dbias[o] + acc);
    }
  }
}

void RefTrainOps::rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                                   std::int64_t rows, std::int64_t d, float* dx, float* dw) {
  // y_j = x_j · r · w_j, r = (mean x² + eps)^-1/2, ∂r/∂x_i = −r³ x_i / d:
  // dx_i = r · (g_i − x_i · r² · Σ_j g_j x_j / d) with g = dy · w.
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    const float* gr = dy + r * d;
    const double rs = rstd[r];
    double dot = 0;
    for (std::int64_t j = 0; j < d; ++j) dot += static_cast<double>(gr[j]) * w[j] * xr[j];
    const double c = rs * rs * dot / static_cast<double>(d);
    for (std::int64_t j = 0; j < d; ++j) {
      dx[r * d + j] = static_cast<float>(dx[r * d + j] + rs * (static_cast<double>(gr[j]) * w[j] - xr[j] * c));
    }
  }
  for (std::int64_t j = 0; j < d; ++j) {
    double acc = 0;
    for (std::int64_t r = 0; r < rows; ++r) acc += static_cast<double>(dy[r * d + j]) * x[r * d + j] * rstd[r];
    dw[j] = static_cast<float>(dw[j] + acc);
  }
}

void RefTrainOps::attention_backward(const float* dout, const float* q, const float* k, const float* v,
                                     const float* out, const float* lse, std::int64_t b, std::int64_t T,
                                     const AttentionShape& s, float* dq, float* dk, float* dv) {
  const std::int64_t hd = s.head_dim, qw = s.n_heads * hd, kw = s.n_kv_heads * hd;
  const std::int64_t group = s.n_heads / s.n_kv_heads;
  std::vector<double> gq(static_cast<std::size_t>(b * T * qw), 0.0), gk(static_cast<std::size_t>(b * T * kw), 0.0),
      gv(static_cast<std::size_t>(b * T * kw), 0.0);
  for (std::int64_t sq = 0; sq < b; ++sq)
    for (std::int64_t h = 0; h < s.n_heads; ++h) {
      const std::int64_t kh = h / group;
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t qo = (sq * T + t) * qw + h * hd;
        const double l = lse[(sq * s.n_heads + h) * T + t];
        double dsum = 0;  // Σ_c dout · out = Σ_j p_j · dp_j
        for (std::int64_t c = 0; c < hd; ++c) dsum += static_cast<double>(dout[qo + c]) * out[qo + c];
        for (std::int64_t j = first_key(t, s.window); j <= t; ++j) {
          const std::int64_t ko = (sq * T + j) * kw + kh * hd;
          double dot = 0, dp = 0;
          for (std::int64_t c = 0; c < hd; ++c) {
            dot += operand(q[qo + c]) * operand(k[ko + c]);
            dp += operand(dout[qo + c]) * operand(v[ko + c]);
          }
          // Soft-capped: score c·tanh(z / c) of z = dot·scale, whose derivative is 1 − tanh².
          const double th = s.softcap > 0 ? std::tanh(dot * s.scale / s.softcap) : 0.0;
          const double p = std::exp((s.softcap > 0 ? s.softcap * th : dot * s.scale) - l);
          const double ds = p * (dp - dsum) * s.scale * (s.softcap > 0 ? 1.0 - th * th : 1.0);
          for (std::int64_t c = 0; c < hd; ++c) {
            gq[static_cast<std::size_t>(qo + c)] += operand(ds) * operand(k[ko + c]);
            gk[static_cast<std::size_t>(ko + c)] += operand(ds) * operand(q[qo + c]);
            gv[static_cast<std::size_t>(ko + c)] += operand(p) * operand(dout[qo + c]);
          }
        }
      }
    }
  for (std::size_t i = 0; i < gq.size(); ++i) dq[i] = static_cast<float>(gq[i]);
  for (std::size_t i = 0; i < gk.size(); ++i) {
    dk[i] = static_cast<float>(gk[i]);
    dv[i] = static_cast<float>(gv[i]);
  }
}

void RefTrainOps::silu_mul_backward(const float* dout, const float* gate, const float* up, float* dgate, float* dup,
                                    std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double g = gate[i], u = up[i], sg = 1.0 / (1.0 + std::exp(-g));
    const double d = dout[i];
    dgate[i] = static_cast<float>(d * u * sg * (1.0 + g * (1.0 - sg)));
    dup[i] = static_cast<float>(d * g * sg);
  }
}

void RefTrainOps::embed_backward(const float* dx, std::span<const std::int32_t> ids, std::int64_t d, float* dtable) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (std::int64_t j = 0; j < d; ++j) dtable[ids[i] * d + j] += dx[static_cast<std::int64_t>(i) * d + j];
}

void RefTrainOps::add(float* x, const float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void RefTrainOps::zero(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = 0;
}

// ---- Gemma and Phi-3 ----

namespace {

// gelu_tanh(g) and its derivative, in double.
void ref_gelu_tanh(double g, double* value, double* derivative) {
  const double c = std::sqrt(2.0 / std::numbers::pi), a = 0.044715;
  const double th = std::tanh(c * (g + a * g * g * g));
  *value = 0.5 * g * (1.0 + th);
  *derivative = 0.5 * (1.0 + th) + 0.5 * g * (1.0 - th * th) * c * (1.0 + 3.0 * a * g * g);
}

}  // namespace

void RefTrainOps::gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    double v = 0, dv = 0;
    ref_gelu_tanh(gate[i], &v, &dv);
    out[i] = static_cast<float>(v * up[i]);
  }
}

void RefTrainOps::gelu_tanh_mul_backward(const float* dout, const float* gate, const float* up, float* dgate,
                                         float* dup, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    double v = 0, dv = 0;
    ref_gelu_tanh(gate[i], &v, &dv);
    const double d = dout[i], u = up[i];
    dgate[i] = static_cast<float>(d * u * dv);
    dup[i] = static_cast<float>(d * v);
  }
}

double RefTrainOps::softcap_cross_entropy(float* logits, std::span<const std::int32_t> targets, std::int64_t vocab,
                                          float grad_scale, float cap) {
  double loss = 0;
  std::vector<double> th(static_cast<std::size_t>(vocab)), capped(th.size());
  for (std::size_t r = 0; r < targets.size(); ++r) {
    float* l = logits + static_cast<std::int64_t>(r) * vocab;
    double mx = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < vocab; ++j) {
      th[static_cast<std::size_t>(j)] = std::tanh(static_cast<double>(l[j]) / cap);
      capped[static_cast<std::size_t>(j)] = cap * th[static_cast<std::size_t>(j)];
      mx = std::max(mx, capped[static_cast<std::size_t>(j)]);
    }
    double sum = 0;
    for (std::int64_t j = 0; j < vocab; ++j) sum += std::exp(capped[static_cast<std::size_t>(j)] - mx);
    const double lse = mx + std::log(sum);
    loss += lse - capped[static_cast<std::size_t>(targets[r])];
    for (std::int64_t j = 0; j < vocab; ++j) {
      const double g = std::exp(capped[static_cast<std::size_t>(j)] - lse) - (j == targets[r] ? 1.0 : 0.0);
      const double t = th[static_cast<std::size_t>(j)];
      l[j] = static_cast<float>(g * grad_scale * (1.0 - t * t));
    }
  }
  return loss;
}

void RefTrainOps::scale(float* x, float s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] *= s;
}

void RefTrainOps::add_constant(const float* x, float c, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] + c;
}

void RefTrainOps::rope_partial(float* x, std::int64_t b, std::int64_t T, std::int64_t heads, std::int64_t head_dim,
                               std::int64_t rotary_dim, const float* cos, const float* sin, bool inverse) {
  const std::int64_t table = head_dim / 2, half = rotary_dim / 2;
  for (std::int64_t s = 0; s < b; ++s)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t h = 0; h < heads; ++h) {
        float* v = x + ((s * T + t) * heads + h) * head_dim;
        for (std::int64_t i = 0; i < half; ++i) {
          const float c = cos[t * table + i], sn = inverse ? -sin[t * table + i] : sin[t * table + i];
          const float a = v[i], bb = v[i + half];
          v[i] = a * c - bb * sn;
          v[i + half] = bb * c + a * sn;
        }
      }
}

}  // namespace plexus
