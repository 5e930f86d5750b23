// Tensor-parallel shards of a Llama-family model: geometry, module tree and weights.
#include "model/tensor_split.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/dtype.h"
#include "core/error.h"

namespace plexus {
namespace {

bool splits(const ModelConfig& c, int n, bool whole_experts) {
  return n >= 1 && c.num_heads % n == 0 && (c.num_kv_heads % n == 0 || n % c.num_kv_heads == 0) &&
         c.intermediate_size % n == 0 &&
         (whole_experts ? c.moe.num_experts % n == 0 : c.moe.expert_intermediate_size % n == 0);
}

WeightMatrix row_slice(WeightMatrix m, std::int64_t first, std::int64_t count) {
  assert(first >= 0 && first + count <= m.rows);
  m.data = m.row(first);
  m.rows = count;
  return m;
}

VectorView vector_slice(VectorView v, std::int64_t first, std::int64_t count) {
  if (v.empty()) return v;
  assert(first >= 0 && first + count <= v.size);
  return VectorView{v.data + first, count};
}

void check_block_columns(DType t, std::int64_t cols, int size, const std::string& name) {
  if (!dtype_is_block(t) || cols % dtype_block_elems(t) == 0) return;
  throw InputError(name + " is stored as " + std::string(dtype_torch_name(t)) + " in blocks of " +
                   std::to_string(dtype_block_elems(t)) + " columns; --tp " + std::to_string(size) + " would give each rank " +
                   std::to_string(cols) + " columns and cut a block: choose a --tp that leaves whole blocks, or a "
                   "checkpoint that is not quantised");
}

// gpt-oss's fused experts, model.layers.N.mlp.experts.LEAF, the experts leading: the dimension of
// LEAF that holds the experts' width (split with it by --tp), or -1 for the down projection's bias
// (E, H), whole. gate_up_proj (E, H, 2·Ie), gate_up_proj_bias (E, 2·Ie), down_proj (E, Ie, H);
// MXFP4 as Hugging Face stores it: gate_up_proj_blocks (E, 2·Ie, H/32, 16), gate_up_proj_scales
// (E, 2·Ie, H/32), down_proj_blocks (E, H, Ie/32, 16), down_proj_scales (E, H, Ie/32).
int fused_expert_width_dim(const std::string& leaf) {
  if (leaf == "gate_up_proj") return 2;
  if (leaf == "down_proj_bias") return -1;
  if (leaf.starts_with("gate_up_proj") || leaf == "down_proj") return 1;
  return 2;  // down_proj_blocks, down_proj_scales
}

// LEAF of a gpt-oss fused expert tensor "….mlp.experts.LEAF", or "" for any other name.
std::string fused_expert_leaf(const ModelConfig& c, const std::string& name) {
  const std::string_view marker = ".mlp.experts.";
  const std::size_t at = name.find(marker);
  if (c.arch != Arch::kGptOss || at == std::string::npos) return "";
  return name.substr(at + marker.size());
}

// Columns [first, first + count) of each of the rows of `v` (rows × width), copied into `store`.
VectorView vector_columns(VectorView v, std::int64_t width, std::int64_t first, std::int64_t count,
                          std::vector<std::vector<float>>& store) {
  const std::int64_t rows = v.size / width;
  std::vector<float>& out = store.emplace_back(static_cast<std::size_t>(rows * count));
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(v.data + r * width + first, count, out.data() + r * count);
  return VectorView{out.data(), rows * count};  // moving `store`'s vectors keeps their buffers
}

}  // namespace

std::vector<int> working_tp_sizes(const ModelConfig& c, bool whole_experts) {
  std::vector<int> out;
  for (int n = 1; n <= c.num_heads; ++n) {
    if (splits(c, n, whole_experts)) out.push_back(n);
  }
  return out;
}

ModelConfig shard_config(const ModelConfig& c, int size, bool whole_experts) {
  if (whole_experts && size > 1 && !c.is_moe()) {
    throw InputError("--ep " + std::to_string(size) + ": this model (" + std::string(arch_name(c.arch)) +
                     ") has no experts to spread over the ranks; --tp " + std::to_string(size) + " splits a dense model");
  }
  if (c.arch == Arch::kGptOss && c.moe.split_experts && size > 1) {
    throw InputError(std::string(whole_experts ? "--ep " : "--tp ") + std::to_string(size) +
                     ": gpt-oss read from GGUF (its experts one by one, their biases split) does not split over ranks yet; "
                     "run the Hugging Face checkpoint, which does, or this file on one device");
  }
  if (!splits(c, size, whole_experts)) {
    std::string works;
    for (int n : working_tp_sizes(c, whole_experts)) works += (works.empty() ? "" : ", ") + std::to_string(n);
    if (whole_experts) {
      throw InputError("--ep " + std::to_string(size) + " cannot spread this model over " + std::to_string(size) +
                       " ranks: its " + std::to_string(c.moe.num_experts) + " experts a layer must divide evenly (each rank "
                       "holds whole experts), and, as for --tp, its " + std::to_string(c.num_heads) + " attention heads, " +
                       std::to_string(c.num_kv_heads) + " kv heads and intermediate size " + std::to_string(c.intermediate_size) +
                       " too (kv heads may instead be replicated when --ep is a multiple of them); --ep " + works + " work");
    }
    throw InputError("--tp " + std::to_string(size) + " cannot split this model: its " + std::to_string(c.num_heads) +
                     " attention heads, " + std::to_string(c.num_kv_heads) + " kv heads and intermediate size " +
                     std::to_string(c.intermediate_size) +
                     (c.is_moe() ? " (experts' " + std::to_string(c.moe.expert_intermediate_size) + ")" : std::string()) +
                     " must divide evenly (kv heads may instead be replicated when --tp is a multiple of them); "
                     "--tp " + works + " work");
  }
  ModelConfig s = c;
  s.num_heads = c.num_heads / size;
  s.num_kv_heads = c.num_kv_heads % size == 0 ? c.num_kv_heads / size : 1;
  s.intermediate_size = c.intermediate_size / size;
  if (!whole_experts) s.moe.expert_intermediate_size = c.moe.expert_intermediate_size / size;
  return s;
}

ExpertRange local_experts(const ModelConfig& c, TensorSplit s) {
  if (!s.whole_experts) return {0, c.moe.num_experts};
  const std::int64_t per_rank = c.moe.num_experts / s.size;
  return {s.rank * per_rank, per_rank};
}

std::int64_t shard_first_kv_head(const ModelConfig& c, TensorSplit s) {
  if (c.num_kv_heads % s.size == 0) return s.rank * (c.num_kv_heads / s.size);
  return s.rank / (s.size / c.num_kv_heads);  // replicated: the kv head of this rank's query heads
}

std::int64_t shard_vocab_width(std::int64_t vocab, int size) { return (vocab + size - 1) / size; }

VocabRows shard_vocab_rows(std::int64_t vocab, TensorSplit s) {
  const std::int64_t w = shard_vocab_width(vocab, s.size);
  const std::int64_t first = std::min(vocab, w * s.rank);
  return VocabRows{first, std::min(vocab, first + w) - first};
}

ModuleTree shard_module_tree(const ModuleTree& full, TensorSplit s) {
  const ModelConfig sc = shard_config(full.config(), s.size, s.whole_experts);
  const std::int64_t Q = sc.q_dim(), KV = sc.kv_dim();
  const MoeNames moe = moe_names(sc.arch);
  const ExpertRange mine = local_experts(sc, s);
  std::vector<ParamInfo> params;
  for (ParamInfo p : full.params()) {
    const std::string& n = p.name;
    if (const std::string leaf = fused_expert_leaf(sc, n); !leaf.empty()) {
      // gpt-oss: each fused tensor holds every expert. --ep: the rank's experts whole (the
      // biases whole too: E·(2·Ie + H) floats a layer, each rank reading its experts' rows);
      // --tp: every expert's width split, the down projection's bias whole.
      const int d = fused_expert_width_dim(leaf);
      if (s.whole_experts) {
        if (!leaf.ends_with("_bias")) p.shape[0] = mine.count;
      } else if (d >= 0) {
        if (p.shape[static_cast<std::size_t>(d)] % s.size != 0) {
          throw InputError(n + " holds the experts' width in " + std::to_string(p.shape[static_cast<std::size_t>(d)]) +
                           " blocks of 32; --tp " + std::to_string(s.size) + " would cut a block: choose a --tp that "
                           "divides them, or a checkpoint that is not quantised");
        }
        p.shape[static_cast<std::size_t>(d)] /= s.size;
      }
      params.push_back(std::move(p));
      continue;
    }
    const std::int64_t e = sc.is_moe() ? expert_index(n, moe) : -1;
    if (e >= 0 && s.whole_experts) {  // this rank's experts whole; another rank's not here
      if (mine.holds(e)) params.push_back(std::move(p));
      continue;
    }
    // An expert's MLP splits as the dense one does, at the expert's width.
    const bool expert = e >= 0;
    const std::int64_t I = expert ? sc.moe.expert_intermediate_size : sc.intermediate_size;
    const bool gate_or_up = n.ends_with(".gate_proj.weight") || n.ends_with(".up_proj.weight") ||
                            (expert && (n.ends_with(std::string(".") + moe.gate + ".weight") || n.ends_with(std::string(".") + moe.up + ".weight")));
    const bool down = n.ends_with(".down_proj.weight") || (expert && n.ends_with(std::string(".") + moe.down + ".weight"));
    if (n.ends_with(".self_attn.qkv_proj.weight")) {  // Phi-3: the rank's q, k and v rows (three views)
      p.shape[0] = Q + 2 * KV;
    } else if (n.ends_with(".mlp.gate_up_proj.weight")) {  // Phi-3: the rank's gate and up rows (two views)
      p.shape[0] = 2 * I;
    } else if (n.ends_with(".q_proj.weight") || n.ends_with(".q_proj.bias")) {
      p.shape[0] = Q;
    } else if (n.ends_with(".self_attn.sinks")) {  // one per query head
      p.shape[0] = sc.num_heads;
    } else if (n.ends_with(".k_proj.weight") || n.ends_with(".k_proj.bias") || n.ends_with(".v_proj.weight") ||
               n.ends_with(".v_proj.bias")) {
      p.shape[0] = KV;
    } else if (gate_or_up || (!expert && n.ends_with(".up_proj.bias"))) {  // GPT-2's c_fc bias with its columns
      p.shape[0] = I;
    } else if (n.ends_with(".o_proj.weight")) {
      p.shape[1] = Q;
      if (p.dtype) check_block_columns(*p.dtype, Q, s.size, n);
    } else if (down) {
      p.shape[1] = I;
      if (p.dtype) check_block_columns(*p.dtype, I, s.size, n);
    } else if (n == "lm_head.weight") {
      p.shape[0] = shard_vocab_rows(p.shape[0], s).count;
      p.tied_to.reset();  // the rank's rows, placed where the head computes
    }
    params.push_back(std::move(p));
  }
  return ModuleTree::from_params(sc, std::move(params));
}

struct ModelShard::Aligned {
  explicit Aligned(std::size_t bytes) : data(static_cast<std::uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64))) {
    if (data == nullptr) throw RuntimeError("out of memory copying a tensor-parallel shard (" + std::to_string(bytes) + " bytes)");
  }
  ~Aligned() { std::free(data); }
  std::uint8_t* data;
};

ModelShard::~ModelShard() = default;

ModelShard::ModelShard(const LlamaFamilyModel& full, TensorSplit s) : split_(s) {
  const ModelConfig& fc = full.config();
  const ModelConfig sc = shard_config(fc, s.size, s.whole_experts);
  const std::int64_t Q = sc.q_dim(), KV = sc.kv_dim(), I = sc.intermediate_size;
  const std::int64_t kv0 = shard_first_kv_head(fc, s) * fc.head_dim;
  // Columns [first, first + count) of every row, copied; the product becomes a partial sum.
  auto columns = [this, &s](const WeightMatrix& m, std::int64_t first, std::int64_t count, const char* what) {
    check_block_columns(m.dtype, count, s.size, what);
    WeightMatrix out = m;
    out.cols = count;
    out.partial_sum = true;
    const std::int64_t skip = dtype_row_bytes(m.dtype, first), row = out.row_bytes();
    owned_.push_back(std::make_unique<Aligned>(static_cast<std::size_t>(row * m.rows)));
    std::uint8_t* dst = owned_.back()->data;
    for (std::int64_t r = 0; r < m.rows; ++r) {
      std::memcpy(dst + r * row, static_cast<const std::uint8_t*>(m.row(r)) + skip, static_cast<std::size_t>(row));
    }
    out.data = dst;
    return out;
  };
  // GPT-2's (in, out) weights read in place (WeightMatrix::in_out). Column-parallel: the output
  // columns of `ranges` (first, count), copied side by side into an owned (cols, Σ count) matrix
  // (a column slice of the stored rows is strided; the copy keeps the shard compact on a device).
  auto in_out_columns = [this](const WeightMatrix& m, std::initializer_list<std::pair<std::int64_t, std::int64_t>> ranges) {
    std::int64_t width = 0;
    for (const auto& r : ranges) width += r.second;
    const std::size_t es = dtype_size(m.dtype);
    owned_.push_back(std::make_unique<Aligned>(static_cast<std::size_t>(m.cols * width) * es));
    std::uint8_t* dst = owned_.back()->data;
    const auto* src = static_cast<const std::uint8_t*>(m.data);
    for (std::int64_t c = 0; c < m.cols; ++c) {
      std::int64_t at = 0;
      for (const auto& [first, count] : ranges) {
        std::memcpy(dst + static_cast<std::size_t>(c * width + at) * es, src + static_cast<std::size_t>(c * m.in_out_ld + first) * es,
                    static_cast<std::size_t>(count) * es);
        at += count;
      }
    }
    WeightMatrix out = m;
    out.data = dst;
    out.rows = width;
    out.in_out_ld = width;
    return out;
  };
  // Row-parallel: inputs [first, first + count) are whole stored rows, viewed in place; the
  // product becomes a partial sum.
  auto in_out_inputs = [](const WeightMatrix& m, std::int64_t first, std::int64_t count) {
    WeightMatrix out = m;
    out.data = static_cast<const std::uint8_t*>(m.data) + static_cast<std::size_t>(first * m.in_out_ld) * dtype_size(m.dtype);
    out.cols = count;
    out.partial_sum = true;
    return out;
  };
  ModelWeights w;
  w.embed = full.embedding();
  w.positions = full.position_embedding();  // GPT-2: replicated, as the embedding
  const VocabRows vr = shard_vocab_rows(full.lm_head().rows, s);
  w.lm_head = row_slice(full.lm_head(), vr.first, vr.count);
  w.final_norm = full.final_norm();
  // gpt-oss under --tp: what ranks other than 0 add in place of the experts' down bias (E, H).
  const float* zeros = nullptr;
  if (fc.moe.biases && !s.whole_experts && s.rank != 0) {
    zeros = vectors_.emplace_back(static_cast<std::size_t>(fc.moe.num_experts * fc.hidden_size), 0.0f).data();
  }
  for (int l = 0; l < fc.num_layers; ++l) {
    const LayerWeights& f = full.layer_weights(l);
    LayerWeights o = f;  // norms (and o_bias, added once after the sum; gpt-oss's router bias) whole
    if (f.q.in_out() && f.k.data == nullptr) {
      // GPT-2 read in place: c_attn (H, 3·H) whole in f.q (fuse_in_out_qkv); the rank's heads'
      // q, k and v columns side by side, held fused again as (Q + 2·KV) outputs.
      const std::int64_t fq = fc.q_dim(), fkv = fc.kv_dim();
      o.q = in_out_columns(f.q, {{s.rank * Q, Q}, {fq + kv0, KV}, {fq + fkv + kv0, KV}});
      o.k = WeightMatrix{};
      o.v = WeightMatrix{};
    } else {
      o.q = row_slice(f.q, s.rank * Q, Q);
      o.k = row_slice(f.k, kv0, KV);
      o.v = row_slice(f.v, kv0, KV);
    }
    o.q_bias = vector_slice(f.q_bias, s.rank * Q, Q);
    o.k_bias = vector_slice(f.k_bias, kv0, KV);
    o.v_bias = vector_slice(f.v_bias, kv0, KV);
    o.sinks = vector_slice(f.sinks, s.rank * sc.num_heads, sc.num_heads);  // gpt-oss: with their query heads
    o.o = f.o.in_out() ? in_out_inputs(f.o, s.rank * Q, Q) : columns(f.o, s.rank * Q, Q, "o_proj");
    if (f.experts.empty()) {
      if (f.gate.data != nullptr) o.gate = row_slice(f.gate, s.rank * I, I);  // GPT-2: none
      o.up = f.up.in_out() ? in_out_columns(f.up, {{s.rank * I, I}}) : row_slice(f.up, s.rank * I, I);
      o.up_bias = vector_slice(f.up_bias, s.rank * I, I);  // GPT-2's c_fc bias; down_bias whole, added after the sum
      o.down = f.down.in_out() ? in_out_inputs(f.down, s.rank * I, I) : columns(f.down, s.rank * I, I, "down_proj");
    }
    // Each expert split as the dense MLP, or (whole_experts) this rank's experts whole, their sum
    // a partial one, the others empty; the router whole (every rank routes every token alike).
    const std::int64_t Ie = sc.moe.expert_intermediate_size;
    const ExpertRange mine = local_experts(fc, s);
    for (std::size_t e = 0; e < f.experts.size(); ++e) {
      const ExpertWeights& fe = f.experts[e];
      if (!s.whole_experts) {
        o.experts[e] = {row_slice(fe.gate, s.rank * Ie, Ie), row_slice(fe.up, s.rank * Ie, Ie),
                        columns(fe.down, s.rank * Ie, Ie, "an expert's down projection")};
      } else if (mine.holds(static_cast<std::int64_t>(e))) {
        o.experts[e] = fe;
        o.experts[e].down.partial_sum = true;
      } else {
        o.experts[e] = ExpertWeights{};
      }
    }
    if (!s.whole_experts && !f.expert_gate_bias.empty()) {
      // gpt-oss: the gate and up biases (E, Ie) split with each expert's width; the down
      // projection's bias (E, H) is added once per token and expert, by rank 0 — the others add
      // zeros, so their partial sums stay exact and the group's sum holds the bias once. (--ep:
      // all whole, each rank adding its own experts' down biases.)
      const std::int64_t Ie_full = fc.moe.expert_intermediate_size;
      o.expert_gate_bias = vector_columns(f.expert_gate_bias, Ie_full, s.rank * Ie, Ie, vectors_);
      o.expert_up_bias = vector_columns(f.expert_up_bias, Ie_full, s.rank * Ie, Ie, vectors_);
      if (s.rank != 0) o.expert_down_bias = VectorView{zeros, f.expert_down_bias.size};
    }
    w.layers.push_back(o);
  }
  model_ = std::make_unique<LlamaFamilyModel>(sc, std::move(w));
}

}  // namespace plexus
