// CudaOps: the compute interface on a CUDA device. Host side only: validation, metadata staging
// and kernel launches (the kernels are in kernels/cuda).
#include "compute/cuda/cuda_ops.h"

#include <cublas_v2.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "compute/workspace.h"
#include "core/error.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/layernorm_gelu.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/prefill_attention.h"
#include "kernels/cuda/rope_kv.h"
#include "kernels/cuda/token_slot.h"

namespace plexus::cuda {

namespace {

constexpr std::size_t kAlign = 256;
constexpr std::size_t kCublasWorkspace = 32u << 20;  // cuBLAS's recommendation for Hopper
constexpr int kMaxTargetBlocks = 1024;               // attention blocks aimed for, at most
constexpr int kMaxPartsPerCall = 8;

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The device pointers CudaOps reads of a Workspace, as plain values the captured graph ops copy.
struct WorkspaceView {
  float* q = nullptr;         // (max_tokens, n_heads·head_dim)
  float* k = nullptr;         // (max_tokens, n_kv_heads·head_dim)
  float* v = nullptr;         // (max_tokens, n_kv_heads·head_dim)
  float* att = nullptr;       // (max_tokens, n_heads·head_dim)
  float* rope_cos = nullptr;  // (max_tokens, head_dim / 2)
  float* rope_sin = nullptr;  // (max_tokens, head_dim / 2)
  std::int64_t rope_floats = 0;  // elements of rope_cos (and of rope_sin)
};

WorkspaceView view_of(Workspace& ws) {
  return {ws.q.data(), ws.k.data(), ws.v.data(), ws.att.data(), ws.rope_cos.data(), ws.rope_sin.data(),
          static_cast<std::int64_t>(ws.rope_cos.size())};
}

// Byte offsets of the scratch regions, in order.
struct ScratchLayout {
  std::size_t cublas = 0, gemm_x = 0, partials = 0, ids = 0, slots = 0, rows = 0, tiles = 0, total = 0;
  std::size_t spans = 0, tile_offsets = 0, kv_bf16 = 0;  // the staged bf16 prefill attention
  std::int64_t kv_keys = 0;                              // keys per kv head of kv_bf16 (0: none)
  std::size_t gemm_x_bytes = 0;
  std::size_t wdeq = 0, wdeq_bytes = 0;  // block-format weight rows dequantised for cuBLAS (0: none)
  std::int64_t partial_floats = 0;
  std::size_t moe_rows = 0, moe_pair_rows = 0;  // mixture of experts (max_pairs of each; none when 0)
};

AttentionGeometry geometry(const CudaOpsSizes& s) {
  AttentionGeometry g;
  g.n_heads = s.n_heads;
  g.n_kv_heads = s.n_kv_heads;
  g.head_dim = s.head_dim;
  return g;
}

ScratchLayout layout_of(const CudaOpsSizes& s) {
  ScratchLayout l;
  std::size_t at = 0;
  auto take = [&](std::size_t bytes) {
    const std::size_t here = at;
    at += align_up(bytes);
    return here;
  };
  const std::size_t mt = static_cast<std::size_t>(s.max_tokens);
  l.gemm_x_bytes = gemm_scratch_bytes(s.max_tokens, s.max_cols);
  l.partial_floats = attention_partial_floats(geometry(s), s.max_tokens, kMaxTargetBlocks);
  l.cublas = take(kCublasWorkspace);
  l.gemm_x = take(l.gemm_x_bytes);
  // Batches past the GEMV's tokens multiply block-format weights through cuBLAS, a chunk of rows
  // at a time dequantised to f16 here.
  if (s.max_tokens > kGemvDispatchMaxTokens) {
    l.wdeq_bytes = kDequantScratchBytes;
    l.wdeq = take(l.wdeq_bytes);
  }
  l.partials = take(static_cast<std::size_t>(l.partial_floats) * sizeof(float));
  l.ids = take(mt * sizeof(std::int32_t));
  l.slots = take(mt * sizeof(TokenSlot));
  l.rows = take(mt * sizeof(std::int64_t));
  l.tiles = take(mt * sizeof(QueryTile));
  // bf16 keys/values of a prefill batch (launch_prefill_kv_bf16): a fresh prefill attends its own
  // tokens, a continuation chunk as many earlier ones again; a batch needing more falls back to
  // the in-loop conversion kernel. Sized by max_tokens, never by max_context.
  if (prefill_attention_supported(geometry(s))) {
    const std::int64_t earlier = s.max_context > 0 ? std::min(s.max_tokens, s.max_context) : s.max_tokens;
    l.kv_keys = (s.max_tokens + earlier + 2 * kKvSpanAlign - 1) / kKvSpanAlign * kKvSpanAlign;
    l.spans = take(mt * sizeof(KvSpan));
    l.tile_offsets = take(mt * sizeof(std::int32_t));
    l.kv_bf16 = take(prefill_kv_bf16_bytes(geometry(s), l.kv_keys));
  }
  if (s.max_pairs > 0) {
    l.moe_rows = take(static_cast<std::size_t>(s.max_pairs) * sizeof(std::int64_t));
    l.moe_pair_rows = take(static_cast<std::size_t>(s.max_pairs) * sizeof(std::int32_t));
  }
  l.total = at;
  return l;
}

// Byte offsets of the pinned host staging regions.
struct PinnedLayout {
  std::size_t ids = 0, slots = 0, rows = 0, tiles = 0, rope = 0, spans = 0, tile_offsets = 0, total = 0;
  std::size_t moe_experts = 0, moe_rows = 0, moe_pair_rows = 0;  // max_pairs of each (none when 0)
};

PinnedLayout pinned_layout(const CudaOpsSizes& s) {
  PinnedLayout p;
  const std::size_t mt = static_cast<std::size_t>(s.max_tokens);
  std::size_t at = 0;
  auto take = [&](std::size_t bytes) {
    const std::size_t here = at;
    at += align_up(bytes);
    return here;
  };
  p.ids = take(mt * sizeof(std::int32_t));
  p.slots = take(mt * sizeof(TokenSlot));
  p.rows = take(mt * sizeof(std::int64_t));
  p.tiles = take(mt * sizeof(QueryTile));
  p.rope = take(2 * mt * static_cast<std::size_t>(s.rope_tables * (s.head_dim / 2)) * sizeof(float));
  p.spans = take(mt * sizeof(KvSpan));
  p.tile_offsets = take(mt * sizeof(std::int32_t));
  if (s.max_pairs > 0) {
    const std::size_t pairs = static_cast<std::size_t>(s.max_pairs);
    p.moe_experts = take(pairs * sizeof(std::int32_t));
    p.moe_rows = take(pairs * sizeof(std::int64_t));
    p.moe_pair_rows = take(pairs * sizeof(std::int32_t));
  }
  p.total = at;
  return p;
}

template <typename T>
T* at_offset(void* base, std::size_t offset) {
  return reinterpret_cast<T*>(static_cast<std::uint8_t*>(base) + offset);
}

std::string str(std::int64_t v) { return std::to_string(v); }

// Operation signatures for graph replay: the op and every argument its launch reads.
enum class OpId : std::uint64_t { kEmbed = 1, kRmsnorm, kGemv, kGemm, kAddBias, kRope, kAttention, kPrefill, kSiluMul, kAdd, kCopy, kAddRmsnorm,
                                  kGeluTanhMul, kScale, kSoftcap, kLayernorm, kGeluTanh, kGemmInOut };
template <typename T>
std::uint64_t word(T* p) { return reinterpret_cast<std::uintptr_t>(p); }
std::uint64_t word(std::int64_t v) { return static_cast<std::uint64_t>(v); }
std::uint64_t word(int v) { return static_cast<std::uint64_t>(static_cast<std::int64_t>(v)); }
std::uint64_t word(float v) { return std::bit_cast<std::uint32_t>(v); }
std::uint64_t word(DType d) { return static_cast<std::uint64_t>(d); }
std::uint64_t word(OpId o) { return static_cast<std::uint64_t>(o); }
template <typename... A>
std::array<std::uint64_t, sizeof...(A)> sig(A... a) {
  return {word(a)...};
}

}  // namespace

CudaOpsSizes CudaOpsSizes::of(const LayerShape& l, std::int64_t max_tokens, std::int64_t max_context) {
  CudaOpsSizes s;
  s.max_tokens = max_tokens;
  s.max_context = max_context;
  s.n_heads = l.n_heads;
  s.n_kv_heads = l.n_kv_heads;
  s.head_dim = l.head_dim;
  s.max_cols = std::max({l.hidden, l.q_dim(), l.intermediate});
  s.max_pairs = max_tokens * l.experts_per_token;
  s.rope_tables = l.rope_tables;
  return s;
}

std::size_t CudaOps::scratch_bytes(const CudaOpsSizes& sizes) { return layout_of(sizes).total; }

CudaOps::CudaOps(cudaStream_t stream, std::string device_name, const CudaOpsSizes& sizes, void* scratch,
                 std::size_t scratch_size)
    : stream_(stream), device_(std::move(device_name)), sizes_(sizes), graphs_(stream, device_) {
  if (sizes.max_tokens <= 0 || sizes.n_heads <= 0 || sizes.n_kv_heads <= 0 || sizes.n_heads % sizes.n_kv_heads != 0 ||
      sizes.head_dim <= 0 || sizes.head_dim % 2 != 0) {
    throw RuntimeError(device_ + ": CUDA ops for " + str(sizes.max_tokens) + " tokens, " + str(sizes.n_heads) +
                       " heads, " + str(sizes.n_kv_heads) + " kv heads, head_dim " + str(sizes.head_dim) +
                       ": unsupported sizes");
  }
  const ScratchLayout l = layout_of(sizes);
  if (scratch == nullptr || scratch_size < l.total) {
    throw RuntimeError(device_ + ": CUDA ops need " + str(static_cast<std::int64_t>(l.total)) +
                       " bytes of device scratch, given " + str(static_cast<std::int64_t>(scratch_size)));
  }
  cublas_ws_ = at_offset<void>(scratch, l.cublas);
  cublas_ws_bytes_ = kCublasWorkspace;
  gemm_x_ = at_offset<void>(scratch, l.gemm_x);
  gemm_x_bytes_ = l.gemm_x_bytes;
  if (l.wdeq_bytes > 0) {
    wdeq_ = at_offset<void>(scratch, l.wdeq);
    wdeq_bytes_ = l.wdeq_bytes;
  }
  partials_ = at_offset<float>(scratch, l.partials);
  partial_floats_ = l.partial_floats;
  ids_dev_ = at_offset<std::int32_t>(scratch, l.ids);
  slots_dev_ = at_offset<TokenSlot>(scratch, l.slots);
  rows_dev_ = at_offset<std::int64_t>(scratch, l.rows);
  tiles_dev_ = at_offset<QueryTile>(scratch, l.tiles);
  if (l.kv_keys > 0) {
    spans_dev_ = at_offset<KvSpan>(scratch, l.spans);
    tile_offsets_dev_ = at_offset<std::int32_t>(scratch, l.tile_offsets);
    kv_bf16_ = at_offset<void>(scratch, l.kv_bf16);
    kv_keys_ = l.kv_keys;
  }
  if (sizes.max_pairs > 0) {
    moe_rows_dev_ = at_offset<std::int64_t>(scratch, l.moe_rows);
    moe_pair_rows_dev_ = at_offset<std::int32_t>(scratch, l.moe_pair_rows);
  }
  if (const char* e = std::getenv("PLEXUS_CUDA_PREFILL_ATTENTION"); e != nullptr) {
    const std::string v(e);
    if (v == "0") prefill_min_tokens_ = 0;
    if (v == "f32") prefill_precision_ = PrefillPrecision::kF32;
    if (v == "bf16") prefill_precision_ = PrefillPrecision::kBF16;
    if (v == "bf16-inloop") {
      prefill_precision_ = PrefillPrecision::kBF16;
      prefill_staged_ = false;
    }
  }
  if (const char* e = std::getenv("PLEXUS_CUDA_GRAPHS"); e != nullptr && std::string(e) == "0") graphs_allowed_ = false;
  try {
    int device = 0, sms = 0;
    PLEXUS_CUDA_CHECK(cudaGetDevice(&device), device_ + " finding the current device");
    PLEXUS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                      device_ + " reading the SM count");
    target_blocks_ = std::clamp(4 * sms, 1, kMaxTargetBlocks);
    const PinnedLayout p = pinned_layout(sizes);
    PLEXUS_CUDA_CHECK(cudaHostAlloc(&pinned_, p.total, cudaHostAllocDefault),
                      device_ + " allocating " + str(static_cast<std::int64_t>(p.total)) + " bytes of pinned staging");
    ids_host_ = at_offset<std::int32_t>(pinned_, p.ids);
    slots_host_ = at_offset<TokenSlot>(pinned_, p.slots);
    rows_host_ = at_offset<std::int64_t>(pinned_, p.rows);
    tiles_host_ = at_offset<QueryTile>(pinned_, p.tiles);
    rope_host_ = at_offset<float>(pinned_, p.rope);
    spans_host_ = at_offset<KvSpan>(pinned_, p.spans);
    tile_offsets_host_ = at_offset<std::int32_t>(pinned_, p.tile_offsets);
    if (sizes.max_pairs > 0) {
      moe_experts_host_ = at_offset<std::int32_t>(pinned_, p.moe_experts);
      moe_rows_host_ = at_offset<std::int64_t>(pinned_, p.moe_rows);
      moe_pair_rows_host_ = at_offset<std::int32_t>(pinned_, p.moe_pair_rows);
    }
    PLEXUS_CUDA_CHECK(cudaEventCreateWithFlags(&meta_uploaded_, cudaEventDisableTiming), device_ + " creating an event");
    PLEXUS_CUDA_CHECK(cudaEventCreateWithFlags(&rows_uploaded_, cudaEventDisableTiming), device_ + " creating an event");
    cublasHandle_t h = nullptr;
    PLEXUS_CUDA_CHECK(cublasCreate(&h), device_ + " creating the cuBLAS handle");
    cublas_ = h;
    PLEXUS_CUDA_CHECK(cublasSetStream(h, stream_), device_ + " binding cuBLAS to the stream");
    PLEXUS_CUDA_CHECK(cublasSetWorkspace(h, cublas_ws_, cublas_ws_bytes_), device_ + " setting the cuBLAS workspace");
    PLEXUS_CUDA_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), device_ + " setting the cuBLAS math mode");
  } catch (...) {
    release();
    throw;
  }
}

CudaOps::~CudaOps() {
  graphs_.reset();
  release();
}

void CudaOps::release() noexcept {
  if (cublas_) cublasDestroy(cublas_);
  if (meta_uploaded_) cudaEventDestroy(meta_uploaded_);
  if (rows_uploaded_) cudaEventDestroy(rows_uploaded_);
  if (pinned_) cudaFreeHost(pinned_);
  cublas_ = nullptr;
  meta_uploaded_ = rows_uploaded_ = nullptr;
  pinned_ = nullptr;
}

void CudaOps::check_launch(const char* op) const {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) check(e, op, device_ + " " + op);
}

void CudaOps::check_shape(const AttentionShape& s, const char* op) const {
  if (s.n_heads != sizes_.n_heads || s.n_kv_heads != sizes_.n_kv_heads || s.head_dim != sizes_.head_dim) {
    throw RuntimeError(device_ + " " + op + ": attention shape (" + str(s.n_heads) + ", " + str(s.n_kv_heads) + ", " +
                       str(s.head_dim) + ") differs from the CUDA ops' (" + str(sizes_.n_heads) + ", " +
                       str(sizes_.n_kv_heads) + ", " + str(sizes_.head_dim) + ")");
  }
}

void CudaOps::stage_ids(std::span<const std::int32_t> ids) {
  PLEXUS_CUDA_CHECK(cudaEventSynchronize(meta_uploaded_), device_ + " waiting for the last metadata upload");
  std::copy(ids.begin(), ids.end(), ids_host_);
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(ids_dev_, ids_host_, ids.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                                    stream_),
                    device_ + " uploading token ids");
  PLEXUS_CUDA_CHECK(cudaEventRecord(meta_uploaded_, stream_), device_ + " recording the metadata upload");
  staged_ids_.assign(ids.begin(), ids.end());
}

void CudaOps::begin_batch(const TokenBatch& batch, std::span<const double> inv_freq, bool layers, Workspace& ws) {
  graphs_.reset();  // a batch that ended in an exception leaves no capture behind
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  if (n > sizes_.max_tokens) {
    throw RuntimeError(device_ + ": a batch of " + str(n) + " tokens; the CUDA ops were sized for " +
                       str(sizes_.max_tokens));
  }
  if (static_cast<std::int64_t>(batch.pos.size()) != n || (layers && static_cast<std::int64_t>(batch.cache.size()) != n)) {
    throw RuntimeError(device_ + ": a batch's ids, positions and caches differ in count");
  }
  // Everything is validated before the pinned buffer is rewritten.
  const std::int64_t half = sizes_.head_dim / 2;
  WorkspaceView v{};
  std::int64_t lo = 0, hi = 0, longest = 0, n_tiles = 0, n_spans = 0, kv_needed = -1;
  bool caches_aligned = false;
  if (layers) {
    v = view_of(ws);
    if (static_cast<std::int64_t>(inv_freq.size()) != half * sizes_.rope_tables) {
      throw RuntimeError(device_ + ": " + str(static_cast<std::int64_t>(inv_freq.size())) +
                         " rope frequencies for head_dim " + str(sizes_.head_dim) + " and " + str(sizes_.rope_tables) + " table(s)");
    }
    if (n * half * sizes_.rope_tables > v.rope_floats) {
      throw RuntimeError(device_ + ": the workspace's rope tables hold " + str(v.rope_floats / std::max<std::int64_t>(1, half)) +
                         " tokens, the batch has " + str(n));
    }
    lo = INT64_MIN;
    hi = INT64_MAX;
    for (std::int64_t t = 0; t < n; ++t) {
      KvCache* c = batch.cache[static_cast<std::size_t>(t)];
      const std::int64_t p = batch.pos[static_cast<std::size_t>(t)];
      if (c == nullptr) throw RuntimeError(device_ + ": token " + str(t) + " of the batch has no KV cache");
      if (c->head_dim() != sizes_.head_dim) {
        throw RuntimeError(device_ + ": a KV cache of head_dim " + str(c->head_dim()) + " for a model of head_dim " +
                           str(sizes_.head_dim));
      }
      if (p < 0 || p >= c->capacity()) {
        throw RuntimeError(device_ + ": token " + str(t) + " at position " + str(p) + " outside its KV cache of " +
                           str(c->capacity()) + " positions");
      }
      lo = std::max(lo, c->first_layer());
      hi = std::min(hi, c->first_layer() + c->n_layers());
      longest = std::max(longest, p + 1);
    }
  }

  PLEXUS_CUDA_CHECK(cudaEventSynchronize(meta_uploaded_), device_ + " waiting for the last metadata upload");
  std::copy(batch.ids.begin(), batch.ids.end(), ids_host_);
  if (n > 0) {
    PLEXUS_CUDA_CHECK(cudaMemcpyAsync(ids_dev_, ids_host_, static_cast<std::size_t>(n) * sizeof(std::int32_t),
                                      cudaMemcpyHostToDevice, stream_),
                      device_ + " uploading token ids");
  }
  if (layers && n > 0) {
    for (std::int64_t t = 0; t < n; ++t) {
      KvCache* c = batch.cache[static_cast<std::size_t>(t)];
      TokenSlot& s = slots_host_[t];
      s.cache = c->n_layers() > 0 ? c->keys(c->first_layer(), 0) : nullptr;  // the cache's base
      s.capacity = c->capacity();
      s.first_layer = static_cast<std::int32_t>(c->first_layer());
      s.pos = batch.pos[static_cast<std::size_t>(t)];
    }
    PLEXUS_CUDA_CHECK(cudaMemcpyAsync(slots_dev_, slots_host_, static_cast<std::size_t>(n) * sizeof(TokenSlot),
                                      cudaMemcpyHostToDevice, stream_),
                      device_ + " uploading token slots");
    // Query tiles of the prefill attention kernel: runs of one sequence's consecutive positions.
    caches_aligned = true;
    for (std::int64_t t = 0; t < n; ++t) {
      caches_aligned = caches_aligned && (reinterpret_cast<std::uintptr_t>(slots_host_[t].cache) & 15u) == 0;
    }
    n_tiles = make_query_tiles(slots_host_, n, prefill_tile_tokens(geometry(sizes_)), tiles_host_);
    PLEXUS_CUDA_CHECK(cudaMemcpyAsync(tiles_dev_, tiles_host_, static_cast<std::size_t>(n_tiles) * sizeof(QueryTile),
                                      cudaMemcpyHostToDevice, stream_),
                      device_ + " uploading query tiles");
    // Key/value spans of the staged bf16 prefill attention, when the scratch holds them (prefill
    // batches only: decode steps upload nothing more).
    if (kv_keys_ > 0 && prefill_min_tokens_ > 0 && n >= prefill_min_tokens_) {
      kv_needed = make_kv_spans(slots_host_, tiles_host_, n_tiles, spans_host_, tile_offsets_host_, &n_spans);
      if (kv_needed <= kv_keys_ && n_spans > 0) {
        PLEXUS_CUDA_CHECK(cudaMemcpyAsync(spans_dev_, spans_host_, static_cast<std::size_t>(n_spans) * sizeof(KvSpan),
                                          cudaMemcpyHostToDevice, stream_),
                          device_ + " uploading key/value spans");
        PLEXUS_CUDA_CHECK(cudaMemcpyAsync(tile_offsets_dev_, tile_offsets_host_,
                                          static_cast<std::size_t>(n_tiles) * sizeof(std::int32_t),
                                          cudaMemcpyHostToDevice, stream_),
                          device_ + " uploading tile offsets");
      } else {
        kv_needed = -1;
      }
    }
    // cos/sin of pos · inv_freq in double, rounded to f32: the CPU forward's tables bit for bit.
    // Table-major: table r's (n, half) at r · n · half (rope_store_kv's offset).
    const std::int64_t tables = sizes_.rope_tables;
    float* cos_h = rope_host_;
    float* sin_h = rope_host_ + sizes_.max_tokens * half * tables;
    for (std::int64_t r = 0; r < tables; ++r) {
      for (std::int64_t t = 0; t < n; ++t) {
        for (std::int64_t i = 0; i < half; ++i) {
          const double a = static_cast<double>(batch.pos[static_cast<std::size_t>(t)]) *
                           inv_freq[static_cast<std::size_t>(r * half + i)];
          cos_h[(r * n + t) * half + i] = static_cast<float>(std::cos(a));
          sin_h[(r * n + t) * half + i] = static_cast<float>(std::sin(a));
        }
      }
    }
    const std::size_t rope_bytes = static_cast<std::size_t>(n * half * tables) * sizeof(float);
    PLEXUS_CUDA_CHECK(cudaMemcpyAsync(v.rope_cos, cos_h, rope_bytes, cudaMemcpyHostToDevice, stream_),
                      device_ + " uploading rope cos");
    PLEXUS_CUDA_CHECK(cudaMemcpyAsync(v.rope_sin, sin_h, rope_bytes, cudaMemcpyHostToDevice, stream_),
                      device_ + " uploading rope sin");
  }
  PLEXUS_CUDA_CHECK(cudaEventRecord(meta_uploaded_, stream_), device_ + " recording the metadata upload");
  staged_ids_.assign(batch.ids.begin(), batch.ids.end());
  n_ = n;
  have_slots_ = layers;
  layer_lo_ = lo;
  layer_hi_ = hi;
  longest_ = longest;
  n_tiles_ = n_tiles;
  n_spans_ = n_spans;
  kv_needed_ = kv_needed;
  caches_aligned_ = caches_aligned;
  bucket_ = 32;
  while (bucket_ < longest_) bucket_ *= 2;
  const bool uses_prefill = prefill_min_tokens_ > 0 && n >= prefill_min_tokens_;
  const bool eligible = graphs_allowed_ && stream_ != nullptr && layers && n >= 1 && n <= kGemvMaxTokens && !uses_prefill;
  graphs_.begin(n, bucket_, eligible);
}

void CudaOps::end_batch() {
  graphs_.end();
  check_launch("end of batch");
}

void CudaOps::embed(const WeightMatrix& table, std::span<const std::int32_t> ids, float* x) {
  const std::int64_t n = static_cast<std::int64_t>(ids.size());
  if (n == 0) return;
  if (n > sizes_.max_tokens) {
    throw RuntimeError(device_ + ": embedding " + str(n) + " tokens; the CUDA ops were sized for " + str(sizes_.max_tokens));
  }
  if (dtype_is_block(table.dtype) && table.cols % dtype_block_elems(table.dtype) != 0) {
    throw RuntimeError(device_ + ": a " + std::string(dtype_name(table.dtype)) + " embedding of " + str(table.cols) +
                       " columns (not whole blocks)");
  }
  if (!std::equal(ids.begin(), ids.end(), staged_ids_.begin(), staged_ids_.end())) {
    graphs_.uncapturable();  // a host upload mid-batch
    stage_ids(ids);
  }
  graphs_.op(sig(OpId::kEmbed, table.data, table.dtype, table.rows, table.cols, x, n), [=, this] {
    launch_embed(table.data, table.dtype, table.rows, table.cols, ids_dev_, n, x, stream_);
    check_launch("embedding");
  });
}

void CudaOps::rmsnorm(const float* x, const float* w, std::int64_t rows, std::int64_t d, float eps, float* y) {
  graphs_.op(sig(OpId::kRmsnorm, x, w, rows, d, eps, y), [=, this] {
    launch_rmsnorm(x, w, rows, d, eps, y, stream_);
    check_launch("rmsnorm");
  });
}

void CudaOps::matmul(std::span<const MatmulPart> parts, const float* x, std::int64_t n, std::int64_t ldx) {
  if (n <= 0 || parts.empty()) return;
  const std::int64_t cols = parts[0].w.cols;
  if (ldx < cols) throw RuntimeError(device_ + ": matmul input stride " + str(ldx) + " below its " + str(cols) + " columns");
  for (const MatmulPart& p : parts) {
    if (p.w.cols != cols) throw RuntimeError(device_ + ": matmul parts of different input widths");
    if (p.ldy < p.w.rows) throw RuntimeError(device_ + ": matmul output stride below the weight's rows");
    if (dtype_is_block(p.w.dtype) && cols % dtype_block_elems(p.w.dtype) != 0) {
      throw RuntimeError(device_ + ": a " + std::string(dtype_name(p.w.dtype)) + " matmul of " + str(cols) +
                         " columns (not whole blocks of " + str(dtype_block_elems(p.w.dtype)) + ")");
    }
  }
  // Consecutive parts of one dtype run as one call (one GEMV launch; one conversion of x); a
  // weight stored (in, out) (GPT-2's Conv1D, read in place) is a cuBLAS call of its own.
  for (std::size_t first = 0; first < parts.size();) {
    if (parts[first].w.in_out()) {
      const MatmulPart p = parts[first];
      last_weights_16bit_ = p.w.dtype == DType::kBF16 || p.w.dtype == DType::kF16;
      graphs_.op(sig(OpId::kGemmInOut, p.w.dtype, cols, x, n, ldx, p.w.data, p.w.rows, p.w.in_out_ld, p.y, p.ldy),
                 [=, this] {
                   gemm_cublas_in_out(cublas_, p.w.dtype, p.w.data, p.w.rows, cols, p.w.in_out_ld, x, n, ldx, p.y, p.ldy,
                                      gemm_x_, gemm_x_bytes_, stream_, device_);
                 });
      ++first;
      continue;
    }
    std::array<MatmulTarget, kMaxPartsPerCall> targets;
    const DType dtype = parts[first].w.dtype;
    last_weights_16bit_ = dtype == DType::kBF16 || dtype == DType::kF16;
    int count = 0;
    const bool gemv = n <= kGemvDispatchMaxTokens;
    std::vector<std::uint64_t>& words = sig_words_;
    words.clear();
    for (std::uint64_t w : sig(gemv ? OpId::kGemv : OpId::kGemm, dtype, cols, x, n, ldx)) words.push_back(w);
    while (first + count < parts.size() && count < kMaxPartsPerCall && parts[first + count].w.dtype == dtype &&
           !parts[first + count].w.in_out()) {
      const MatmulPart& p = parts[first + count];
      targets[static_cast<std::size_t>(count)] = MatmulTarget{p.w.data, p.w.rows, p.y, p.ldy};
      for (std::uint64_t w : sig(p.w.data, p.w.rows, p.y, p.ldy)) words.push_back(w);
      ++count;
    }
    graphs_.op(words, [=, this] {
      if (gemv) {
        launch_gemv(dtype, targets.data(), count, cols, x, n, ldx, stream_);
        check_launch("GEMV");
      } else if (dtype_is_block(dtype)) {
        gemm_cublas_blocks(cublas_, dtype, targets.data(), count, cols, x, n, ldx, gemm_x_, gemm_x_bytes_, wdeq_,
                           wdeq_bytes_, stream_, device_);
      } else {
        gemm_cublas(cublas_, dtype, targets.data(), count, cols, x, n, ldx, gemm_x_, gemm_x_bytes_, stream_, device_);
      }
    });
    first += static_cast<std::size_t>(count);
  }
}

void CudaOps::add_bias(float* y, const float* bias, std::int64_t n, std::int64_t d) {
  graphs_.op(sig(OpId::kAddBias, y, bias, n, d), [=, this] {
    launch_add_bias(y, bias, n, d, stream_);
    check_launch("add_bias");
  });
}

void CudaOps::rope_store_kv(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) {
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  if (n == 0) return;
  check_shape(s, "rope_store_kv");
  if (!have_slots_ || n != n_) throw RuntimeError(device_ + ": rope_store_kv without begin_batch(layers) of this batch");
  if (layer < layer_lo_ || layer >= layer_hi_) {
    throw RuntimeError(device_ + ": layer " + str(layer) + " outside the batch's KV caches (layers " + str(layer_lo_) +
                       ".." + str(layer_hi_ - 1) + ")");
  }
  const WorkspaceView v = view_of(ws);
  const std::int64_t heads = s.n_heads, kv_heads = s.n_kv_heads, hd = s.head_dim;
  const bool interleaved = s.rope_interleaved;
  const std::int64_t rot = s.rotated_dims();
  const float scale = s.rope_scale;
  if (s.rope_table < 0 || s.rope_table >= sizes_.rope_tables) {
    throw RuntimeError(device_ + ": rope table " + str(s.rope_table) + " of " + str(sizes_.rope_tables));
  }
  const std::int64_t table = static_cast<std::int64_t>(s.rope_table) * n * (hd / 2);  // begin_batch's table-major layout
  const float* cos = v.rope_cos + table;
  const float* sin = v.rope_sin + table;
  graphs_.op(sig(OpId::kRope, layer, v.q, v.k, v.v, cos, sin, n, heads, kv_heads, hd, interleaved ? 1 : 0, rot, scale),
             [=, this] {
    launch_rope_store_kv(v.q, v.k, v.v, cos, sin, slots_dev_, n, heads, kv_heads, hd, layer, interleaved, rot, scale,
                         stream_);
    check_launch("rope and KV store");
  });
}

void CudaOps::attention(int layer, const TokenBatch& batch, const AttentionShape& s, Workspace& ws) {
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  if (n == 0) return;
  check_shape(s, "attention");
  if (!have_slots_ || n != n_) throw RuntimeError(device_ + ": attention without begin_batch(layers) of this batch");
  if (layer < layer_lo_ || layer >= layer_hi_) {
    throw RuntimeError(device_ + ": attention at layer " + str(layer) + " outside the batch's KV caches");
  }
  AttentionGeometry g = geometry(sizes_);
  g.window = s.window;
  g.scale = s.scale;
  g.softcap = s.softcap;
  const WorkspaceView v = view_of(ws);
  if (prefill_min_tokens_ > 0 && n >= prefill_min_tokens_ && caches_aligned_ && prefill_attention_supported(g)) {
    const std::int64_t n_tiles = n_tiles_;
    const bool bf16 = prefill_precision_ == PrefillPrecision::kBF16 ||
                      (prefill_precision_ == PrefillPrecision::kAuto && last_weights_16bit_);
    // The staged bf16 path when this batch's keys fit the scratch (kv_needed_ >= 0).
    const bool staged = bf16 && prefill_staged_ && kv_needed_ > 0 && n_spans_ > 0;
    const std::int64_t n_spans = n_spans_, kv_needed = kv_needed_;
    graphs_.op(sig(OpId::kPrefill, layer, v.q, v.att, n, n_tiles, g.window, g.scale, bf16 ? 1 : 0, staged ? 1 : 0,
                   n_spans, kv_needed),
               [=, this] {
      if (staged) {
        launch_prefill_kv_bf16(slots_dev_, spans_dev_, n_spans, kv_needed, g, layer, kv_bf16_, kv_keys_, stream_);
        check_launch("prefill attention's key/value conversion");
        launch_prefill_attention_bf16_staged(v.q, slots_dev_, tiles_dev_, tile_offsets_dev_, n_tiles, g, kv_bf16_,
                                             kv_keys_, v.att, stream_);
      } else if (bf16) {
        launch_prefill_attention_bf16(v.q, slots_dev_, tiles_dev_, n_tiles, g, layer, v.att, stream_);
      } else {
        launch_prefill_attention(v.q, slots_dev_, tiles_dev_, n_tiles, g, layer, v.att, stream_);
      }
      check_launch("prefill attention");
    });
    return;
  }
  // The longest context rounded up to a power of two (bucket_): the grid is the same for every
  // step of a bucket (a captured decode step stays valid while the context grows inside it).
  const std::int64_t max_keys = s.window > 0 ? std::min(bucket_, s.window) : bucket_;
  const AttentionSplit split = attention_split(g, n, max_keys, target_blocks_);
  graphs_.op(sig(OpId::kAttention, layer, v.q, v.att, n, g.window, g.scale, g.softcap, split.splits, split.chunk), [=, this] {
    launch_attention(v.q, slots_dev_, n, g, split, layer, partials_, partial_floats_, v.att, stream_);
    check_launch("attention");
  });
}

void CudaOps::layernorm(const float* x, const float* w, const float* b, std::int64_t rows, std::int64_t d, float eps,
                        float* y) {
  graphs_.op(sig(OpId::kLayernorm, x, w, b, rows, d, eps, y), [=, this] {
    launch_layernorm(x, w, b, rows, d, eps, y, stream_);
    check_launch("layernorm");
  });
}

void CudaOps::gelu_tanh(float* x, std::int64_t n) {
  graphs_.op(sig(OpId::kGeluTanh, x, n), [=, this] {
    launch_gelu_tanh(x, n, stream_);
    check_launch("gelu_tanh");
  });
}

void CudaOps::silu_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  graphs_.op(sig(OpId::kSiluMul, gate, up, out, n), [=, this] {
    launch_silu_mul(gate, up, out, n, stream_);
    check_launch("silu_mul");
  });
}

void CudaOps::gelu_tanh_mul(const float* gate, const float* up, float* out, std::int64_t n) {
  graphs_.op(sig(OpId::kGeluTanhMul, gate, up, out, n), [=, this] {
    launch_gelu_tanh_mul(gate, up, out, n, stream_);
    check_launch("gelu_tanh_mul");
  });
}

void CudaOps::scale(float* x, float s, std::int64_t n) {
  graphs_.op(sig(OpId::kScale, x, s, n), [=, this] {
    launch_scale(x, s, n, stream_);
    check_launch("scale");
  });
}

void CudaOps::softcap(float* x, float cap, std::int64_t n) {
  graphs_.op(sig(OpId::kSoftcap, x, cap, n), [=, this] {
    launch_softcap(x, cap, n, stream_);
    check_launch("softcap");
  });
}

void CudaOps::add(float* x, const float* y, std::int64_t n) {
  graphs_.op(sig(OpId::kAdd, x, y, n), [=, this] {
    launch_add(x, y, n, stream_);
    check_launch("residual add");
  });
}

void CudaOps::add_rmsnorm(float* x, const float* y, const float* w, std::int64_t rows, std::int64_t d, float eps,
                          float* out) {
  graphs_.op(sig(OpId::kAddRmsnorm, x, y, w, rows, d, eps, out), [=, this] {
    launch_add_rmsnorm(x, y, w, rows, d, eps, out, stream_);
    check_launch("residual add and rmsnorm");
  });
}

void CudaOps::gather_rows(const float* src, std::span<const std::int64_t> rows, std::int64_t d, float* dst) {
  const std::int64_t m = static_cast<std::int64_t>(rows.size());
  if (m == 0 || d == 0) return;
  bool identity = true;
  for (std::int64_t i = 0; i < m && identity; ++i) identity = rows[static_cast<std::size_t>(i)] == i;
  if (identity) {  // rows 0..m-1 in order: one copy, or nothing in place
    if (src != dst) {
      graphs_.op(sig(OpId::kCopy, src, dst, m, d), [=, this] {
        PLEXUS_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(m * d) * sizeof(float),
                                          cudaMemcpyDeviceToDevice, stream_),
                          device_ + " gathering rows");
      });
    }
    return;
  }
  if (m > sizes_.max_tokens) {
    throw RuntimeError(device_ + ": gathering " + str(m) + " rows; the CUDA ops were sized for " + str(sizes_.max_tokens));
  }
  if (src == dst) throw RuntimeError(device_ + ": gather_rows in place with a reordering");
  graphs_.uncapturable();  // a host upload mid-batch
  PLEXUS_CUDA_CHECK(cudaEventSynchronize(rows_uploaded_), device_ + " waiting for the last row upload");
  std::copy(rows.begin(), rows.end(), rows_host_);
  PLEXUS_CUDA_CHECK(cudaMemcpyAsync(rows_dev_, rows_host_, static_cast<std::size_t>(m) * sizeof(std::int64_t),
                                    cudaMemcpyHostToDevice, stream_),
                    device_ + " uploading gathered rows");
  PLEXUS_CUDA_CHECK(cudaEventRecord(rows_uploaded_, stream_), device_ + " recording the row upload");
  launch_gather_rows(src, rows_dev_, m, d, dst, stream_);
  check_launch("gather_rows");
}

}  // namespace plexus::cuda
