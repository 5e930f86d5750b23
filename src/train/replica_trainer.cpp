// The SPMD training step of one data-parallel rank: micro-batches through the model, the gradient
// buckets all-reduced on a communication thread as the last backward finishes each layer, the
// global loss and norm, clipping, and AdamW over this rank's shard (ZeRO-1) or the whole buffer.
#include "train/replica_trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <optional>

#include "core/error.h"
#include "core/timer.h"
#include "train/adamw.h"
#include "train/bucket_all_reduce.h"
#include "train/grad_clip.h"

namespace plexus {

struct ReplicaTrainer::Impl {
  const LlamaTrainModel& model;
  const ParamLayout& layout;
  OptimizerOptions opt;
  BatchLayout batch;
  bool zero1;
  Collective& comm;
  TrainOps& ops;
  ThreadPool* pool;
  int ranks, rank;
  // Every buffer is padded to ranks · shard elements (the padding stays zero), so that shard r
  // is [r·shard, (r+1)·shard) of each; without ZeRO-1 the optimizer state is the whole buffer.
  std::int64_t total, shard, padded;
  std::vector<float> params, grads;       // (padded)
  std::vector<float> exp_avg, exp_avg_sq;  // (shard) under ZeRO-1, else (padded)
  std::vector<float> gathered;             // (shard) the updated shard, the all-gather's input
  std::int64_t step = 0;
  AdamwBounds bounds;  // of this rank's range of weights and moments: most steps need no overflow check
  ModelTensors w, g;
  std::unique_ptr<TrainActivations> acts;
  std::optional<BucketAllReduce> reducer;  // with more than one rank

  Impl(const LlamaTrainModel& m, std::vector<float> p, const OptimizerOptions& o, const BatchLayout& b, bool z,
       Collective& c, TrainOps& t, ThreadPool* tp)
      : model(m), layout(m.layout()), opt(o), batch(b), zero1(z), comm(c), ops(t), pool(tp), ranks(c.size()),
        rank(c.rank()), total(layout.total()) {
    if (static_cast<std::int64_t>(p.size()) != total)
      throw RuntimeError("ReplicaTrainer: " + std::to_string(p.size()) + " starting weights for a layout of " +
                         std::to_string(total) + " elements");
    if (batch.replicas != ranks || batch.micro_batch < 1 || batch.accumulation < 1 ||
        batch.global_batch != static_cast<std::int64_t>(ranks) * batch.accumulation * batch.micro_batch)
      throw RuntimeError("ReplicaTrainer: batch layout " + std::to_string(batch.global_batch) + " = " +
                         std::to_string(batch.replicas) + " replicas × " + std::to_string(batch.accumulation) +
                         " × " + std::to_string(batch.micro_batch) + " does not fit a group of " +
                         std::to_string(ranks) + " ranks");
    const std::int64_t a = ParamLayout::kParamAlign;
    shard = ((total + ranks - 1) / ranks + a - 1) / a * a;
    padded = shard * ranks;
    params = std::move(p);
    params.resize(static_cast<std::size_t>(padded), 0.0f);
    grads.assign(static_cast<std::size_t>(padded), 0.0f);
    const std::int64_t state = zero1 ? shard : padded;
    exp_avg.assign(static_cast<std::size_t>(state), 0.0f);
    exp_avg_sq.assign(static_cast<std::size_t>(state), 0.0f);
    if (zero1) gathered.assign(static_cast<std::size_t>(shard), 0.0f);
    w = view_tensors(model.config(), layout, params.data());
    g = view_tensors(model.config(), layout, grads.data());
    if (ranks > 1) reducer.emplace(comm);
    refresh_bounds();
  }

  void refresh_bounds() {
    bounds = adamw_bounds(params.data() + state_begin(), exp_avg.data(), exp_avg_sq.data(), state_count(), pool);
  }

  // The buffer range this rank's optimizer state covers.
  std::int64_t state_begin() const { return zero1 ? rank * shard : 0; }
  std::int64_t state_count() const { return zero1 ? shard : padded; }

  // The gradient buckets: each layer's range, then the ranges outside the layers; ready(l) posts
  // layer l's (l = -1: the rest). Unposted buckets are posted after the backward, in that order.
  struct Buckets {
    Impl& t;
    std::vector<bool> posted;  // (num_layers + 1), the last one the non-layer ranges
    void post(int layer) {
      const std::size_t i = layer < 0 ? posted.size() - 1 : static_cast<std::size_t>(layer);
      if (posted[i]) return;
      posted[i] = true;
      if (layer >= 0) {
        const auto [b, e] = t.layout.layer_range(layer);
        t.reducer->post(t.grads.data() + b, e - b);
      } else {
        for (const auto& [b, e] : t.layout.non_layer_ranges()) t.reducer->post(t.grads.data() + b, e - b);
      }
    }
    void post_rest() {
      for (int l = static_cast<int>(posted.size()) - 2; l >= 0; --l) post(l);
      post(-1);
    }
  };

  // The backward failed after it had posted buckets: the communication thread may be inside a
  // collective the other ranks will never join, so the group is aborted (under MPI that ends
  // every rank with `why`) and the thread drained before the error goes on.
  void abandon(const Buckets& buckets, const std::string& why) {
    if (!reducer || std::none_of(buckets.posted.begin(), buckets.posted.end(), [](bool p) { return p; })) return;
    comm.abort(why);
    try {
      reducer->wait();
    } catch (...) {
    }
  }

  // The sum over the ranks of each rank's value, added in rank order in double.
  double sum_over_ranks(double x, double& comm_seconds) {
    if (ranks == 1) return x;
    Timer t;
    float mine[2];
    std::memcpy(mine, &x, sizeof(double));
    std::vector<float> all(static_cast<std::size_t>(2 * ranks));
    comm.all_gather(mine, 2, all.data());
    double sum = 0;
    for (int r = 0; r < ranks; ++r) {
      double v;
      std::memcpy(&v, all.data() + 2 * r, sizeof(double));
      sum += v;
    }
    comm_seconds += t.seconds();
    return sum;
  }

  StepResult run(std::span<const std::int32_t> tokens, std::int64_t T) {
    Timer step_timer;
    StepResult r;
    const std::int64_t b = batch.micro_batch, n_micro = batch.accumulation;
    if (T < 2 || static_cast<std::int64_t>(tokens.size()) != n_micro * b * T)
      throw RuntimeError("ReplicaTrainer::step: " + std::to_string(tokens.size()) + " tokens for " +
                         std::to_string(n_micro) + " micro-batches of " + std::to_string(b) + " × " +
                         std::to_string(T));
    const std::int64_t B = batch.global_batch;
    r.tokens = B * T;
    if (!acts || acts->max_b() < b || acts->T() != T) {
      acts.reset();
      acts = std::make_unique<TrainActivations>(model.config(), b, T, batch.checkpoint_activations);
    }
    // The gradient of the global mean loss: each micro-batch's loss sum scaled by 1 / (B·(T−1)).
    const float grad_scale = static_cast<float>(1.0 / static_cast<double>(B * (T - 1)));
    double compute = 0, waited = 0;
    Timer t;
    ops.zero(grads.data(), total);
    double loss_sum = 0;
    Buckets buckets{*this, std::vector<bool>(static_cast<std::size_t>(model.config().num_layers) + 1, false)};
    try {
      for (std::int64_t k = 0; k < n_micro; ++k) {
        const MicroBatch mb{tokens.subspan(static_cast<std::size_t>(k * b * T), static_cast<std::size_t>(b * T)), b, T};
        GradientsReady ready;
        if (ranks > 1 && k == n_micro - 1) ready = [&](int layer) { buckets.post(layer); };
        loss_sum += model.forward_backward(ops, w, g, mb, grad_scale, *acts, ready);
      }
    } catch (const std::exception& e) {
      abandon(buckets, e.what());
      throw;
    } catch (...) {
      abandon(buckets, "a replica failed during its backward");
      throw;
    }
    compute += t.seconds();
    if (ranks > 1) {
      buckets.post_rest();
      Timer wait;
      reducer->wait();
      waited += wait.seconds();
    }
    r.loss = sum_over_ranks(loss_sum, waited) / static_cast<double>(B * (T - 1));

    t.reset();
    r.grad_norm = grad_norm(layout, grads.data(), pool);
    r.skipped = !std::isfinite(r.grad_norm);
    const float coef = r.skipped ? 1.0f : static_cast<float>(clip_coefficient(r.grad_norm, opt.max_grad_norm));
    const std::int64_t begin = state_begin();
    if (!r.skipped) {
      // An update that would make a weight or a moment non-finite (an overflow with finite
      // gradients) skips the step too: the bounds rule it out without a pass over the data, or
      // the update's arithmetic is run once without writing. Under ZeRO-1 every rank decides for
      // its shard and all skip if one would.
      const bool finite = adamw_update_surely_finite(opt, step + 1, coef, r.grad_norm, bounds) ||
                          adamw_update_stays_finite(opt, step + 1, coef, params.data() + begin, grads.data() + begin,
                                                    exp_avg.data(), exp_avg_sq.data(), state_count(), pool);
      double bad = finite ? 0.0 : 1.0;
      if (zero1 && ranks > 1) bad = sum_over_ranks(bad, waited);
      r.skipped = bad > 0;
    }
    if (!r.skipped) {
      ++step;
      bounds = adamw_update(opt, step, coef, params.data() + begin, grads.data() + begin, exp_avg.data(), exp_avg_sq.data(),
                            state_count(), pool);
      compute += t.seconds();
      if (zero1 && ranks > 1) {
        Timer gather;
        std::copy_n(params.data() + begin, shard, gathered.data());
        comm.all_gather(gathered.data(), shard, params.data());
        waited += gather.seconds();
      }
    } else {
      compute += t.seconds();
    }
    r.compute_seconds = compute;
    r.comm_seconds = waited;
    r.seconds = step_timer.seconds();
    return r;
  }

  // The whole of one moment buffer (total), gathered from the shards under ZeRO-1.
  std::vector<float> whole(const std::vector<float>& state) {
    std::vector<float> out;
    if (zero1 && ranks > 1) {
      out.resize(static_cast<std::size_t>(padded));
      comm.all_gather(state.data(), shard, out.data());
    } else {
      out = state;
    }
    out.resize(static_cast<std::size_t>(total));
    return out;
  }
};

ReplicaTrainer::ReplicaTrainer(const LlamaTrainModel& model, std::vector<float> params,
                               const OptimizerOptions& optimizer, const BatchLayout& batch, bool zero1,
                               Collective& comm, TrainOps& ops, ThreadPool* pool)
    : impl_(std::make_unique<Impl>(model, std::move(params), optimizer, batch, zero1, comm, ops, pool)) {}

ReplicaTrainer::~ReplicaTrainer() = default;

StepResult ReplicaTrainer::step(std::span<const std::int32_t> tokens, std::int64_t T) { return impl_->run(tokens, T); }

std::span<const float> ReplicaTrainer::params() const {
  return std::span<const float>(impl_->params.data(), static_cast<std::size_t>(impl_->total));
}

OptimizerState ReplicaTrainer::optimizer_state() {
  OptimizerState s;
  s.step = impl_->step;
  s.exp_avg = impl_->whole(impl_->exp_avg);
  s.exp_avg_sq = impl_->whole(impl_->exp_avg_sq);
  return s;
}

void ReplicaTrainer::restore(std::span<const float> params, const OptimizerState& state) {
  Impl& t = *impl_;
  const auto total = static_cast<std::size_t>(t.total);
  if (params.size() != total || state.exp_avg.size() != total || state.exp_avg_sq.size() != total)
    throw RuntimeError("ReplicaTrainer::restore: weights and optimizer state must have " + std::to_string(total) +
                       " elements each");
  std::copy(params.begin(), params.end(), t.params.begin());
  std::fill(t.params.begin() + t.total, t.params.end(), 0.0f);
  // This rank's part of each moment (the padding beyond the layout stays zero).
  const std::int64_t begin = t.state_begin(), count = t.state_count();
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t at = begin + i;
    t.exp_avg[static_cast<std::size_t>(i)] = at < t.total ? state.exp_avg[static_cast<std::size_t>(at)] : 0.0f;
    t.exp_avg_sq[static_cast<std::size_t>(i)] = at < t.total ? state.exp_avg_sq[static_cast<std::size_t>(at)] : 0.0f;
  }
  t.step = state.step;
  t.refresh_bounds();
}

CommStats ReplicaTrainer::comm_stats() const { return impl_->comm.stats(); }

}  // namespace plexus
