// CpuOps' mixture-of-experts layer: top-k routing, then each expert's tokens gathered and run
// through its gated MLP, the weighted outputs summed per token in ascending expert order (the
// experts this device holds: expert parallelism leaves the others to other ranks).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "compute/cpu_ops.h"
#include "compute/workspace.h"
#include "kernels/cpu/matmul.h"

namespace plexus {

void CpuOps::moe_route(const float* logits, std::int64_t n, const MoeRouting& r, Workspace& ws) {
  const std::int64_t E = r.experts, k = r.top_k;
  std::vector<float> p(static_cast<std::size_t>(E));
  std::vector<std::int32_t> order(static_cast<std::size_t>(E));
  for (std::int64_t t = 0; t < n; ++t) {
    const float* l = logits + t * E;  // (E)
    if (r.top_k_then_softmax) {  // gpt-oss: softmax over the k largest logits only
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [l](std::int32_t a, std::int32_t b) {
        return l[a] > l[b] || (l[a] == l[b] && a < b);
      });
      const float top = l[order[0]];
      float sum = 0;
      for (std::int64_t j = 0; j < k; ++j) sum += std::exp(l[order[static_cast<std::size_t>(j)]] - top);
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int32_t e = order[static_cast<std::size_t>(j)];
        ws.route_expert[static_cast<std::size_t>(t * k + j)] = e;
        ws.route_weight[static_cast<std::size_t>(t * k + j)] = std::exp(l[e] - top) / sum;
      }
      continue;
    }
    const float m = *std::max_element(l, l + E);
    float sum = 0;
    for (std::int64_t e = 0; e < E; ++e) sum += p[static_cast<std::size_t>(e)] = std::exp(l[e] - m);
    for (float& v : p) v /= sum;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&p](std::int32_t a, std::int32_t b) {
      const float pa = p[static_cast<std::size_t>(a)], pb = p[static_cast<std::size_t>(b)];
      return pa > pb || (pa == pb && a < b);
    });
    float chosen = 0;
    for (std::int64_t j = 0; j < k; ++j) chosen += p[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])];
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int32_t e = order[static_cast<std::size_t>(j)];
      ws.route_expert[static_cast<std::size_t>(t * k + j)] = e;
      ws.route_weight[static_cast<std::size_t>(t * k + j)] = r.normalize ? p[static_cast<std::size_t>(e)] / chosen : p[static_cast<std::size_t>(e)];
    }
  }
}

namespace {

// gpt-oss's expert activation over rows (m, Ie) of gate and up, each with its bias: gate clamped
// to at most `limit`, up to [-limit, limit]; gate := (up + 1) · gate · sigmoid(alpha · gate).
void clamped_swiglu(float* gate, const float* up, const float* gate_bias, const float* up_bias, std::int64_t m,
                    std::int64_t Ie, float alpha, float limit) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < Ie; ++j) {
      const float g = std::min(gate[i * Ie + j] + gate_bias[j], limit);
      const float u = std::clamp(up[i * Ie + j] + up_bias[j], -limit, limit);
      gate[i * Ie + j] = (u + 1.0f) * (g / (1.0f + std::exp(-alpha * g)));
    }
  }
}

}  // namespace

void CpuOps::moe_experts(std::span<const ExpertWeights> experts, const float* xb, std::int64_t n, const MoeRouting& r,
                         float* out, Workspace& ws) {
  const ExpertWeights& held = first_held_expert(experts);
  const std::int64_t k = r.top_k, H = held.down.rows, Ie = held.gate.rows;
  const bool clamped = r.swiglu_limit > 0;  // gpt-oss's expert: biases and the clamped SwiGLU
  // The routed (token, slot) pairs grouped by expert, tokens ascending within each: expert e's
  // rows of the moe buffers are [start[e], start[e + 1]).
  std::vector<std::int64_t> start(experts.size() + 1, 0);
  for (std::int64_t i = 0; i < n * k; ++i) ++start[static_cast<std::size_t>(ws.route_expert[static_cast<std::size_t>(i)]) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::int64_t> pairs(static_cast<std::size_t>(n * k));  // (n·k) token·k + slot, by expert
  std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
  for (std::int64_t i = 0; i < n * k; ++i) {
    pairs[static_cast<std::size_t>(fill[static_cast<std::size_t>(ws.route_expert[static_cast<std::size_t>(i)])]++)] = i;
  }
  // Every used expert's tokens gathered, then all their gate/up products (one launch) and all
  // their down products (one launch).
  std::vector<MatmulGroup> gated, down;
  for (std::size_t e = 0; e < experts.size(); ++e) {
    const std::int64_t m = start[e + 1] - start[e];
    if (m == 0 || !experts[e].held()) continue;  // not routed to, or held by another rank
    for (std::int64_t i = 0; i < m; ++i) {
      const float* src = xb + pairs[static_cast<std::size_t>(start[e] + i)] / k * H;
      std::memcpy(ws.moe_x.data() + (start[e] + i) * H, src, static_cast<std::size_t>(H) * sizeof(float));
    }
    const ExpertWeights& w = experts[e];
    float* g = ws.moe_gate.data() + start[e] * Ie;  // (m, Ie)
    float* u = ws.moe_up.data() + start[e] * Ie;    // (m, Ie)
    const float* x = ws.moe_x.data() + start[e] * H;
    if (clamped) {  // gpt-oss: plain gate and up products, then biases and the clamped activation
      gated.push_back({{w.gate, g, Ie}, {}, x, m, H});
      gated.push_back({{w.up, u, Ie}, {}, x, m, H});
    } else {
      gated.push_back({{w.gate, g, Ie}, {w.up, u, Ie}, x, m, H});
    }
    down.push_back({{w.down, ws.moe_y.data() + start[e] * H, H}, {}, g, m, Ie});
  }
  matmul_groups(k_, pool_, gated);
  for (std::size_t e = 0; clamped && e < experts.size(); ++e) {
    const std::int64_t m = start[e + 1] - start[e], at = start[e];
    if (m == 0 || !experts[e].held()) continue;
    const auto ee = static_cast<std::int64_t>(e);
    clamped_swiglu(ws.moe_gate.data() + at * Ie, ws.moe_up.data() + at * Ie, r.gate_bias + ee * Ie, r.up_bias + ee * Ie, m, Ie,
                   r.swiglu_alpha, r.swiglu_limit);
  }
  matmul_groups(k_, pool_, down);
  for (std::size_t e = 0; clamped && e < experts.size(); ++e) {
    const std::int64_t m = start[e + 1] - start[e];
    if (m > 0 && experts[e].held()) add_bias(ws.moe_y.data() + start[e] * H, r.down_bias + static_cast<std::int64_t>(e) * H, m, H);
  }
  // out = Σ weight · y, each token's rows added in ascending expert order (held experts only).
  std::fill_n(out, n * H, 0.0f);
  for (std::int64_t i = 0; i < n * k; ++i) {
    const std::int64_t pair = pairs[static_cast<std::size_t>(i)];
    if (!experts[static_cast<std::size_t>(ws.route_expert[static_cast<std::size_t>(pair)])].held()) continue;
    const float weight = ws.route_weight[static_cast<std::size_t>(pair)];
    const float* y = ws.moe_y.data() + i * H;
    float* o = out + (pair / k) * H;
    for (std::int64_t d = 0; d < H; ++d) o[d] += y[d] * weight;
  }
}

}  // namespace plexus
