// Runs a model — the one run path of plexus. A device map places stages of consecutive modules
// on devices, each holding its weights, its layers' KV caches and its scratch in device buffers;
// activations hop between devices in order with events; offloaded weights stream in
// double-buffered; a forward pass is cut into micro-batches that flow through the stages as a
// pipeline. A run on one CPU (no devices named) is the same executor with one stage on the host
// device, its weights read in place from the mmapped checkpoint (make_stage_layout: without
// accelerators "cpu" is the host's own memory) and its work called on the calling thread (no
// queue hop: nothing to overlap).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/device_registry.h"
#include "comm/collective.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "exec/device_memory.h"
#include "exec/exec_stats.h"
#include "planner/stage_layout.h"
#include "exec/weight_store.h"
#include "exec/weight_streamer.h"
#include "kernels/cpu/isa.h"
#include "model/checkpoint.h"
#include "model/llama_family.h"
#include "model/tensor_split.h"
#include "planner/device_map.h"
#include "planner/run_buffers.h"
#include "runtime/runner.h"

namespace plexus {

// What a caller asks of a run on the CPU (the Engine, and ModelRun's RunInputs).
struct EngineOptions {
  int threads = 0;                      // 0: one per hardware thread
  std::int64_t max_batch_tokens = 256;  // tokens per forward call (prefill chunk)
  std::int64_t max_context = 0;         // 0: the model's max_position_embeddings
  WaitPolicy wait = WaitPolicy::kAuto;  // how the CPU devices' idle pool threads wait
};

struct ExecutorOptions {
  std::int64_t max_batch_tokens = 256;  // tokens per forward()
  std::int64_t max_context = 0;         // tokens per sequence; 0: the model's max_position_embeddings
  std::int64_t sequences = 1;           // sequences open at once: their KV cache must fit beside the rest
  int micro_batches = 0;                // per forward(); 0: one per stage when nothing streams, else 1
  // Quantise on load (Checkpoint::quantize): the weights take this mix's types before the model
  // is placed; `quantize_progress` reports (and may stop) the work.
  std::optional<QuantMix> quantize;
  Checkpoint::QuantizeProgress quantize_progress;
  int quantize_threads = 0;  // 0: one per hardware thread
  // Tensor parallelism: this executor is rank split.rank of split.size and computes its shard
  // (model/tensor_split.h) with the full model's device map applied to the shard's modules;
  // group(d) is the collective of the ranks' devices d (every rank maps its stages onto devices
  // numbered alike), which the partial products of device d are summed over.
  struct TensorRank {
    TensorSplit split;
    std::function<Collective&(int device)> group;
    bool fail_first_task = false;  // tests: the first work of each of its devices throws (a rank failing mid-forward)
  };
  std::optional<TensorRank> tensor;
};

// The options of a run of one stage on the host (the Engine, a plain `plexus generate` without
// GPUs): one sequence at a time, one micro-batch, the weights read in place.
ExecutorOptions single_host_stage(const EngineOptions& engine);

class Executor : public Runner {
 public:
  // Loads the checkpoint and places every module by `map` on `devices` (which must outlive the
  // executor), then its run buffers as planner/run_buffers.h sizes them (the planner's own
  // sizing): one streaming slot where two do not fit. InputError for a map the run cannot
  // follow; RuntimeError naming the device and the numbers when the weights, the buffers or the
  // KV cache of `sequences` sequences of max_context tokens do not fit — before any run starts.
  Executor(const std::string& model_dir, const DeviceMap& map, DeviceRegistry& devices, const ExecutorOptions& options);
  ~Executor() override;

  // The model's config (a tensor-parallel rank: the whole model's, not its shard's geometry).
  const ModelConfig& config() const override { return full_.config(); }
  // The rows of the head this executor computes (a tensor-parallel rank: its vocabulary rows).
  std::int64_t vocab_size() const override { return model().lm_head().rows; }
  std::int64_t max_context() const override { return max_context_; }
  std::int64_t max_batch_tokens() const override { return max_tokens_; }
  int open_sequence(std::int64_t capacity) override;
  void close_sequence(int slot) override;
  void copy_sequence(int from, int to, std::int64_t tokens) override;
  void forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) override;
  // The same with the caller's KV caches (each token's cache holds every layer, in host memory):
  // only for a run of one stage on the host device (RuntimeError otherwise). The Engine's path.
  void forward(const TokenBatch& batch, std::span<const std::int64_t> rows, float* logits);

  // What this executor computes: the model, or a tensor-parallel rank's shard of it.
  const LlamaFamilyModel& model() const { return shard_ ? shard_->model() : full_; }
  const StageLayout& layout() const { return layout_; }
  const IsaKernels& kernels() const { return kernels_; }
  // Threads of the devices that compute, summed.
  int threads() const;
  int micro_batches() const { return micro_batches_; }
  // The run buffers in use per computing device (streaming slots as fitted).
  const RunBuffers& buffers() const { return buffers_; }
  // Busy time, streaming, memory and collectives since construction.
  ExecStats stats() const;
  // Enqueues a forward on the stages' devices and returns (a run computing on the calling
  // thread has finished it); forward_wait() waits for it. Tensor-parallel ranks in one process
  // start theirs together, so the ranks meet in their collectives. forward() is both.
  void forward_start(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits);
  void forward_wait();

 private:
  struct StageState;
  struct Sequence;
  struct DeviceState;

  Device& device(int d) const;
  void check_batch(const SlotBatch& batch) const;
  // Runs the batch through the stages (their `caches` already set for its tokens).
  void run_batch(std::span<const std::int32_t> ids, std::span<const std::int32_t> pos, std::span<const std::int64_t> rows,
                 float* logits);
  // Enqueues stage s's work on micro-batch i (tokens [off, off + n) of the batch); calls it
  // directly when the run computes on the calling thread (direct_).
  void enqueue_stage(std::size_t s, std::size_t i, std::span<const std::int32_t> ids, std::span<const std::int32_t> pos,
                     std::int64_t off, std::int64_t n, std::span<const std::int64_t> rows, float* logits);
  void synchronize();
  // The head computes straight into the caller's logits (host memory): a direct run of one
  // micro-batch, whose rows needing logits are the batch's, in order.
  bool logits_in_place() const { return direct_ && micro_batches_ == 1; }

  Checkpoint checkpoint_;
  LlamaFamilyModel full_;
  std::unique_ptr<ModelShard> shard_;  // tensor parallelism: this rank's shard of full_
  ModuleTree tree_;
  DeviceRegistry& devices_;
  const IsaKernels& kernels_;
  StageLayout layout_;
  std::int64_t max_tokens_, max_context_;
  int micro_batches_;
  bool direct_ = false;  // one stage on the host device, nothing streamed: work runs on the calling thread
  RunMemory memory_;
  RunBuffers buffers_;
  std::unique_ptr<WeightStore> weights_;
  std::vector<std::unique_ptr<DeviceState>> device_states_;  // by compute device used
  std::vector<std::unique_ptr<StageState>> stages_;
  std::vector<std::unique_ptr<Sequence>> sequences_;  // by slot; null when closed
  double wall_s_ = 0;
  std::int64_t forwards_ = 0, tokens_ = 0;
  Timer started_;  // of the forward in flight (forward_start .. forward_wait)
};

}  // namespace plexus
