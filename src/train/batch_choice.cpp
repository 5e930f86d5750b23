// --micro-batch auto and --parallel auto: the micro-batch from the memory estimate and a trial
// step, the accumulation that reaches the global batch, replicas or stages.
#include "train/batch_choice.h"

#include <algorithm>

#include "core/error.h"
#include "core/units.h"

namespace plexus {

BatchLayout fixed_batch_layout(std::int64_t global_batch, int replicas, std::int64_t micro_batch,
                               const std::string& ranks_word) {
  BatchLayout b;
  b.global_batch = global_batch;
  b.replicas = replicas;
  if (global_batch % replicas != 0) {
    throw InputError("--global-batch " + std::to_string(global_batch) + " is not divisible by the " +
                     std::to_string(replicas) + " " + ranks_word + ": give a multiple of " + std::to_string(replicas));
  }
  const std::int64_t per_replica = global_batch / replicas;
  b.micro_batch = micro_batch > 0 ? micro_batch : per_replica;
  if (per_replica % b.micro_batch != 0) {
    throw InputError("--global-batch " + std::to_string(global_batch) + " over " + std::to_string(replicas) + " " +
                     ranks_word + " is " + std::to_string(per_replica) +
                     " sequences per replica, not divisible by --micro-batch " + std::to_string(b.micro_batch) +
                     ": G must be a multiple of R·M");
  }
  b.accumulation = per_replica / b.micro_batch;
  b.why = "--global-batch " + std::to_string(global_batch) + " = " + std::to_string(replicas) + " " + ranks_word + " × " +
          std::to_string(b.accumulation) + " micro-batches × " + std::to_string(b.micro_batch) + " sequences";
  return b;
}

namespace {

std::string gib(std::int64_t bytes) { return format_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(bytes, 0))); }

}  // namespace

ParallelMode parse_parallel_mode(const std::string& text) {
  if (text == "auto") return ParallelMode::kAuto;
  if (text == "replicas") return ParallelMode::kReplicas;
  if (text == "stages") return ParallelMode::kStages;
  throw InputError("--parallel " + text + ": use auto, replicas or stages");
}

std::int64_t largest_fitting_micro_batch(const ModelConfig& config, TrainingShape shape, std::int64_t budget,
                                         std::int64_t limit) {
  auto fits = [&](std::int64_t m) {
    shape.micro_batch = m;
    return training_memory(config, shape).device_total() <= budget;
  };
  if (limit < 1 || !fits(1)) return 0;
  // The total grows with m: double to a bound, then bisect.
  std::int64_t lo = 1, hi = 2;
  while (hi <= limit && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  hi = std::min(hi, limit + 1);  // fits(lo), !fits(hi) or hi beyond the limit
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

AutoBatchChoice choose_auto_batch(const ModelConfig& config, const AutoBatchRequest& req, const TrialStep& trial) {
  const int replicas = std::max(req.replicas, 1);
  if (req.global_batch > 0 && req.global_batch % replicas != 0) {
    throw InputError("--global-batch " + std::to_string(req.global_batch) + " is not a multiple of the " +
                     std::to_string(replicas) + " replicas: give a multiple of " + std::to_string(replicas));
  }
  const std::int64_t share = req.global_batch > 0 ? req.global_batch / replicas : 0;
  TrainingShape shape{1, req.seq_len, replicas, req.zero1, req.threads, req.checkpoint_activations};
  // No micro-batch beyond the replica's share (with G), or than the data holds (without it).
  const std::int64_t limit = share > 0 ? share : req.max_micro_batch > 0 ? req.max_micro_batch : std::int64_t{1} << 20;
  // The largest divisor of the share not above m (m itself without a global batch; 0 stays 0).
  auto fit_share = [&](std::int64_t m) {
    if (share == 0 || m == 0) return m;
    while (share % m != 0) --m;
    return m;
  };
  AutoBatchChoice c;
  c.largest_fit = largest_fitting_micro_batch(config, shape, req.budget, limit);
  std::int64_t without = -1;  // the micro-batch without checkpointing, when auto turned it on
  if (!req.checkpoint_activations) {
    TrainingShape checkpointed = shape;
    checkpointed.checkpoint_activations = true;
    const std::int64_t fit = largest_fitting_micro_batch(config, checkpointed, req.budget, limit);
    if (fit_share(fit) > fit_share(c.largest_fit)) {
      without = fit_share(c.largest_fit);
      c.largest_fit = fit;
      shape = checkpointed;
    }
  }
  if (c.largest_fit == 0) {
    shape.micro_batch = 1;
    shape.checkpoint_activations = true;  // the least one sequence needs
    const TrainingMemory one = training_memory(config, shape);
    throw InputError("--micro-batch auto: one sequence of " + std::to_string(req.seq_len) + " tokens needs " +
                     gib(one.device_total()) + " per device with activation checkpointing (weights " +
                     gib(one.weights) + ", gradients " + gib(one.gradients) + ", optimizer " + gib(one.optimizer) +
                     ", activations " + gib(one.activations) + ") but the " + req.budget_source + " allows " +
                     gib(req.budget) + ": lower --seq-len, add replicas with --zero 1, or raise the budget");
  }
  std::int64_t m = fit_share(c.largest_fit);
  if (trial) {
    for (;;) {
      ++c.trials;
      c.measured = trial(m, shape.checkpoint_activations);
      if (c.measured <= req.budget || m == 1) break;
      // Shrink in proportion to the excess, by one at least.
      const double ratio = static_cast<double>(req.budget) / static_cast<double>(c.measured);
      m = fit_share(std::clamp<std::int64_t>(static_cast<std::int64_t>(static_cast<double>(m) * ratio), 1, m - 1));
    }
    if (c.measured > req.budget) {
      throw InputError("--micro-batch auto: a trial step of one sequence of " + std::to_string(req.seq_len) +
                       " tokens used " + gib(c.measured) + " but the " + req.budget_source + " allows " +
                       gib(req.budget) + ": lower --seq-len or raise the budget");
    }
  }
  shape.micro_batch = m;
  c.estimate = training_memory(config, shape);
  BatchLayout& b = c.batch;
  b.micro_batch = m;
  b.replicas = replicas;
  b.checkpoint_activations = shape.checkpoint_activations;
  b.global_batch = share > 0 ? req.global_batch : m * replicas;
  b.accumulation = b.global_batch / (m * replicas);
  b.why = "--micro-batch auto: micro-batch " + std::to_string(m) + " (estimate " + gib(c.estimate.device_total()) +
          " per device of the " + req.budget_source + "'s " + gib(req.budget) + "; largest by the estimate " +
          std::to_string(c.largest_fit) + ")";
  if (c.trials > 0) b.why += ", trial step measured " + gib(c.measured);
  if (req.checkpoint_activations) {
    b.why += ", with --checkpoint-activations";
  } else if (without >= 0) {
    b.why += ", activation checkpointing turned on (without it " +
             (without > 0 ? "micro-batch " + std::to_string(without) : std::string("not one sequence")) + " fits)";
  }
  b.why += ", " + std::to_string(b.accumulation) + " accumulation step" + (b.accumulation == 1 ? "" : "s") + " x " +
           std::to_string(replicas) + (replicas == 1 ? " replica" : " replicas") + " = global batch " +
           std::to_string(b.global_batch);
  return c;
}

ParallelMode choose_parallel(ParallelMode asked, std::int64_t need_one, std::int64_t budget,
                             const std::string& budget_source) {
  const std::string numbers = "the training state of one sequence needs " + gib(need_one) + " per device, the " +
                              budget_source + " allows " + gib(budget);
  switch (asked) {
    case ParallelMode::kReplicas:
      return ParallelMode::kReplicas;
    case ParallelMode::kAuto:
      if (need_one <= budget) return ParallelMode::kReplicas;
      throw InputError("--parallel auto chose layer stages (" + numbers +
                       "), but pipeline training of layer stages is not built yet: raise the budget, use --zero 1 "
                       "with more replicas, or lower --seq-len");
    case ParallelMode::kStages:
      throw InputError("--parallel stages: pipeline training of layer stages is not built yet (" + numbers +
                       "): use --parallel replicas");
  }
  return ParallelMode::kReplicas;
}

}  // namespace plexus
