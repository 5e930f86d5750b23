// ComputeOps on one CUDA device: the Llama-family forward's operations as CUDA kernels and
// cuBLAS GEMMs, asynchronous on one stream. Plain C++ header (no CUDA-only types).
//
// Memory: the caller allocates a device scratch buffer of scratch_bytes(sizes) bytes (the cuBLAS
// workspace, GEMM inputs converted to 16 bits, a 32 MiB chunk for block-format weight rows
// dequantised for cuBLAS when max_tokens > 3, attention partials, the batch's ids, token slots
// and gathered row indices) and keeps it alive as long as the CudaOps; CudaOps itself owns a
// cuBLAS handle bound to the stream, two events and a small pinned host buffer for the batch's
// metadata. The Workspace, KV caches, activations and weights passed to the ops are device
// memory.
//
// Per batch: begin_batch(batch, inv_freq, layers, ws) before any other op of the batch. It
// validates the batch (n <= max_tokens, positions inside their caches, cache head_dim), writes
// the batch's ids, token slots (position, cache base, first layer, capacity) to fixed device
// buffers and, when `layers`, rope cos/sin (computed on the host in double, as the CPU does) to
// ws.rope_cos/sin — every value that changes from one decode step to the next. The other ops do
// no host work that depends on those values, so a decode step (n <= 8) between begin_batch and
// end_batch is captured once as a CUDA graph and replayed (the attention grid depends on n and
// the power-of-two bucket of the batch's longest context only). end_batch must follow the last
// op of every batch.
//
// CUDA graphs (on unless PLEXUS_CUDA_GRAPHS=0 or allow_graphs(false)): a batch of 1-8 tokens with
// layers is, per (tokens, context bucket), run eagerly once, captured the next time, and replayed
// after that (step_graphs.h): between begin_batch and end_batch its operations may be deferred
// to end_batch, which launches the graph. A caller must therefore not enqueue its own work on
// the stream, nor read results, between begin_batch and end_batch of such a batch (streamed
// weights waiting on a copy stream: call allow_graphs(false)). Results are identical either way.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compute/compute_ops.h"
#include "compute/cuda/step_graphs.h"
#include "compute/layer_shape.h"
#include "kernels/cpu/matmul.h"  // MatmulPart

struct cublasContext;

namespace plexus::cuda {

struct TokenSlot;
struct QueryTile;
struct KvSpan;

// The fixed sizes one CudaOps serves.
struct CudaOpsSizes {
  std::int64_t max_tokens = 0;   // tokens per batch
  std::int64_t max_context = 0;  // the longest sequence attended (no buffer depends on it today)
  std::int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  std::int64_t max_cols = 0;     // the widest matmul input with more than 8 tokens: max(H, q_dim, I)
  std::int64_t max_pairs = 0;    // mixture of experts: max_tokens × experts per token (0: a dense model)
  std::int64_t rope_tables = 1;  // LayerShape::rope_tables (2: Gemma 3's global and local bases)
  static CudaOpsSizes of(const LayerShape& l, std::int64_t max_tokens, std::int64_t max_context);
};

class CudaOps final : public ComputeOps {
 public:
  // Device bytes of the scratch buffer the constructor takes.
  static std::size_t scratch_bytes(const CudaOpsSizes& sizes);

  // `stream`: where every op runs (the caller's; its device must be current when constructing
  // and calling). `device_name` ("cuda:0") starts every error message. `scratch`: device memory
  // of at least scratch_bytes(sizes) bytes, 256-byte aligned (cudaMalloc's), owned by the caller.
  CudaOps(cudaStream_t stream, std::string device_name, const CudaOpsSizes& sizes, void* scratch,
          std::size_t scratch_size);
  ~CudaOps() override;
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  void begin_batch(const TokenBatch& batch, std::span<const double> inv_freq, bool layers, Workspace& ws) override;
  void end_batch() override;
  void embed(const WeightMatrix& table, std::span<const std::int32_t> ids, float* x) override;
  void rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y) override;
  void matmul(std::span<const MatmulPart> parts, const float* x, std::int64_t n, std::int64_t ldx) override;
  void add_bias(float* y, const float* bias, std::int64_t n, std::int64_t d) override;
  void rope_store_kv(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) override;
  void attention(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) override;
  void silu_mul(const float* gate, const float* up, float* out, std::int64_t n) override;
  void gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n) override;
  void scale(float* x, float s, std::int64_t n) override;
  void softcap(float* x, float cap, std::int64_t n) override;
  void add(float* x, const float* y, std::int64_t n) override;
  void add_rmsnorm(float* x, const float* y, const float* w, std::int64_t rows, std::int64_t d, float eps,
                   float* out) override;
  void gather_rows(const float* src, std::span<const std::int64_t> rows, std::int64_t d, float* dst) override;
  // GPT-2 (kernels/cuda/layernorm_gelu.h)
  void layernorm(const float* x, const float* w, const float* b, std::int64_t rows, std::int64_t d, float eps,
                 float* y) override;
  void gelu_tanh(float* x, std::int64_t n) override;
  // cuda_moe.cpp. Routing on the GPU (launch_moe_route). The experts: the routing is copied to the
  // host (the stream synchronised: such a batch is never graphed), each used expert's tokens
  // gathered and run through its gate/up and down products (the dense MLP's kernels, every
  // weight dtype), each output row landing at its (token, slot)'s place in ws.moe_y, then one
  // launch_moe_combine sums every token's k rows, weighted, into `out` (in the tokens' slot
  // order: not bitwise the CPU's ascending expert order). Unverified on a GPU so far.
  void moe_route(const float* logits, std::int64_t n, const MoeRouting& r, Workspace& ws) override;
  void moe_experts(std::span<const ExpertWeights> experts, const float* xb, std::int64_t n, const MoeRouting& r,
                   float* out, Workspace& ws) override;

  cudaStream_t stream() const { return stream_; }

  // Batches of at least this many tokens use the tiled prefill attention kernel where it
  // supports the geometry (head_dim 64 or 128); default kPrefillAttentionMinTokens, and never
  // when the environment sets PLEXUS_CUDA_PREFILL_ATTENTION=0. For tests.
  void set_prefill_attention_min_tokens(std::int64_t n) { prefill_min_tokens_ = n; }
  static constexpr std::int64_t kPrefillAttentionMinTokens = 32;

  // Which prefill attention kernel runs. kAuto (the default): the tensor-core kernel (bf16
  // products, f32 accumulation and softmax; launch_prefill_attention_bf16) when the weights of
  // the last matmul before the attention — the layer's q/k/v projections — are bf16 or f16, the
  // f32 kernel when they are f32 (f32 models keep f32 attention: their tests allow 1e-3 NLL).
  // The environment overrides it: PLEXUS_CUDA_PREFILL_ATTENTION=f32 always picks the f32 kernel,
  // =bf16 always the tensor-core one, =bf16-inloop the tensor-core one without staging (below)
  // (=0 turns the prefill kernels off, as above).
  enum class PrefillPrecision { kAuto, kF32, kBF16 };
  void set_prefill_attention_precision(PrefillPrecision p) { prefill_precision_ = p; }
  // The bf16 kernel's variant: staged (the default: keys/values converted to bf16 scratch once
  // per layer call, then streamed with cp.async; launch_prefill_attention_bf16_staged) or the
  // in-loop conversion kernel (launch_prefill_attention_bf16; PLEXUS_CUDA_PREFILL_ATTENTION=
  // bf16-inloop). Batches whose keys do not fit the scratch take the in-loop kernel.
  void set_prefill_attention_staged(bool on) { prefill_staged_ = on; }

  // Whether decode batches may be captured and replayed as CUDA graphs (see above).
  void allow_graphs(bool on) { graphs_allowed_ = on; }
  std::int64_t graph_replays() const { return graphs_.replays(); }  // batches replayed so far
  const std::string& device_name() const { return device_; }

 private:
  void check_launch(const char* op) const;  // throws naming the device and op on a launch error
  void check_shape(const AttentionShape& s, const char* op) const;
  void stage_ids(std::span<const std::int32_t> ids);  // host ids -> pinned -> ids_dev_
  void release() noexcept;

  cudaStream_t stream_;
  std::string device_;
  CudaOpsSizes sizes_;
  int target_blocks_ = 0;  // attention blocks to aim for: a few per SM

  // Device scratch regions (inside the caller's buffer).
  void* cublas_ws_ = nullptr;
  std::size_t cublas_ws_bytes_ = 0;
  void* gemm_x_ = nullptr;           // (max_tokens, max_cols) 16-bit GEMM inputs
  std::size_t gemm_x_bytes_ = 0;
  void* wdeq_ = nullptr;             // block-format weight rows dequantised to f16 (kDequantScratchBytes)
  std::size_t wdeq_bytes_ = 0;
  float* partials_ = nullptr;        // attention partials
  std::int64_t partial_floats_ = 0;
  std::int32_t* ids_dev_ = nullptr;  // (max_tokens)
  TokenSlot* slots_dev_ = nullptr;   // (max_tokens)
  std::int64_t* rows_dev_ = nullptr; // (max_tokens)
  QueryTile* tiles_dev_ = nullptr;   // (max_tokens) prefill attention's query tiles
  KvSpan* spans_dev_ = nullptr;      // (max_tokens) the staged bf16 path's key/value spans
  std::int32_t* tile_offsets_dev_ = nullptr;  // (max_tokens) per query tile: its span's first key
  void* kv_bf16_ = nullptr;          // bf16 keys/values, kv_keys_ keys per kv head (null: none)
  std::int64_t kv_keys_ = 0;
  std::int64_t* moe_rows_dev_ = nullptr;      // (max_pairs) the tokens of each expert, expert by expert
  std::int32_t* moe_pair_rows_dev_ = nullptr; // (max_pairs) each (token, slot)'s row of ws.moe_y

  // Pinned host staging, same regions; rewritten only after the event of its last upload.
  void* pinned_ = nullptr;
  std::int32_t* ids_host_ = nullptr;   // (max_tokens)
  TokenSlot* slots_host_ = nullptr;    // (max_tokens)
  std::int64_t* rows_host_ = nullptr;  // (max_tokens)
  QueryTile* tiles_host_ = nullptr;    // (max_tokens)
  KvSpan* spans_host_ = nullptr;       // (max_tokens)
  std::int32_t* tile_offsets_host_ = nullptr;  // (max_tokens)
  float* rope_host_ = nullptr;         // (2, max_tokens, head_dim / 2) cos then sin
  std::int32_t* moe_experts_host_ = nullptr;    // (max_pairs) the routing read back
  std::int64_t* moe_rows_host_ = nullptr;       // (max_pairs)
  std::int32_t* moe_pair_rows_host_ = nullptr;  // (max_pairs)
  cudaEvent_t meta_uploaded_ = nullptr, rows_uploaded_ = nullptr;
  cublasContext* cublas_ = nullptr;

  // The current batch, as begin_batch left it.
  std::int64_t n_ = 0;
  std::vector<std::int32_t> staged_ids_;  // what ids_dev_ holds
  bool have_slots_ = false;
  std::int64_t layer_lo_ = 0, layer_hi_ = 0;  // layers every token's cache holds: [lo, hi)
  std::int64_t longest_ = 0;                  // max(pos + 1) of the batch
  std::int64_t n_tiles_ = 0;                  // query tiles in tiles_dev_
  std::int64_t n_spans_ = 0;                  // key/value spans in spans_dev_
  std::int64_t kv_needed_ = -1;               // keys the spans need; -1: they do not fit kv_bf16_
  bool caches_aligned_ = false;               // every cache 16-byte aligned (prefill kernel)
  std::int64_t prefill_min_tokens_ = kPrefillAttentionMinTokens;  // <= 0: never
  PrefillPrecision prefill_precision_ = PrefillPrecision::kAuto;
  bool prefill_staged_ = true;
  bool last_weights_16bit_ = false;           // the last matmul's weights were bf16 / f16 (kAuto)
  std::int64_t bucket_ = 32;                  // attention's context bucket: a power of two >= longest_
  bool graphs_allowed_ = true;
  StepGraphs graphs_;
  std::vector<std::uint64_t> sig_words_;  // matmul's signature, reused
};

}  // namespace plexus::cuda
