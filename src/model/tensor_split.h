// How tensor parallelism splits a Llama-family model over `size` ranks (Megatron style): q, k and
// v by heads with each GQA group kept whole (kv heads split when size divides them, one
// replicated per rank when size is a multiple of them), gpt-oss's attention sinks with their
// heads, o_proj by its input columns (each rank's product a partial sum), gate and up by rows,
// down by its input columns, lm_head by vocabulary rows; the embedding, the norms and the o_proj
// bias whole on every rank (Phi-3's fused qkv_proj and gate_up_proj: each rank's q, k, v and
// gate, up are row ranges of them, still views). A mixture's experts split as the dense
// MLP, or, with expert parallelism (TensorSplit::whole_experts, --ep), rank r holds experts
// [r·E/size, (r+1)·E/size) whole and none of the others. The architecture code is unchanged: a
// rank runs LlamaFamilyModel with the shard's geometry (shard_config) over the shard's weights.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/config.h"
#include "model/llama_family.h"
#include "model/module_tree.h"

namespace plexus {

struct TensorSplit {
  int rank = 0;
  int size = 1;
  // Expert parallelism (vLLM's, inside the tensor-parallel group): in mixture-of-experts layers
  // this rank holds size's share of the experts whole (local_experts) instead of a 1/size slice
  // of every expert; attention and dense MLPs split as without it.
  bool whole_experts = false;
};

// The geometry one rank computes with: num_heads / size query heads, num_kv_heads / size kv heads
// (or 1 when size is a multiple of num_kv_heads), intermediate_size / size, and the experts'
// width / size (whole_experts: the experts' width whole; the expert count is the router's, E,
// either way). InputError naming the head (and expert) counts and the sizes that work when `size`
// cannot split the model, or when whole_experts is asked of a dense model.
ModelConfig shard_config(const ModelConfig& config, int size, bool whole_experts = false);
// The tensor-parallel sizes (1 up to num_heads) that can split the model (whole_experts: those
// that also divide the expert count, the --ep sizes).
std::vector<int> working_tp_sizes(const ModelConfig& config, bool whole_experts = false);
// The experts [first, first + count) rank s.rank holds whole (s.whole_experts), else all of them.
struct ExpertRange {
  std::int64_t first = 0, count = 0;
  bool holds(std::int64_t e) const { return e >= first && e < first + count; }
};
ExpertRange local_experts(const ModelConfig& config, TensorSplit s);
// The first of the model's kv heads that rank s.rank holds.
std::int64_t shard_first_kv_head(const ModelConfig& config, TensorSplit s);

// The lm_head rows (vocabulary entries) of one rank: ceil(vocab / size) each, the last rank the
// rest. The gathered logits of rank r are columns [first, first + count).
struct VocabRows {
  std::int64_t first = 0, count = 0;
};
VocabRows shard_vocab_rows(std::int64_t vocab, TensorSplit s);
// ceil(vocab / size): the width every rank's logits are gathered at.
std::int64_t shard_vocab_width(std::int64_t vocab, int size);

// The parameters one rank holds, with its shards' shapes (lm_head untied: its vocabulary rows;
// whole_experts: only its local experts, at their full shapes).
// InputError when a column-split projection stored in a block format would cut a block.
ModuleTree shard_module_tree(const ModuleTree& full, TensorSplit s);

// The weights one rank computes with: row slices (q, k, v, gate, up, lm_head, their biases,
// gpt-oss's attention sinks) are views of the full model's weights; o_proj and down_proj column
// slices are copies it owns, marked partial_sum. whole_experts: its local experts are views of
// the full model's, their down projections marked partial_sum (the rank's share of the layer's
// sum), the others empty. gpt-oss's expert biases: gate and up split with the experts' width
// (copies), the down bias on rank 0 and zeros on the others (--tp), or all whole (--ep).
// The full model must outlive the shard.
class ModelShard {
 public:
  ModelShard(const LlamaFamilyModel& full, TensorSplit s);
  ModelShard(const ModelShard&) = delete;
  ModelShard& operator=(const ModelShard&) = delete;
  ~ModelShard();

  TensorSplit split() const { return split_; }
  const LlamaFamilyModel& model() const { return *model_; }

 private:
  struct Aligned;
  TensorSplit split_;
  std::vector<std::unique_ptr<Aligned>> owned_;  // the column slices
  std::vector<std::vector<float>> vectors_;      // gpt-oss: the experts' gate/up bias slices, zeros for the down bias
  std::unique_ptr<LlamaFamilyModel> model_;
};

}  // namespace plexus
