// How tensor parallelism splits a Llama-family model over `size` ranks (Megatron style): q, k and
// v by heads with each GQA group kept whole (kv heads split when size divides them, one
// replicated per rank when size is a multiple of them), o_proj by its input columns (each rank's
// product a partial sum), gate and up by rows, down by its input columns, lm_head by vocabulary
// rows; the embedding and the norms whole on every rank. The architecture code is unchanged: a
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
};

// The geometry one rank computes with: num_heads / size query heads, num_kv_heads / size kv heads
// (or 1 when size is a multiple of num_kv_heads), intermediate_size / size. InputError naming the
// head counts and the sizes that work when `size` cannot split the model.
ModelConfig shard_config(const ModelConfig& config, int size);
// The tensor-parallel sizes (1 up to num_heads) that can split the model.
std::vector<int> working_tp_sizes(const ModelConfig& config);
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

// The parameters one rank holds, with its shards' shapes (lm_head untied: its vocabulary rows).
// InputError when a column-split projection stored in a block format would cut a block.
ModuleTree shard_module_tree(const ModuleTree& full, TensorSplit s);

// The weights one rank computes with: row slices (q, k, v, gate, up, lm_head, their biases) are
// views of the full model's weights; o_proj and down_proj column slices are copies it owns,
// marked partial_sum. The full model must outlive the shard.
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
  std::unique_ptr<LlamaFamilyModel> model_;
};

}  // namespace plexus
