// CudaOps as the forward uses it: one decoder layer (Qwen-style: q/k/v bias and q/k norm,
// grouped-query attention, optional sliding window) over two sequences — a prefill step through
// cuBLAS then a decode step through the GEMV — against the same layer computed on the host with
// the kernels/ref oracles. Skipped, with the reason, where no GPU is present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <ostream>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "block_test_util.h"
#include "cuda_test_util.h"
#include "cuda_test_workspace.h"
#include "compute/cuda/cuda_ops.h"
#include "compute/workspace.h"
#include "kernels/cuda/matmul.h"
#include "kernels/quantize.h"
#include "kernels/ref/dequantize.h"
#include "kernels/ref/ref_kernels.h"
#include "model/config.h"
#include "compute/kv_cache.h"

namespace plexus::cuda::test {
namespace {

ModelConfig small_config(std::int64_t window, std::int64_t head_dim = 16) {
  ModelConfig c;
  c.hidden_size = 64;
  c.num_layers = 6;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = head_dim;
  c.intermediate_size = 96;
  c.vocab_size = 50;
  c.rms_norm_eps = 1e-5;
  c.qkv_bias = true;
  c.qk_norm = true;
  c.sliding_window = window;
  return c;
}

// One layer's weights: host bytes (for the oracle) and device copies (for CudaOps). Block
// formats (Q8_0, Q4_0 quantised; the others random blocks): the oracle multiplies their
// dequantised values (f32).
struct Weight {
  std::vector<std::uint8_t> host;
  DeviceBuffer<std::uint8_t> dev;
  std::vector<float> values;  // block formats: the dequantised weights (rows, cols)
  WeightMatrix host_view() const {
    return dtype_is_block(dtype) ? WeightMatrix{values.data(), DType::kF32, rows, cols}
                                 : WeightMatrix{host.data(), dtype, rows, cols};
  }
  WeightMatrix dev_view() const { return WeightMatrix{dev.get(), dtype, rows, cols}; }
  DType dtype;
  std::int64_t rows, cols;
};

Weight make_weight(DType dtype, std::int64_t rows, std::int64_t cols, std::mt19937& rng) {
  const float a = 1.0f / std::sqrt(static_cast<float>(cols));
  const std::vector<float> f = random_floats(static_cast<std::size_t>(rows * cols), rng, -2 * a, 2 * a);
  Weight w{{}, {}, {}, dtype, rows, cols};
  if (dtype == DType::kQ8_0 || dtype == DType::kQ4_0) {
    const std::int64_t row_bytes = dtype_row_bytes(dtype, cols);
    w.host.resize(static_cast<std::size_t>(rows * row_bytes));
    w.values.resize(f.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      quantize_row(dtype, f.data() + r * cols, w.host.data() + r * row_bytes, cols);
      dequantize_row(dtype, w.host.data() + r * row_bytes, w.values.data() + r * cols, cols);
    }
  } else if (dtype_is_block(dtype)) {  // random blocks with sane scales (block_test_util.h)
    w.host = testing_blocks::random_block_rows(dtype, rows, cols, rng);
    w.values = testing_blocks::dequantized(dtype, w.host, rows, cols);
  } else {
    w.host = to_dtype_bytes(f, dtype);
  }
  w.dev = DeviceBuffer<std::uint8_t>(w.host);
  return w;
}

struct Vec {
  std::vector<float> host;
  DeviceBuffer<float> dev;
};

Vec make_vec(std::int64_t n, std::mt19937& rng, float lo, float hi) {
  Vec v{random_floats(static_cast<std::size_t>(n), rng, lo, hi), {}};
  v.dev = DeviceBuffer<float>(v.host);
  return v;
}

struct LayerCase {
  DType dtype;
  std::int64_t window, head_dim;
  std::int64_t prefill_min_tokens;  // CudaOps' threshold for the tiled prefill attention
  bool graphs = true;               // CudaOps::allow_graphs
};

void PrintTo(const LayerCase& c, std::ostream* os) {
  *os << dtype_name(c.dtype) << " window " << c.window << " head_dim " << c.head_dim << " prefill from "
      << c.prefill_min_tokens << (c.graphs ? "" : " no graphs");
}

class CudaOpsLayer : public ::testing::TestWithParam<LayerCase> {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_present(&why)) GTEST_SKIP() << why;
    PLEXUS_TEST_CUDA(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

TEST_P(CudaOpsLayer, PrefillThenDecodeMatchesTheHostLayer) {
  const DType dtype = GetParam().dtype;
  const ModelConfig c = small_config(GetParam().window, GetParam().head_dim);
  const std::int64_t H = c.hidden_size, Q = c.q_dim(), KV = c.kv_dim(), I = c.intermediate_size, hd = c.head_dim;
  const std::int64_t max_tokens = 16, capacity = 24;
  const int layer = 4;  // caches hold layers 3..4
  std::mt19937 rng(99);

  // Weights and small vectors.
  Weight embed = make_weight(dtype, c.vocab_size, H, rng);
  Weight wq = make_weight(dtype, Q, H, rng), wk = make_weight(dtype, KV, H, rng), wv = make_weight(dtype, KV, H, rng);
  Weight wo = make_weight(dtype, H, Q, rng), wg = make_weight(dtype, I, H, rng), wu = make_weight(dtype, I, H, rng);
  Weight wd = make_weight(dtype, H, I, rng);
  Vec bq = make_vec(Q, rng, -0.1f, 0.1f), bk = make_vec(KV, rng, -0.1f, 0.1f), bv = make_vec(KV, rng, -0.1f, 0.1f);
  Vec qn = make_vec(hd, rng, 0.8f, 1.2f), kn = make_vec(hd, rng, 0.8f, 1.2f);
  Vec in_norm = make_vec(H, rng, 0.8f, 1.2f), post_norm = make_vec(H, rng, 0.8f, 1.2f);
  std::vector<double> inv_freq(static_cast<std::size_t>(hd / 2));
  for (std::int64_t i = 0; i < hd / 2; ++i) inv_freq[static_cast<std::size_t>(i)] = std::pow(c.rope_theta, -2.0 * i / hd);

  // Device state: CudaOps and its scratch, the workspace, two sequences' caches, activations.
  const CudaOpsSizes sizes = CudaOpsSizes::of(c.layer_shape(), max_tokens, capacity);
  DeviceBuffer<std::uint8_t> scratch(CudaOps::scratch_bytes(sizes));
  CudaOps ops(stream_, "cuda:test", sizes, scratch.get(), scratch.size());
  ops.set_prefill_attention_min_tokens(GetParam().prefill_min_tokens);
  ops.allow_graphs(GetParam().graphs);
  DeviceBuffer<float> ws_mem(static_cast<std::size_t>(device_workspace_bytes(c, max_tokens, capacity) / 4));
  ws_mem.poison();
  WorkspacePtr ws = device_workspace(c, max_tokens, capacity, ws_mem.get());
  const std::int64_t cache_floats = KvCache::bytes_for(2, c.num_kv_heads, hd, capacity) / 4;
  DeviceBuffer<float> cache_mem(static_cast<std::size_t>(2 * cache_floats));
  cache_mem.poison();
  KvCache caches[2] = {KvCache(3, 2, c.num_kv_heads, hd, capacity, cache_mem.get()),
                       KvCache(3, 2, c.num_kv_heads, hd, capacity, cache_mem.get() + cache_floats)};
  std::vector<std::vector<float>> host_cache(2, std::vector<float>(static_cast<std::size_t>(cache_floats), 0.0f));
  DeviceBuffer<float> x(static_cast<std::size_t>(max_tokens * H)), xb(static_cast<std::size_t>(max_tokens * H));
  DeviceBuffer<float> gate(static_cast<std::size_t>(max_tokens * I)), up(static_cast<std::size_t>(max_tokens * I));
  const float eps = static_cast<float>(c.rms_norm_eps);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  AttentionShape shape{c.num_heads, c.num_kv_heads, hd, c.sliding_window, static_cast<float>(scale)};

  // A prefill step of 12 tokens (7 of sequence 0, 5 of sequence 1, interleaved), then decode
  // steps of one token of each: the first runs eagerly, the second is captured as a CUDA graph,
  // the others replay it (where graphs are on).
  struct Tok {
    int seq;
    std::int32_t pos, id;
  };
  const std::vector<std::vector<Tok>> steps = {
      {{0, 0, 1}, {0, 1, 7}, {1, 0, 3}, {0, 2, 49}, {1, 1, 0}, {0, 3, 5}, {1, 2, 9}, {0, 4, 11}, {1, 3, 2}, {0, 5, 13},
       {1, 4, 8}, {0, 6, 21}},
      {{1, 5, 30}, {0, 7, 31}},
      {{1, 6, 4}, {0, 8, 44}},
      {{1, 7, 17}, {0, 9, 6}},
      {{1, 8, 23}, {0, 10, 19}},
  };
  for (const std::vector<Tok>& step : steps) {
    const std::int64_t n = static_cast<std::int64_t>(step.size());
    std::vector<std::int32_t> ids, pos;
    std::vector<KvCache*> cache_of;
    for (const Tok& t : step) {
      ids.push_back(t.id);
      pos.push_back(t.pos);
      cache_of.push_back(&caches[t.seq]);
    }
    const TokenBatch batch{ids, pos, cache_of};
    x.poison();
    xb.poison();
    gate.poison();
    up.poison();

    // The layer through CudaOps, as the forward calls it.
    ops.begin_batch(batch, inv_freq, true, *ws);
    ops.embed(embed.dev_view(), ids, x.get());
    ops.rmsnorm(x.get(), in_norm.dev.get(), n, H, eps, xb.get());
    struct {
      float *q, *k, *v, *att;
    } v{ws->q.data(), ws->k.data(), ws->v.data(), ws->att.data()};  // (n, Q) (n, KV) (n, KV) (n, Q) on the device
    const MatmulPart qkv[] = {{wq.dev_view(), v.q, Q}, {wk.dev_view(), v.k, KV}, {wv.dev_view(), v.v, KV}};
    ops.matmul(qkv, xb.get(), n, H);
    ops.add_bias(v.q, bq.dev.get(), n, Q);
    ops.add_bias(v.k, bk.dev.get(), n, KV);
    ops.add_bias(v.v, bv.dev.get(), n, KV);
    ops.rmsnorm(v.q, qn.dev.get(), n * c.num_heads, hd, eps, v.q);
    ops.rmsnorm(v.k, kn.dev.get(), n * c.num_kv_heads, hd, eps, v.k);
    ops.rope_store_kv(layer, batch, shape, *ws);
    ops.attention(layer, batch, shape, *ws);
    const MatmulPart o[] = {{wo.dev_view(), xb.get(), H}};
    ops.matmul(o, v.att, n, Q);
    ops.add_rmsnorm(x.get(), xb.get(), post_norm.dev.get(), n, H, eps, xb.get());  // as the forward: one kernel
    const MatmulPart gu[] = {{wg.dev_view(), gate.get(), I}, {wu.dev_view(), up.get(), I}};
    ops.matmul(gu, xb.get(), n, H);
    ops.silu_mul(gate.get(), up.get(), gate.get(), n * I);
    const MatmulPart down[] = {{wd.dev_view(), xb.get(), H}};
    ops.matmul(down, gate.get(), n, I);
    ops.add(x.get(), xb.get(), n * H);
    ops.end_batch();
    PLEXUS_TEST_CUDA(cudaStreamSynchronize(stream_));
    std::vector<float> got = x.download();
    got.resize(static_cast<std::size_t>(n * H));

    // The same on the host. Matmul inputs are rounded to the weight dtype where CudaOps does
    // (cuBLAS path, more than kGemvDispatchMaxTokens tokens, 16-bit weights); block formats
    // multiply there as f16 (x and the dequantised weights rounded to f16).
    auto mm = [&](const Weight& w, const std::vector<float>& in, std::int64_t cols) {
      std::vector<float> xin(in);
      const bool block = dtype_is_block(dtype);
      const DType gemm_type = block ? DType::kF16 : dtype;
      if (n > kGemvDispatchMaxTokens) for (float& e : xin) e = round_to(e, gemm_type);
      std::vector<float> wf16;
      WeightMatrix hw = w.host_view();
      if (block && n > kGemvDispatchMaxTokens) {
        wf16 = w.values;
        for (float& e : wf16) e = round_to(e, DType::kF16);
        hw.data = wf16.data();
      }
      std::vector<float> y(static_cast<std::size_t>(n * w.rows));
      ref::matmul(hw, xin.data(), n, y.data());
      (void)cols;
      return y;
    };
    std::vector<float> xh(static_cast<std::size_t>(n * H)), xbh(xh.size());
    ref::embed(embed.host_view(), ids.data(), n, xh.data());
    ref::rmsnorm(xh.data(), in_norm.host.data(), DType::kF32, n, H, c.rms_norm_eps, xbh.data());
    std::vector<float> q = mm(wq, xbh, H), k = mm(wk, xbh, H), vv = mm(wv, xbh, H);
    for (std::int64_t t = 0; t < n; ++t) {
      for (std::int64_t i = 0; i < Q; ++i) q[static_cast<std::size_t>(t * Q + i)] += bq.host[static_cast<std::size_t>(i)];
      for (std::int64_t i = 0; i < KV; ++i) {
        k[static_cast<std::size_t>(t * KV + i)] += bk.host[static_cast<std::size_t>(i)];
        vv[static_cast<std::size_t>(t * KV + i)] += bv.host[static_cast<std::size_t>(i)];
      }
    }
    ref::rmsnorm(q.data(), qn.host.data(), DType::kF32, n * c.num_heads, hd, c.rms_norm_eps, q.data());
    ref::rmsnorm(k.data(), kn.host.data(), DType::kF32, n * c.num_kv_heads, hd, c.rms_norm_eps, k.data());
    const std::int64_t local = layer - 3, head_stride = capacity * hd;
    for (std::int64_t t = 0; t < n; ++t) {
      const Tok& tk = step[static_cast<std::size_t>(t)];
      ref::rope(q.data() + t * Q, c.num_heads, hd, tk.pos, inv_freq.data());
      ref::rope(k.data() + t * KV, c.num_kv_heads, hd, tk.pos, inv_freq.data());
      std::vector<float>& hc = host_cache[static_cast<std::size_t>(tk.seq)];
      for (std::int64_t g = 0; g < c.num_kv_heads; ++g) {
        for (std::int64_t i = 0; i < hd; ++i) {
          hc[static_cast<std::size_t>(((local * 2 + 0) * c.num_kv_heads + g) * head_stride + tk.pos * hd + i)] =
              k[static_cast<std::size_t>(t * KV + g * hd + i)];
          hc[static_cast<std::size_t>(((local * 2 + 1) * c.num_kv_heads + g) * head_stride + tk.pos * hd + i)] =
              vv[static_cast<std::size_t>(t * KV + g * hd + i)];
        }
      }
    }
    std::vector<float> att(static_cast<std::size_t>(n * Q));
    for (std::int64_t t = 0; t < n; ++t) {  // every token's keys are stored before any attends (as on the GPU)
      const Tok& tk = step[static_cast<std::size_t>(t)];
      const std::vector<float>& hc = host_cache[static_cast<std::size_t>(tk.seq)];
      ref::attention_gqa(q.data() + t * Q, hc.data() + (local * 2 + 0) * c.num_kv_heads * head_stride,
                         hc.data() + (local * 2 + 1) * c.num_kv_heads * head_stride, head_stride, c.num_heads,
                         c.num_kv_heads, hd, tk.pos, c.sliding_window, scale, att.data() + t * Q);
    }
    const std::vector<float> ao = mm(wo, att, Q);
    for (std::size_t i = 0; i < xh.size(); ++i) xh[i] += ao[i];
    ref::rmsnorm(xh.data(), post_norm.host.data(), DType::kF32, n, H, c.rms_norm_eps, xbh.data());
    std::vector<float> g = mm(wg, xbh, H), u = mm(wu, xbh, H);
    ref::silu_mul(g.data(), u.data(), n * I, g.data());
    const std::vector<float> dn = mm(wd, g, I);
    for (std::size_t i = 0; i < xh.size(); ++i) xh[i] += dn[i];

    // bf16/f16 models run the causal prefill attention on bf16 tensor cores (head_dim 64 and 128,
    // from prefill_min_tokens tokens): q, k and v rounded to bf16 there, as the kernel tests allow.
    const bool tensor_core_attention = (dtype == DType::kBF16 || dtype == DType::kF16) && (hd == 64 || hd == 128) &&
                                       n >= GetParam().prefill_min_tokens;
    const double tol = dtype == DType::kF32 ? 1e-4 : tensor_core_attention ? 2.5e-2 : 5e-3;
    EXPECT_TRUE(close(got, xh, tol, tol)) << dtype_name(dtype) << " window " << c.sliding_window << " head_dim " << hd
                                          << " step of " << n << " tokens";
  }

  const char* env = std::getenv("PLEXUS_CUDA_GRAPHS");
  const bool graphs_on = GetParam().graphs && !(env != nullptr && std::string(env) == "0") &&
                         !(GetParam().prefill_min_tokens > 0 && GetParam().prefill_min_tokens <= 2);
  EXPECT_EQ(ops.graph_replays(), graphs_on ? 2 : 0);

  // gather_rows: a reordering through the uploaded index, and the identity as a copy.
  const std::vector<std::int64_t> rows = {1, 0};
  DeviceBuffer<float> picked(static_cast<std::size_t>(2 * H));
  picked.poison();
  ops.gather_rows(x.get(), rows, H, picked.get());
  const std::vector<float> xs = x.download(), ps = picked.download();
  for (std::int64_t i = 0; i < H; ++i) {
    EXPECT_EQ(ps[static_cast<std::size_t>(i)], xs[static_cast<std::size_t>(H + i)]);
    EXPECT_EQ(ps[static_cast<std::size_t>(H + i)], xs[static_cast<std::size_t>(i)]);
  }
  const std::vector<std::int64_t> same = {0, 1};
  picked.poison();
  ops.gather_rows(x.get(), same, H, picked.get());
  EXPECT_TRUE(close(picked.download(), std::vector<float>(xs.begin(), xs.begin() + 2 * H), 0, 0));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaOpsLayer,
                         ::testing::Values(LayerCase{DType::kF32, 0, 16, 32}, LayerCase{DType::kBF16, 0, 16, 32},
                                           LayerCase{DType::kF16, 0, 16, 32}, LayerCase{DType::kF32, 4, 16, 32},
                                           LayerCase{DType::kBF16, 3, 16, 32},
                                           // head_dim 64: the tiled prefill attention for every step
                                           LayerCase{DType::kF32, 0, 64, 1}, LayerCase{DType::kBF16, 5, 64, 1},
                                           // head_dim 64 through the split-context kernel only
                                           LayerCase{DType::kF32, 0, 64, 0},
                                           // no CUDA graphs
                                           LayerCase{DType::kBF16, 0, 16, 32, false},
                                           // block formats: GEMV decode steps (captured as graphs),
                                           // dequantised f16 cuBLAS prefill
                                           LayerCase{DType::kQ8_0, 0, 16, 32}, LayerCase{DType::kQ4_0, 3, 16, 32},
                                           LayerCase{DType::kQ8_0, 0, 64, 1},
                                           // the other 32-weight formats (hidden 64: no super-blocks)
                                           LayerCase{DType::kQ5_0, 0, 16, 32}, LayerCase{DType::kQ5_1, 3, 16, 32},
                                           LayerCase{DType::kQ4_1, 0, 64, 1}, LayerCase{DType::kIQ4_NL, 0, 16, 32},
                                           LayerCase{DType::kMXFP4, 0, 16, 32}, LayerCase{DType::kMXFP4, 0, 64, 1}),
                         [](const auto& info) {
                           const LayerCase& p = info.param;
                           return std::string(dtype_name(p.dtype)) + "_window" + std::to_string(p.window) + "_hd" +
                                  std::to_string(p.head_dim) + "_prefill" + std::to_string(p.prefill_min_tokens) +
                                  (p.graphs ? "" : "_nographs");
                         });

class CudaOpsChecks : public CudaOpsLayer {};

// Bad batches are refused on the host, naming the device, before anything is uploaded.
TEST_F(CudaOpsChecks, RefusesPositionsOutsideTheCacheAndOversizedBatches) {
  const ModelConfig c = small_config(0);
  const CudaOpsSizes sizes = CudaOpsSizes::of(c.layer_shape(), 4, 8);
  DeviceBuffer<std::uint8_t> scratch(CudaOps::scratch_bytes(sizes));
  CudaOps ops(stream_, "cuda:7", sizes, scratch.get(), scratch.size());
  DeviceBuffer<float> ws_mem(static_cast<std::size_t>(device_workspace_bytes(c, 4, 8) / 4));
  WorkspacePtr ws = device_workspace(c, 4, 8, ws_mem.get());
  DeviceBuffer<float> cache_mem(static_cast<std::size_t>(KvCache::bytes_for(1, 2, 16, 8) / 4));
  KvCache cache(0, 1, 2, 16, 8, cache_mem.get());
  std::vector<double> inv_freq(8, 0.5);
  const std::vector<std::int32_t> ids = {1};
  const std::vector<std::int32_t> bad_pos = {8};
  std::vector<KvCache*> caches = {&cache};
  try {
    ops.begin_batch(TokenBatch{ids, bad_pos, caches}, inv_freq, true, *ws);
    FAIL() << "position 8 of an 8-position cache accepted";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:7"), std::string::npos) << e.what();
  }
  const std::vector<std::int32_t> five(5, 1), five_pos = {0, 1, 2, 3, 4};
  std::vector<KvCache*> five_caches(5, &cache);
  EXPECT_THROW(ops.begin_batch(TokenBatch{five, five_pos, five_caches}, inv_freq, true, *ws), RuntimeError);
  EXPECT_THROW(CudaOps(stream_, "cuda:7", sizes, scratch.get(), scratch.size() - 1), RuntimeError);
}

// Graph capture and replay keep results exact when batches change under one key: alternating
// buffers (micro-batches), and an uncapturable operation (a reordering gather) in a step that
// was replaying.
TEST_F(CudaOpsChecks, GraphsFallBackWhenBatchesDiffer) {
  const char* env = std::getenv("PLEXUS_CUDA_GRAPHS");
  if (env != nullptr && std::string(env) == "0") GTEST_SKIP() << "PLEXUS_CUDA_GRAPHS=0";
  const ModelConfig c = small_config(0);
  const CudaOpsSizes sizes = CudaOpsSizes::of(c.layer_shape(), 4, 8);
  DeviceBuffer<std::uint8_t> scratch(CudaOps::scratch_bytes(sizes));
  CudaOps ops(stream_, "cuda:0", sizes, scratch.get(), scratch.size());
  DeviceBuffer<float> ws_mem(static_cast<std::size_t>(device_workspace_bytes(c, 4, 8) / 4));
  WorkspacePtr ws = device_workspace(c, 4, 8, ws_mem.get());
  DeviceBuffer<float> cache_mem(static_cast<std::size_t>(KvCache::bytes_for(1, 2, 16, 8) / 4));
  KvCache cache(0, 1, 2, 16, 8, cache_mem.get());
  const std::vector<double> inv_freq(8, 0.5);
  const std::int64_t d = 5;
  DeviceBuffer<float> a(std::vector<float>(2 * d, 0.0f)), b(std::vector<float>(2 * d, 100.0f));
  DeviceBuffer<float> one(std::vector<float>(2 * d, 1.0f)), picked(2 * d);
  const std::vector<KvCache*> caches(3, &cache);
  auto begin = [&](std::int64_t n) {
    static const std::vector<std::int32_t> ids = {1, 2, 3}, pos = {0, 1, 2};
    ops.begin_batch(TokenBatch{std::span(ids).first(static_cast<std::size_t>(n)),
                               std::span(pos).first(static_cast<std::size_t>(n)),
                               std::span(caches).first(static_cast<std::size_t>(n))},
                    inv_freq, true, *ws);
  };
  auto expect_all = [](const DeviceBuffer<float>& buf, float want, const std::string& what) {
    for (float v : buf.download()) ASSERT_EQ(v, want) << what;
  };

  // Two tokens per step, micro-batches alternating buffers a and b: record, capture, mismatch,
  // record, capture, mismatch (then never graphed) — every step exact.
  float want_a = 0, want_b = 100;
  for (int step = 0; step < 8; ++step) {
    begin(2);
    DeviceBuffer<float>& x = step % 2 == 0 ? a : b;
    ops.add(x.get(), one.get(), 2 * d);
    ops.add(x.get(), one.get(), 2 * d);
    ops.end_batch();
    float& want = step % 2 == 0 ? want_a : want_b;
    want += 2;
    expect_all(x, want, "alternating buffers, step " + std::to_string(step));
  }

  // One token per step: record, capture, then a replaying step meets a reordering gather after
  // its first (deferred) operation: the deferred one runs first, then the rest eagerly.
  for (int step = 0; step < 3; ++step) {
    begin(1);
    ops.add(a.get(), one.get(), 2 * d);
    if (step == 2) {
      ops.gather_rows(a.get(), std::vector<std::int64_t>{1, 0}, d, picked.get());
      ops.add(picked.get(), one.get(), 2 * d);
    }
    ops.add(a.get(), one.get(), 2 * d);
    ops.end_batch();
    want_a += 2;
    expect_all(a, want_a, "gather step " + std::to_string(step));
  }
  expect_all(picked, want_a - 1 + 1, "gathered rows");

  // Three tokens per step, the same buffers every step: recorded, captured, replayed twice.
  const std::int64_t replays = ops.graph_replays();
  for (int step = 0; step < 4; ++step) {
    begin(3);
    ops.add(b.get(), one.get(), 2 * d);
    ops.end_batch();
    want_b += 1;
    expect_all(b, want_b, "steady step " + std::to_string(step));
  }
  EXPECT_EQ(ops.graph_replays() - replays, 2);
}

}  // namespace
}  // namespace plexus::cuda::test
