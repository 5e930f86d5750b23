// The trial step of `--micro-batch auto`: one forward/backward of a micro-batch on this process's
// CPU, measuring how much memory it really added (the process's peak RSS), so that a micro-batch
// the estimate accepts is confirmed before training starts.
#pragma once
#include <cstdint>
#include <span>

#include "train/llama_train.h"
#include "train/training_memory.h"

namespace plexus {

// Runs forward_backward of the first `micro_batch` sequences of `tokens` (≥ micro_batch, T) with
// the weights `params` (layout.total(), held by the caller) into fresh gradients and activations
// (checkpointed when `checkpoint_activations`), and returns the device bytes it stands for: the
// weights, optimizer state and checkpoint copy the estimate says (`estimate` of this micro-batch;
// the weights are resident already, the rest comes later) plus the peak RSS above `baseline_rss`
// (the RSS before the first trial: what the kernels keep between trials, their thread-local
// scratch, stays counted; -1: the RSS now).
std::int64_t measure_trial_step(const LlamaTrainModel& model, TrainOps& ops, std::span<float> params,
                                std::span<const std::int32_t> tokens, std::int64_t T, std::int64_t micro_batch,
                                bool checkpoint_activations, const TrainingMemory& estimate,
                                std::int64_t baseline_rss = -1);

}  // namespace plexus
