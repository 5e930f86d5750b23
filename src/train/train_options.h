// What `plexus train` is asked to do: the optimizer's hyper-parameters, the batch and its layout
// over replicas, checkpoints and safety limits. Plain values, filled from the command line by
// cli/cmd_train and read by the trainer (train/trainer).
#pragma once
#include <cstdint>
#include <string>

#include "train/train_precision.h"

namespace plexus {

// torch.optim.AdamW's hyper-parameters (constant learning rate) and clip_grad_norm_'s max_norm
// (0: no clipping; the norm is still computed and reported).
struct OptimizerOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double max_grad_norm = 1.0;
};

// How a step's global batch is computed: `replicas` ranks each run `accumulation` micro-batches
// of `micro_batch` sequences, global_batch = replicas · accumulation · micro_batch.
struct BatchLayout {
  std::int64_t global_batch = 0;
  std::int64_t micro_batch = 0;
  std::int64_t accumulation = 1;
  int replicas = 1;
  // --checkpoint-activations (or chosen by --micro-batch auto): each micro-batch's forward keeps
  // only the layer inputs and the backward recomputes each layer's forward; the same bits, less memory.
  bool checkpoint_activations = false;
  std::string why;  // how it was chosen, for the run's report ("--global-batch 8 over 2 replicas")
};

struct TrainOptions {
  std::string model;  // MODEL directory
  std::string data;   // FILE.jsonl
  std::string out;    // --out DIR
  std::int64_t steps = 0;
  std::int64_t seq_len = 0;  // --seq-len T; 0: the data's length (every line the same)
  OptimizerOptions optimizer;
  BatchLayout batch;
  bool zero1 = false;                  // --zero 1: the optimizer state sharded across replicas
  std::int64_t checkpoint_every = 0;   // 0: only at the end
  bool resume = false;
  std::int64_t max_skipped = 0;        // consecutive non-finite steps that end the run; 0: never
  TrainPrecision precision = TrainPrecision::kF32;  // --precision
  bool json = false;
};

}  // namespace plexus
