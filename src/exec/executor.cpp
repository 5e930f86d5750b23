// The executor: placement at construction, then a forward pass enqueued per (stage,
// micro-batch) in wavefront order on the stages' device queues, ordered by events.
#include "exec/executor.h"

#include <algorithm>
#include <cassert>
#include <exception>

#include "core/error.h"
#include "core/units.h"
#include "exec/compute_ops_factory.h"
#include "exec/tensor_parallel_ops.h"
#include "planner/sized_tree.h"
#include "planner/weight_dtype.h"
#include "model/token_id.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "model/config.h"
#include "model/quant_policy.h"

namespace plexus {

// A device that computes at least one stage: its compute operations, scratch and weight streamer.
struct Executor::DeviceState {
  int ordinal = kHostDevice;
  Device* device = nullptr;
  DeviceOps ops;  // launched from the device's queue only
  std::unique_ptr<TensorParallelOps> tensor;  // tensor parallelism: ops wrapped, partial products summed
  bool fail_next_task = false;                // tests: ExecutorOptions::TensorRank::fail_first_task
  ComputeOps* compute = nullptr;              // what the model runs through: `tensor`, else ops.ops
  Buffer workspace_memory;
  std::unique_ptr<Workspace> workspace;
  std::unique_ptr<WeightStreamer> streamer;  // when offloaded modules compute here
  double busy_s = 0, wait_s = 0;             // written by the device's queue thread only
};

struct Executor::StageState {
  Stage stage;
  DeviceState* dev = nullptr;
  Buffer x;                         // (max_tokens, H) residual stream of the tokens in flight
  Buffer head_in, head_logits;      // (max_tokens, H) (max_tokens, vocab); head stage only
  std::vector<KvCache*> caches;     // (max_tokens) this stage's cache of each token's sequence
  std::vector<Event> done;          // (micro-batches) per forward
  // Per micro-batch: the batch rows that need logits, and the logits row of each.
  struct HeadRows {
    std::vector<std::int64_t> token, logits_row;
  };
  std::vector<HeadRows> head_rows;
};

struct Executor::Sequence {
  std::int64_t capacity = 0;
  std::vector<Buffer> buffers;                 // per stage with layers
  std::vector<std::unique_ptr<KvCache>> kv;    // per stage; null for stages without layers
};

namespace {

RunMemory make_run_memory(DeviceRegistry& devices) {
  std::vector<DeviceMemory> accelerators;
  for (Device* d : devices.accelerators()) accelerators.emplace_back(*d);
  return RunMemory{std::move(accelerators), DeviceMemory(devices.host())};
}

// The checkpoint, its weights quantised first when the options ask.
const Checkpoint& quantized(Checkpoint& c, const ExecutorOptions& o) {
  if (o.quantize) {
    ThreadPool pool(o.quantize_threads, WaitPolicy::kPassive);
    c.quantize(*o.quantize, quant_model_facts(load_model_config(c.dir())), pool, o.quantize_progress);
  }
  return c;
}

std::string layers_text(const Stage& s) {
  return s.n_layers() == 1 ? "layer " + std::to_string(s.first_layer)
                           : "layers " + std::to_string(s.first_layer) + "-" + std::to_string(s.end_layer - 1);
}

}  // namespace

ExecutorOptions single_host_stage(const EngineOptions& engine) {
  ExecutorOptions x;
  x.max_batch_tokens = engine.max_batch_tokens;
  x.max_context = engine.max_context;
  x.sequences = 1;
  x.micro_batches = 1;
  return x;
}

Executor::Executor(const std::string& model_dir, const DeviceMap& map, DeviceRegistry& devices,
                   const ExecutorOptions& options)
    : checkpoint_(model_dir),
      full_(load_model_config(model_dir), quantized(checkpoint_, options)),
      shard_(options.tensor ? std::make_unique<ModelShard>(full_, options.tensor->split) : nullptr),
      tree_(options.tensor ? shard_module_tree(ModuleTree::from_checkpoint(full_.config(), checkpoint_), options.tensor->split)
                           : ModuleTree::from_checkpoint(full_.config(), checkpoint_)),
      devices_(devices),
      kernels_(isa_kernels(best_isa())),
      layout_(make_stage_layout(tree_, map, devices.accelerator_count())),
      max_tokens_(std::max<std::int64_t>(1, options.max_batch_tokens)),
      max_context_(options.max_context > 0 ? std::min(options.max_context, full_.config().max_position_embeddings)
                                            : full_.config().max_position_embeddings),
      micro_batches_(options.micro_batches > 0 ? options.micro_batches
                                                : (layout_.streams() ? 1 : static_cast<int>(layout_.stages.size()))),
      direct_(layout_.stages.size() == 1 && layout_.stages.front().device == kHostDevice && !layout_.streams()),
      memory_(make_run_memory(devices)) {
  const ModelConfig& c = model().config();  // a tensor-parallel rank's: its share of the heads
  weights_ = std::make_unique<WeightStore>(model(), layout_, memory_);
  // The whole model computed on the host from the mapped files: map every page in now (when the
  // files fit in memory), so the load pays the page faults and the first forward pass does not.
  if (direct_ && !checkpoint_.quantized()) {  // quantising read the projections' pages already
    checkpoint_.prefault();
  }
  // The run buffers, sized by the planner's function for the weights as stored.
  // (A tree holding block formats — a GGUF file, a quantised run — is sized as stored, tensor
  // by tensor, whatever `stored`; for a GGUF file it only picks the KV-cache width, as
  // exec/model_run plans it.)
  WeightDType stored = dtype_is_block(model().embedding().dtype) ? WeightDType::kBF16 : WeightDType::kF32;
  parse_weight_dtype(dtype_torch_name(model().embedding().dtype), &stored);
  const SizedTree sized = SizedTree::build(tree_, stored);
  RunShape shape;
  shape.context = max_context_;
  shape.batch = std::max<std::int64_t>(1, options.sequences);
  shape.batch_tokens = max_tokens_;
  shape.host_threads = devices.host().threads();
  shape.accelerator_threads = devices.accelerator_count() > 0 ? devices.accelerator(0).threads() : 1;
  if (devices.accelerator_count() > 0) {
    shape.accelerator_kernel_scratch =
        kernel_scratch_bytes(devices.accelerator(0).kind(), OpsShape{&c, max_tokens_, max_context_, false});
  }
  buffers_ = size_run_buffers(c, sized, layout_, shape);
  // Free memory beside the weights placed; the packed layers' alignment is already in them.
  auto room = [this](int d) {
    const DeviceBuffers* b = buffers_.find(d);
    return static_cast<std::int64_t>(device(d).memory_free()) + (b ? b->padding : 0);
  };
  fit_streaming_slots(&buffers_, room);
  for (const DeviceBuffers& b : buffers_.devices) {  // nothing runs that cannot finish
    if (b.total() > room(b.device)) {
      const DeviceMemory& mem = memory_.of(b.device);
      throw RuntimeError("the plan does not fit at run time: " + mem.device().name() + " holds " +
                         format_bytes(static_cast<std::uint64_t>(mem.in_use())) + " of weights and needs " +
                         format_bytes(static_cast<std::uint64_t>(b.total())) + " of run buffers (" + describe_buffers(b) +
                         " for " + std::to_string(shape.batch) + " sequence(s) of " + std::to_string(shape.context) +
                         " tokens) but has " + format_bytes(static_cast<std::uint64_t>(room(b.device))) +
                         " free. Plan with the same flags (plexus plan), which sizes these buffers, or lower "
                         "--context/--batch/--batch-tokens");
    }
  }
  for (const Stage& s : layout_.stages) {
    DeviceState* ds = nullptr;
    for (auto& d : device_states_)
      if (d->ordinal == s.device) ds = d.get();
    if (ds == nullptr) {
      const DeviceBuffers& b = *buffers_.find(s.device);
      auto d = std::make_unique<DeviceState>();
      d->ordinal = s.device;
      d->device = &device(s.device);
      // A tensor-parallel rank sums partial products between its operations (on the host thread,
      // waiting for the stream): its steps run eagerly too.
      const OpsShape ops_shape{&c, max_tokens_, max_context_,
                               b.layer_slots > 0 || b.head_slot > 0 || buffers_.devices.size() > 1 || options.tensor.has_value()};
      d->ops = make_compute_ops(*d->device, kernels_, ops_shape, memory_.of(s.device));
      d->compute = d->ops.ops.get();
      if (options.tensor) {
        d->tensor = std::make_unique<TensorParallelOps>(*d->ops.ops, options.tensor->group(s.device));
        d->compute = d->tensor.get();
        d->fail_next_task = options.tensor->fail_first_task;
      }
      const ThreadPool* pool = d->device->thread_pool();
      const int n_threads = pool ? pool->size() : 1;  // attention scores per host thread
      const std::int64_t ws_bytes = Workspace::bytes_for(c.layer_shape(), max_tokens_, max_context_, n_threads);
      d->workspace_memory = memory_.of(s.device).allocate(static_cast<std::size_t>(ws_bytes), "scratch buffers (workspace)");
      d->workspace = std::make_unique<Workspace>(c.layer_shape(), max_tokens_, max_context_, n_threads, d->workspace_memory.as<float>());
      if (b.layer_slots > 0 || b.head_slot > 0) {
        for (std::size_t l = 0; l < layout_.layers.size(); ++l) {  // the sizing and the weights as stored agree
          const ModulePlace& p = layout_.layers[l];
          if (p.device == s.device && p.residence != Residence::kDevice &&
              WeightStore::packed_bytes(weights_->layer(static_cast<int>(l))) > b.layer_slot) {
            throw RuntimeError("internal: layer " + std::to_string(l) + " is larger than its streaming slot");
          }
        }
        d->streamer = std::make_unique<WeightStreamer>(memory_.of(s.device), b.layer_slot, b.layer_slots, b.head_slot);
      }
      ds = d.get();
      device_states_.push_back(std::move(d));
    }
    auto st = std::make_unique<StageState>();
    st->stage = s;
    st->dev = ds;
    const std::size_t row_bytes = static_cast<std::size_t>(c.hidden_size) * sizeof(float);
    const std::string where = "stage " + std::to_string(stages_.size());
    st->x = memory_.of(s.device).allocate(static_cast<std::size_t>(max_tokens_) * row_bytes, "activations of " + where);
    if (s.head) {
      const std::size_t rows = static_cast<std::size_t>(buffers_.logits_rows);
      st->head_in = memory_.of(s.device).allocate(rows * row_bytes, "head input of " + where);
      if (!logits_in_place()) {
        st->head_logits = memory_.of(s.device).allocate(rows * static_cast<std::size_t>(vocab_size()) * sizeof(float),
                                                        "logits of " + where);
      }
    }
    st->caches.resize(static_cast<std::size_t>(max_tokens_));
    stages_.push_back(std::move(st));
  }
}

Executor::~Executor() {
  try {
    synchronize();
  } catch (const std::exception&) {  // already reported by the forward that failed
  }
}

int Executor::threads() const {
  int n = 0;
  for (const auto& ds : device_states_) {
    if (const ThreadPool* pool = ds->device->thread_pool()) n += pool->size();
  }
  return n;
}

Device& Executor::device(int d) const { return d == kHostDevice ? devices_.host() : devices_.accelerator(d); }

int Executor::open_sequence(std::int64_t capacity) {
  const ModelConfig& c = model().config();
  if (capacity > max_context_) {
    throw InputError("sequence of " + std::to_string(capacity) + " tokens exceeds the context of " +
                     std::to_string(max_context_) + " tokens (max_position_embeddings in config.json)");
  }
  auto seq = std::make_unique<Sequence>();
  seq->capacity = capacity;
  for (const auto& st : stages_) {
    const Stage& s = st->stage;
    if (s.n_layers() == 0) {
      seq->buffers.emplace_back();
      seq->kv.emplace_back();
      continue;
    }
    const std::int64_t bytes = KvCache::bytes_for(s.n_layers(), c.num_kv_heads, c.head_dim, capacity);
    Buffer b = memory_.of(s.device).allocate(static_cast<std::size_t>(bytes), "the KV cache of a " + std::to_string(capacity) +
                                                                                    "-token sequence for " + layers_text(s));
    seq->kv.push_back(std::make_unique<KvCache>(s.first_layer, s.n_layers(), c.num_kv_heads, c.head_dim, capacity, b.as<float>()));
    seq->buffers.push_back(std::move(b));
  }
  for (std::size_t i = 0; i < sequences_.size(); ++i) {
    if (!sequences_[i]) {
      sequences_[i] = std::move(seq);
      return static_cast<int>(i);
    }
  }
  sequences_.push_back(std::move(seq));
  return static_cast<int>(sequences_.size() - 1);
}

void Executor::close_sequence(int slot) {
  assert(slot >= 0 && static_cast<std::size_t>(slot) < sequences_.size() && sequences_[static_cast<std::size_t>(slot)]);
  Sequence& seq = *sequences_[static_cast<std::size_t>(slot)];
  for (std::size_t s = 0; s < stages_.size(); ++s) memory_.of(stages_[s]->stage.device).released(seq.buffers[s].size());
  sequences_[static_cast<std::size_t>(slot)].reset();
}

void Executor::copy_sequence(int from, int to, std::int64_t tokens) {
  assert(from >= 0 && static_cast<std::size_t>(from) < sequences_.size() && sequences_[static_cast<std::size_t>(from)]);
  assert(to >= 0 && static_cast<std::size_t>(to) < sequences_.size() && sequences_[static_cast<std::size_t>(to)]);
  Sequence& src = *sequences_[static_cast<std::size_t>(from)];
  Sequence& dst = *sequences_[static_cast<std::size_t>(to)];
  if (tokens < 0 || tokens > src.capacity || tokens > dst.capacity) {
    throw RuntimeError("internal: copying " + std::to_string(tokens) + " KV positions between sequences of " +
                       std::to_string(src.capacity) + " and " + std::to_string(dst.capacity) + " tokens");
  }
  const ModelConfig& c = model().config();
  const std::size_t row = static_cast<std::size_t>(c.head_dim) * sizeof(float);  // one position of one head
  for (std::size_t s = 0; s < stages_.size(); ++s) {
    if (!src.kv[s]) continue;
    Device& d = device(stages_[s]->stage.device);
    d.synchronize();
    // The cache is (layer, {k, v}, kv head, capacity, head_dim): per (layer, k/v, head) the
    // first `tokens` rows are contiguous in both, at offsets scaled by each one's capacity.
    const std::int64_t blocks = src.kv[s]->n_layers() * 2 * c.num_kv_heads;
    for (std::int64_t b = 0; b < blocks; ++b) {
      d.copy_from_device(dst.buffers[s], static_cast<std::size_t>(b * dst.capacity) * row, src.buffers[s],
                         static_cast<std::size_t>(b * src.capacity) * row, static_cast<std::size_t>(tokens) * row);
    }
  }
}

void Executor::check_batch(const SlotBatch& batch) const {
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  if (n > max_tokens_) {
    throw RuntimeError("batch of " + std::to_string(n) + " tokens exceeds max_batch_tokens (" + std::to_string(max_tokens_) + ")");
  }
  for (std::size_t t = 0; t < batch.ids.size(); ++t) {
    const int slot = batch.seq[t];
    assert(slot >= 0 && static_cast<std::size_t>(slot) < sequences_.size() && sequences_[static_cast<std::size_t>(slot)]);
    check_token_id(batch.ids[t], model().embedding().rows);
    if (batch.pos[t] < 0 || batch.pos[t] >= sequences_[static_cast<std::size_t>(slot)]->capacity) {
      throw RuntimeError("position " + std::to_string(batch.pos[t]) + " outside the KV cache capacity");
    }
  }
}

void Executor::forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) {
  if (batch.ids.empty()) return;
  forward_start(batch, rows, logits);
  forward_wait();
}

void Executor::forward_start(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) {
  started_.reset();
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  if (n == 0) return;
  check_batch(batch);
  for (std::size_t s = 0; s < stages_.size(); ++s) {
    StageState& st = *stages_[s];
    for (std::int64_t t = 0; t < n; ++t) {
      st.caches[static_cast<std::size_t>(t)] = sequences_[static_cast<std::size_t>(batch.seq[static_cast<std::size_t>(t)])]->kv[s].get();
    }
  }
  run_batch(batch.ids, batch.pos, rows, logits);
  tokens_ += n;
}

void Executor::forward_wait() {
  if (!direct_) synchronize();
  for (auto& st : stages_) st->head_rows.clear();
  wall_s_ += started_.seconds();
  ++forwards_;
}

void Executor::forward(const TokenBatch& batch, std::span<const std::int64_t> rows, float* logits) {
  const std::int64_t n = static_cast<std::int64_t>(batch.ids.size());
  if (n == 0) return;
  if (stages_.size() != 1 || stages_.front()->stage.device != kHostDevice) {
    throw RuntimeError("internal: a forward with the caller's KV caches needs a run of one stage on the host device");
  }
  if (n > max_tokens_) {
    throw RuntimeError("batch of " + std::to_string(n) + " tokens exceeds max_batch_tokens (" + std::to_string(max_tokens_) + ")");
  }
  StageState& st = *stages_.front();
  for (std::size_t t = 0; t < batch.ids.size(); ++t) {
    const KvCache* cache = batch.cache[t];
    assert(cache->first_layer() == 0 && cache->n_layers() == model().config().num_layers && "a cache of every layer");
    check_token_id(batch.ids[t], model().embedding().rows);
    if (batch.pos[t] < 0 || batch.pos[t] >= cache->capacity()) {
      throw RuntimeError("position " + std::to_string(batch.pos[t]) + " outside the KV cache capacity");
    }
    st.caches[t] = batch.cache[t];
  }
  started_.reset();
  run_batch(batch.ids, batch.pos, rows, logits);
  tokens_ += n;
  forward_wait();
}

void Executor::run_batch(std::span<const std::int32_t> ids, std::span<const std::int32_t> pos,
                         std::span<const std::int64_t> rows, float* logits) {
  const std::int64_t n = static_cast<std::int64_t>(ids.size());
  const std::size_t m = static_cast<std::size_t>(std::min<std::int64_t>(micro_batches_, n));
  const std::size_t n_stages = stages_.size();
  for (std::size_t s = 0; s < n_stages; ++s) {
    StageState& st = *stages_[s];
    st.done.assign(m, Event());
    st.head_rows.clear();
    st.head_rows.reserve(m);  // enqueued work holds references to the entries: no reallocation
  }
  // Wavefront order: (stage s, micro-batch i) after (s - 1, i) and (s, i - 1), so every wait
  // names an event already enqueued and stage k runs micro-batch i + 1 while k + 1 runs i.
  for (std::size_t w = 0; w + 1 < m + n_stages; ++w) {
    for (std::size_t s = 0; s < n_stages; ++s) {
      if (w < s || w - s >= m) continue;
      const std::size_t i = w - s;
      const std::int64_t off = n * static_cast<std::int64_t>(i) / static_cast<std::int64_t>(m);
      const std::int64_t end = n * static_cast<std::int64_t>(i + 1) / static_cast<std::int64_t>(m);
      enqueue_stage(s, i, ids, pos, off, end - off, rows, logits);
    }
  }
}

void Executor::enqueue_stage(std::size_t s, std::size_t i, std::span<const std::int32_t> ids,
                             std::span<const std::int32_t> pos, std::int64_t off, std::int64_t n,
                             std::span<const std::int64_t> rows, float* logits) {
  StageState& st = *stages_[s];
  DeviceState& ds = *st.dev;
  Device& dev = *ds.device;
  const Stage& stage = st.stage;
  const std::int64_t H = model().config().hidden_size;
  const std::size_t row_bytes = static_cast<std::size_t>(H) * sizeof(float);
  ComputeOps* ops = ds.compute;
  Workspace* ws = ds.workspace.get();
  // Work on the device's queue (or, direct_, on this thread), counted as busy time. A
  // tensor-parallel rank that fails first releases the ranks waiting for it in a collective.
  auto busy = [this, &ds, &dev](auto fn) {
    auto timed = [&ds, fn] {
      Timer t;
      try {
        if (ds.fail_next_task) {
          ds.fail_next_task = false;
          throw RuntimeError("injected failure (ExecutorOptions::TensorRank::fail_first_task)");
        }
        fn();
      } catch (const std::exception& e) {
        if (ds.tensor) ds.tensor->group().abort("tensor-parallel rank " + std::to_string(ds.tensor->group().rank()) + " failed: " + e.what());
        throw;
      }
      ds.busy_s += t.seconds();
    };
    if (direct_) {
      timed();
      return;
    }
    dev.enqueue(timed);
  };
  if (s > 0) {  // the micro-batch's activations hop from the previous stage's device
    StageState& prev = *stages_[s - 1];
    dev.wait_event(prev.done[i]);
    busy([&dev, &st, &prev, off, n, row_bytes] {
      dev.copy_from_device(st.x, static_cast<std::size_t>(off) * row_bytes, prev.x, static_cast<std::size_t>(off) * row_bytes,
                           static_cast<std::size_t>(n) * row_bytes);
    });
  }
  float* x = st.x.as<float>() + off * H;  // (n, H) on the device
  const TokenBatch tb{ids.subspan(static_cast<std::size_t>(off), static_cast<std::size_t>(n)),
                      pos.subspan(static_cast<std::size_t>(off), static_cast<std::size_t>(n)),
                      std::span<KvCache* const>(st.caches).subspan(static_cast<std::size_t>(off), static_cast<std::size_t>(n))};
  // The stage's embedding and layers: one batch on the device.
  if (stage.embed || stage.n_layers() > 0) {
    // The rope frequencies of the whole batch (LongRoPE: by its largest position), not of the
    // micro-batch: every micro-batch of one forward call rotates alike.
    const std::span<const double> freq = model().inv_freq(pos);
    busy([ops, tb, ws, freq, layers = stage.n_layers() > 0] { ops->begin_batch(tb, freq, layers, *ws); });
  }
  if (stage.embed) {
    busy([this, ops, tb, ws, x] { model().embed(*ops, weights_->embedding(), weights_->position_embedding(), tb, *ws, x); });
  }
  for (int l = stage.first_layer; l < stage.end_layer; ++l) {
    if (layout_.layers[static_cast<std::size_t>(l)].residence == Residence::kDevice) {
      busy([this, ops, l, x, tb, ws] { model().layer(*ops, l, weights_->layer(l), x, tb, *ws); });
      continue;
    }
    const WeightStreamer::Staged staged = ds.streamer->stage_layer(weights_->layer(l));
    dev.enqueue([&ds, ready = staged.ready] {
      Timer t;
      ready.wait();
      ds.wait_s += t.seconds();
    });
    const LayerWeights* w = static_cast<const LayerWeights*>(staged.weights);
    busy([this, ops, l, w, x, tb, ws] { model().layer(*ops, l, *w, x, tb, *ws); });
    ds.streamer->release(staged.slot, dev.record_event());
  }
  if (stage.embed || stage.n_layers() > 0) busy([ops] { ops->end_batch(); });
  if (stage.head) {
    StageState::HeadRows& wanted = st.head_rows.emplace_back();  // head_rows is cleared by synchronize()
    for (std::size_t j = 0; j < rows.size(); ++j) {
      if (rows[j] >= off && rows[j] < off + n) {
        wanted.token.push_back(rows[j]);
        wanted.logits_row.push_back(static_cast<std::int64_t>(j));
      }
    }
    if (!wanted.token.empty()) {
      const WeightMatrix* lm = &weights_->lm_head();
      int slot = 0;
      if (layout_.head.residence != Residence::kDevice) {
        const WeightStreamer::Staged staged = ds.streamer->stage_head(*lm);
        dev.enqueue([&ds, ready = staged.ready] {
          Timer t;
          ready.wait();
          ds.wait_s += t.seconds();
        });
        lm = static_cast<const WeightMatrix*>(staged.weights);
        slot = staged.slot;
      }
      const std::int64_t vocab = vocab_size();
      const std::int64_t chunk = buffers_.logits_rows;
      const bool in_place = logits_in_place();
      busy([this, ops, ws, tb, &st, &dev, &wanted, lm, logits, H, vocab, chunk, in_place] {
        // Row chunks of at most `chunk` rows, each a batch of its own: the logits buffer stays
        // (chunk, vocab) and is read once the chunk's batch has ended.
        float* in = st.head_in.as<float>();  // (chunk, H) the rows that need logits
        const std::size_t row = static_cast<std::size_t>(vocab) * sizeof(float);
        const std::span<const std::int64_t> tokens(wanted.token);
        for (std::size_t k0 = 0; k0 < tokens.size(); k0 += static_cast<std::size_t>(chunk)) {
          const std::size_t m = std::min(tokens.size() - k0, static_cast<std::size_t>(chunk));
          ops->begin_batch(tb, model().inv_freq(), false, *ws);
          ops->gather_rows(st.x.as<float>(), tokens.subspan(k0, m), H, in);
          if (in_place) {  // one micro-batch: its logits rows are those of the batch rows, in order
            assert(wanted.logits_row[k0] == static_cast<std::int64_t>(k0));
            model().head(*ops, *lm, weights_->final_norm(), in, static_cast<std::int64_t>(m),
                        logits + static_cast<std::int64_t>(k0) * vocab);
            ops->end_batch();
            continue;
          }
          model().head(*ops, *lm, weights_->final_norm(), in, static_cast<std::int64_t>(m), st.head_logits.as<float>());
          ops->end_batch();
          for (std::size_t k = 0; k < m; ++k) {
            dev.copy_to_host(logits + wanted.logits_row[k0 + k] * vocab, st.head_logits, k * row, row);
          }
        }
      });
      if (layout_.head.residence != Residence::kDevice) ds.streamer->release(slot, dev.record_event());
    }
  }
  if (!direct_) st.done[i] = dev.record_event();
}

void Executor::synchronize() {
  std::exception_ptr first;
  for (auto& ds : device_states_) {
    try {
      ds->device->synchronize();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    if (ds->streamer) {
      try {
        ds->streamer->synchronize();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
  }
  for (auto& st : stages_) st->head_rows.clear();
  if (first) std::rethrow_exception(first);
}

ExecStats Executor::stats() const {
  ExecStats s;
  s.wall_s = wall_s_;
  s.forwards = forwards_;
  s.stages = static_cast<int>(stages_.size());
  s.micro_batches = micro_batches_;
  s.tokens = tokens_;
  for (const auto& ds : device_states_) {
    if (ds->tensor) {
      s.comm += ds->tensor->group().stats();
      ++s.comm_ranks;
    }
  }
  auto describe = [&](int d) {
    std::string holds;
    auto add = [&](const std::string& p) { holds += (holds.empty() ? "" : ", ") + p; };
    for (const auto& st : stages_) {
      if (st->stage.device != d) continue;
      if (st->stage.embed) add("embedding");
      if (st->stage.n_layers() > 0) add(layers_text(st->stage));
      if (st->stage.head) add("head");
    }
    return holds;
  };
  auto add_device = [&](int d, const DeviceMemory& mem) {
    DeviceRunStats r;
    r.name = mem.device().name();
    r.ordinal = d;
    r.budget_bytes = mem.device().memory_total();
    r.peak_bytes = mem.peak();
    r.in_use_bytes = mem.in_use();
    for (const auto& ds : device_states_) {
      if (ds->ordinal != d) continue;
      r.busy_s = ds->busy_s;
      s.stream_wait_s += ds->wait_s;
      if (ds->streamer) {
        s.stream_copy_s += ds->streamer->copy_seconds();
        s.streamed_bytes += ds->streamer->bytes();
      }
    }
    r.busy_fraction = wall_s_ > 0 ? r.busy_s / wall_s_ : 0;
    r.holds = describe(d);
    // Host memory in use where the host does not compute: copies of offloaded weights.
    const bool host_computes = std::any_of(device_states_.begin(), device_states_.end(), [](const auto& ds) { return ds->ordinal == kHostDevice; });
    if (d == kHostDevice && mem.peak() > 0 && !host_computes) r.holds += std::string(r.holds.empty() ? "" : ", ") + "offloaded weights";
    s.devices.push_back(r);
  };
  for (std::size_t d = 0; d < memory_.accelerators.size(); ++d) add_device(static_cast<int>(d), memory_.accelerators[d]);
  add_device(kHostDevice, memory_.host);
  return s;
}

}  // namespace plexus
