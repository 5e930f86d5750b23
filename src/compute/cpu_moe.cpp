// CpuOps' mixture-of-experts layer: top-k routing, then each expert's tokens gathered and run
// through its gated MLP, the weighted outputs summed per token in ascending expert order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "compute/cpu_ops.h"
#include "compute/workspace.h"

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

void CpuOps::clamped_swiglu_expert(const ExpertWeights& w, const MoeRouting& r, std::int64_t e, std::int64_t m,
                                   Workspace& ws) {
  const std::int64_t H = w.down.rows, Ie = w.gate.rows;
  const MatmulPart gate_up[] = {{w.gate, ws.gate.data(), Ie}, {w.up, ws.up.data(), Ie}};
  matmul(gate_up, ws.moe_x.data(), m, H);  // ws.gate, ws.up (m, Ie)
  add_bias(ws.gate.data(), r.gate_bias + e * Ie, m, Ie);
  add_bias(ws.up.data(), r.up_bias + e * Ie, m, Ie);
  for (std::int64_t i = 0; i < m * Ie; ++i) {
    const float g = std::min(ws.gate[static_cast<std::size_t>(i)], r.swiglu_limit);
    const float u = std::clamp(ws.up[static_cast<std::size_t>(i)], -r.swiglu_limit, r.swiglu_limit);
    ws.gate[static_cast<std::size_t>(i)] = (u + 1.0f) * (g / (1.0f + std::exp(-r.swiglu_alpha * g)));
  }
  const MatmulPart down[] = {{w.down, ws.moe_y.data(), H}};
  matmul(down, ws.gate.data(), m, Ie);  // moe_y (m, H)
  add_bias(ws.moe_y.data(), r.down_bias + e * H, m, H);
}

void CpuOps::moe_experts(std::span<const ExpertWeights> experts, const float* xb, std::int64_t n, const MoeRouting& r,
                         float* out, Workspace& ws) {
  const std::int64_t k = r.top_k, H = experts.front().down.rows, Ie = experts.front().gate.rows;
  // The routed (token, slot) pairs grouped by expert, tokens ascending within each.
  std::vector<std::int64_t> start(experts.size() + 1, 0);
  for (std::int64_t i = 0; i < n * k; ++i) ++start[static_cast<std::size_t>(ws.route_expert[static_cast<std::size_t>(i)]) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::int64_t> pairs(static_cast<std::size_t>(n * k));  // (n·k) token·k + slot
  std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
  for (std::int64_t i = 0; i < n * k; ++i) {
    pairs[static_cast<std::size_t>(fill[static_cast<std::size_t>(ws.route_expert[static_cast<std::size_t>(i)])]++)] = i;
  }
  std::fill_n(out, n * H, 0.0f);
  std::vector<std::int64_t> tokens;
  for (std::size_t e = 0; e < experts.size(); ++e) {
    const std::int64_t m = start[e + 1] - start[e];
    if (m == 0) continue;
    tokens.clear();
    for (std::int64_t i = start[e]; i < start[e + 1]; ++i) tokens.push_back(pairs[static_cast<std::size_t>(i)] / k);
    gather_rows(xb, tokens, H, ws.moe_x.data());  // (m, H)
    const ExpertWeights& w = experts[e];
    if (r.swiglu_limit > 0) {
      clamped_swiglu_expert(w, r, static_cast<std::int64_t>(e), m, ws);
    } else {
      matmul_silu_mul({w.gate, ws.gate.data(), Ie}, {w.up, ws.up.data(), Ie}, ws.moe_x.data(), m, H);  // ws.gate (m, Ie)
      const MatmulPart down[] = {{w.down, ws.moe_y.data(), H}};
      matmul(down, ws.gate.data(), m, Ie);  // moe_y (m, H)
    }
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t pair = pairs[static_cast<std::size_t>(start[e] + i)];
      const float weight = ws.route_weight[static_cast<std::size_t>(pair)];
      const float* y = ws.moe_y.data() + i * H;
      float* o = out + (pair / k) * H;
      for (std::int64_t d = 0; d < H; ++d) o[d] += y[d] * weight;
    }
  }
}

}  // namespace plexus
