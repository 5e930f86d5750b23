// The memory a training run holds on each device (weights, gradients, AdamW moments, the
// micro-batch's activations, thread scratch) and in the process around it (the checkpoint mapped
// while it is upcast, the data's tokens): what `plexus estimate --training` reports and what
// `plexus train --micro-batch auto` sizes the micro-batch with.
#pragma once
#include <cstdint>
#include <string>

#include "core/json.h"
#include "model/config.h"

namespace plexus {

struct TrainingShape {
  std::int64_t micro_batch = 1;  // sequences per forward/backward on one device
  std::int64_t seq_len = 256;    // T
  int replicas = 1;              // data-parallel ranks (devices)
  bool zero1 = false;            // the AdamW moments sharded across the replicas
  int threads = 1;               // compute threads of one device (thread scratch)
  bool checkpoint_activations = false;  // --checkpoint-activations: layer inputs + one layer's activations
};

// Bytes on one device (one replica), every f32.
struct TrainingMemory {
  std::int64_t parameters = 0;   // the model's parameter count
  std::int64_t weights = 0;      // the flat f32 weights (ParamLayout::total padded to R equal shards)
  std::int64_t gradients = 0;    // the same length
  std::int64_t optimizer = 0;    // AdamW's two moments; under ZeRO-1 this replica's shard of each
                                 // and the shard's all-gather input
  std::int64_t activations = 0;  // TrainActivations::bytes_for(config, micro_batch, T, checkpoint_activations)
  // Both ways, whichever applies: every layer's activations kept, or (checkpointing) the layer
  // inputs and one layer's; `activations` is one of them.
  std::int64_t activations_kept = 0, activations_checkpointed = 0;
  std::int64_t scratch = 0;      // the kernels' scratch (CpuTrainOps), the micro-batch's token buffers
  std::int64_t checkpoint = 0;   // the whole AdamW state gathered while a checkpoint is written
                                 // (every replica gathers it; the end of a run writes one)
  std::int64_t device_total() const { return weights + gradients + optimizer + activations + scratch + checkpoint; }
  // device_total with the activations of one way or the other.
  std::int64_t device_total_if(bool checkpointed) const {
    return device_total() - activations + (checkpointed ? activations_checkpointed : activations_kept);
  }
};

TrainingMemory training_memory(const ModelConfig& config, const TrainingShape& shape);

// What the whole process of `in_process_replicas` replicas holds at its peak, beyond the binary
// itself: every replica's device_total; the starting weights the run keeps for the replicas to
// copy (train/train_run's PreparedRun, 4 bytes per element for the whole run, and a resumed
// checkpoint's AdamW state, 8 more); the all-reduce scratch the replica group shares (the largest
// gradient bucket, when replicas > 1); the data's tokens (`data_bytes`); and while the weights
// load, the checkpoint's mapping (`checkpoint_bytes`: the tensor bytes of the safetensors files,
// all touched while upcasting) next to the f32 copy being filled.
struct ProcessMemory {
  std::int64_t devices = 0;      // Σ device_total over the in-process replicas
  std::int64_t start = 0;        // the run's starting weights (and resumed optimizer state)
  std::int64_t group_scratch = 0;
  std::int64_t data = 0;
  std::int64_t load_peak = 0;    // checkpoint mapping + the f32 weights being filled
  std::int64_t total() const;    // the peak: max(devices + start + group_scratch, load_peak) + data
};
ProcessMemory process_memory(const ModelConfig& config, const TrainingShape& shape, int in_process_replicas,
                             std::int64_t checkpoint_bytes, std::int64_t data_bytes = 0, bool resumed = false);

// `plexus estimate --training`: the per-device table and its JSON.
std::string training_memory_table(const TrainingMemory& m, const TrainingShape& shape, std::int64_t global_batch);
Json training_memory_json(const TrainingMemory& m, const TrainingShape& shape, std::int64_t global_batch);

}  // namespace plexus
