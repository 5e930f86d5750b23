// One measured forward/backward: peak RSS before and after, the trial's buffers freed at the end.
#include "train/batch_trial.h"

#include <cassert>
#include <vector>

#include "train/process_rss.h"

namespace plexus {

std::int64_t measure_trial_step(const LlamaTrainModel& model, TrainOps& ops, std::span<float> params,
                                std::span<const std::int32_t> tokens, std::int64_t T, std::int64_t micro_batch,
                                bool checkpoint_activations, const TrainingMemory& estimate,
                                std::int64_t baseline_rss) {
  assert(static_cast<std::int64_t>(tokens.size()) >= micro_batch * T);
  const bool reset = reset_peak_rss();
  const std::int64_t before = baseline_rss >= 0 ? baseline_rss : current_rss_bytes();
  {
    std::vector<float> grads(static_cast<std::size_t>(model.layout().total()), 0.0f);
    TrainActivations acts(model.config(), micro_batch, T, checkpoint_activations);
    const ModelTensors w = view_tensors(model.config(), model.layout(), params.data());
    const ModelTensors g = view_tensors(model.config(), model.layout(), grads.data());
    const MicroBatch mb{tokens.first(static_cast<std::size_t>(micro_batch * T)), micro_batch, T};
    model.forward_backward(ops, w, g, mb, 1.0f, acts);
  }
  const std::int64_t peak = peak_rss_bytes();
  if (!reset || before < 0 || peak < 0) return estimate.device_total();
  return estimate.weights + estimate.optimizer + estimate.checkpoint + (peak - before);
}

}  // namespace plexus
