// Checkpoints of a training run: OUT/checkpoints/step-NNNNNN/ holds the weights
// (model.safetensors, F32, HF names, and config.json: a model every command loads), the AdamW moments (exp_avg.safetensors: exp_avg.NAME,
// exp_avg_sq.safetensors: exp_avg_sq.NAME) and state.json (step, data position, skipped-step counters, the options the
// bits depend on, the model fingerprint, the RNG state). Each is written into a temporary
// directory, fsynced and renamed into place, so a step-* directory is always complete; the newest
// two are kept.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "model/config.h"
#include "train/param_layout.h"
#include "train/replica_trainer.h"
#include "train/train_data.h"
#include "train/train_options.h"

namespace plexus {

inline constexpr int kCheckpointsKept = 2;

// What a checkpoint records beside the tensors.
struct TrainProgress {
  std::int64_t step = 0;                 // optimizer steps done (skipped ones included)
  std::int64_t skipped_total = 0;        // steps skipped (a non-finite gradient norm or update)
  std::int64_t skipped_consecutive = 0;  // skipped in a row up to `step`
};

// The options a run's bits depend on (a resumed run must repeat them): the batch and its layout
// over replicas and micro-batches, the sequence length, the optimizer, ZeRO-1, the precision
// ("f32" | "bf16"; a checkpoint without it is f32's) and the data file.
Json run_fingerprint(const TrainOptions& options, const TrainData& data);

// OUT/checkpoints/step-NNNNNN.
std::string checkpoint_dir(const std::string& out, std::int64_t step);

// Writes the checkpoint of `progress.step` and removes all but the newest kCheckpointsKept.
// `config` is the model's config.json (train_output.h: trained_config_json); the tokenizer files of
// `model_dir` go in too, so that a checkpoint is a model every command loads. `between_files`
// (tests: the kill hook) runs after each file is written, before the rename.
void write_checkpoint(const std::string& out, const TrainProgress& progress, const Json& model_fingerprint,
                      const Json& run_fingerprint, const ParamLayout& layout, std::span<const float> params,
                      const OptimizerState& state, const Json& config, const std::string& model_dir,
                      const std::function<void()>& between_files = {});

struct LoadedCheckpoint {
  std::string path;
  TrainProgress progress;
  std::vector<float> params;  // (layout.total())
  OptimizerState state;
};

// The newest complete checkpoint under OUT/checkpoints, checked against this run: InputError
// naming the path when there is none, when it is of another model, or when an option the bits
// depend on differs (naming the option and both values).
LoadedCheckpoint load_newest_checkpoint(const std::string& out, const Json& model_fingerprint,
                                        const Json& run_fingerprint, const ParamLayout& layout);

}  // namespace plexus
