// How `plexus train` lays out its batch when asked to choose: `--micro-batch auto` takes the
// largest micro-batch whose training memory (train/training_memory) fits every device's budget,
// confirmed by a trial step, and reaches the global batch with gradient accumulation;
// `--parallel auto` trains data-parallel replicas when one device holds the whole training state,
// and would split the layers into pipeline stages otherwise (not built yet: InputError).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "model/config.h"
#include "train/train_options.h"
#include "train/training_memory.h"

namespace plexus {

// A given batch: --global-batch G over `replicas` ranks (named `ranks_word` in errors: "replicas",
// "mpirun ranks") in micro-batches of M (0: G / replicas, no accumulation). InputError naming the
// numbers when G is not a multiple of the ranks or G / ranks of M.
BatchLayout fixed_batch_layout(std::int64_t global_batch, int replicas, std::int64_t micro_batch,
                               const std::string& ranks_word = "replicas");

enum class ParallelMode { kAuto, kReplicas, kStages };
// "auto" | "replicas" | "stages"; InputError naming --parallel and the choices otherwise.
ParallelMode parse_parallel_mode(const std::string& text);

// The largest micro-batch in [1, limit] whose device_total fits `budget` bytes (shape's other
// fields as given); 0 when not even one sequence fits.
std::int64_t largest_fitting_micro_batch(const ModelConfig& config, TrainingShape shape, std::int64_t budget,
                                         std::int64_t limit);

// What a trial step of `micro_batch` sequences (with activation checkpointing or not) really used
// on one device, in bytes (the same quantity as TrainingMemory::device_total): run by the
// command, a function here so that the choice is tested without training.
using TrialStep = std::function<std::int64_t(std::int64_t micro_batch, bool checkpoint_activations)>;

struct AutoBatchRequest {
  std::int64_t global_batch = 0;  // --global-batch G; 0: replicas × the chosen micro-batch
  std::int64_t seq_len = 0;
  std::int64_t max_micro_batch = 0;  // without G, no micro-batch beyond this (the data's sequences per replica); 0: none
  int replicas = 1;
  bool zero1 = false;
  int threads = 1;
  std::int64_t budget = 0;        // bytes each device may hold (the smallest device's budget)
  std::string budget_source;      // "--max-memory", "virtual device", "host available memory"
  bool checkpoint_activations = false;  // --checkpoint-activations given: always; else chosen (below)
};

struct AutoBatchChoice {
  BatchLayout batch;              // why: the sentence the command prints on stderr; checkpoint_activations
  TrainingMemory estimate;        // of the chosen micro-batch
  std::int64_t largest_fit = 0;   // the estimate's largest micro-batch, before the trial and G
  std::int64_t measured = 0;      // the trial step's bytes (0: no trial)
  int trials = 0;
};

// The largest micro-batch m that fits req.budget by the estimate — with activation checkpointing
// when req asks for it, or when checkpointing lets a larger m fit than without (after the global
// batch's divisor below; said in batch.why) — then confirmed by `trial`
// (may be empty: no trial): while its measured bytes exceed the budget, m shrinks in proportion
// (at least by one) and is tried again. With a global batch, each replica's share G / R must be a
// whole number (InputError otherwise) and m is lowered to the largest divisor of it, the
// accumulation G / (R·m). InputError with the numbers when one sequence does not fit.
AutoBatchChoice choose_auto_batch(const ModelConfig& config, const AutoBatchRequest& req, const TrialStep& trial);

// --parallel: kReplicas when one device holds the training state of one sequence
// (`need_one` = training_memory(micro_batch 1).device_total ≤ budget) or when asked for;
// InputError "pipeline training of layer stages is not built yet" with the numbers otherwise
// (asked for stages, or auto and it does not fit).
ParallelMode choose_parallel(ParallelMode asked, std::int64_t need_one, std::int64_t budget,
                             const std::string& budget_source);

}  // namespace plexus
