// The memory a run needs besides its placed weights, per computing device: KV cache for the
// requested context and batch, the layer workspace, activations, logits (in row chunks),
// weight-streaming slots, and the f32 small vectors (norms, biases) kept where they compute.
// The one sizing function that the planner and the executor share.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/module_tree.h"
#include "planner/sized_tree.h"
#include "planner/stage_layout.h"

namespace plexus {

// What a run must hold at once.
struct RunShape {
  std::int64_t context = 0;        // KV capacity of each sequence, in tokens (> 0)
  std::int64_t batch = 1;          // sequences open at once
  std::int64_t batch_tokens = 256;  // tokens per forward pass (prefill chunk)
  int accelerator_threads = 1;     // threads of each accelerator's pool (attention scores scale with it)
  int host_threads = 1;            // threads of the host device's pool
  std::int64_t accelerator_kernel_scratch = 0;  // device scratch of each accelerator's kernels (GPUs)
};

// Logits are computed this many rows at a time: about 4 MiB of float32 per chunk, at least one
// row, at most batch_tokens.
std::int64_t logits_chunk_rows(std::int64_t vocab, std::int64_t batch_tokens);

// How run devices split `total_threads` (at least one each): the executor's devices and the
// planner's sizing both use it.
int threads_per_accelerator(int total_threads, int n_accelerators);

// Bytes of layer l's matrices (layer_matrix_names: q k v o and the MLP's or experts') packed one after another, each
// starting on a 64-byte line: the size of a streaming slot or of a resident layer's copy
// (`with_experts` false: without its experts, which the host keeps, ModulePlace::host_experts).
std::int64_t packed_layer_bytes(const SizedTree& sized, const ModelConfig& config, int layer, bool with_experts = true);
// The lm_head matrix (the embedding's when tied).
std::int64_t head_matrix_bytes(const SizedTree& sized);

// The run buffers of one computing device (an accelerator ordinal, or kHostDevice).
struct DeviceBuffers {
  int device = kHostDevice;
  int stages = 0;                  // stages computed here
  std::int64_t kv_cache = 0;       // batch × context tokens for every layer computed here (float32)
  std::int64_t workspace = 0;      // one layer's scratch (Workspace::bytes_for), and the kernels' own (GPUs)
  std::int64_t activations = 0;    // (batch_tokens, hidden) float32 per stage
  std::int64_t head = 0;           // head input (rows, hidden) + logits (rows, vocab), one row chunk
  std::int64_t layer_slot = 0;     // one streaming slot: the largest offloaded layer computed here
  int layer_slots = 0;             // 0, 1 or 2 (two overlap the next copy with compute)
  std::int64_t head_slot = 0;      // the offloaded lm_head's slot
  // What the run places beyond the weights as counted: the 64-byte alignment of resident layers'
  // packed copies, and the small vectors (norms, biases) as f32 on whole lines for every layer
  // computed here, resident or streamed, and the final norm with the head, less the stored
  // bytes of resident layers' vectors (the weights here count those).
  std::int64_t padding = 0;
  std::int64_t streaming() const { return layer_slot * layer_slots + head_slot; }
  std::int64_t scratch() const { return workspace + activations + head + padding; }
  std::int64_t total() const { return kv_cache + scratch() + streaming(); }
};

struct RunBuffers {
  RunShape shape;
  std::int64_t logits_rows = 0;
  std::vector<DeviceBuffers> devices;  // computing devices in stage order of first appearance
  const DeviceBuffers* find(int device) const;
  std::int64_t total_on(int device) const;  // 0 for a device that computes nothing
};

// Sizes every computing device's buffers for `layout` with two streaming slots where layers
// stream. `sized` gives the bytes of the weights as the run stores them.
RunBuffers size_run_buffers(const ModelConfig& config, const SizedTree& sized, const StageLayout& layout,
                            const RunShape& shape);

// Drops to one streaming slot on every device where two do not fit `room(device)` (bytes left
// beside the weights; negative: no limit). Returns the devices that got one slot.
std::vector<int> fit_streaming_slots(RunBuffers* buffers, const std::function<std::int64_t(int device)>& room);

// "KV cache 21.00 MiB, workspace 1.2 MiB, …" for error messages and --verbose.
std::string describe_buffers(const DeviceBuffers& b);

}  // namespace plexus
