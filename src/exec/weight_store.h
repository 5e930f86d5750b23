// Where each module's weights live during a run: copies in device buffers for modules kept on
// their computing accelerator, copies in host memory for "cpu", views of the mmapped checkpoint
// for "disk" and for modules kept on the host device that computes them (a run on the host:
// the weights are the checkpoint's pages, never a second copy). The small vectors (every layer's norms and biases, the final norm) are always f32
// copies on the device that computes them, even where the matrices stream: they are tiny. Every
// copy is allocated through RunMemory, so budgets are enforced and measured. A layer whose
// experts the host keeps (--n-cpu-moe) copies its attention and router alone.
#pragma once
#include <cstdint>
#include <vector>

#include "exec/device_memory.h"
#include "planner/stage_layout.h"
#include "model/llama_family.h"

namespace plexus {

class WeightStore {
 public:
  WeightStore(const LlamaFamilyModel& model, const StageLayout& layout, RunMemory& memory);

  // The weights to compute with when resident; the source to stream from otherwise (a
  // streamed layer's small vectors are already on its computing device).
  const WeightMatrix& embedding() const { return embed_; }
  const WeightMatrix& lm_head() const { return head_; }
  const WeightMatrix& position_embedding() const { return positions_; }  // GPT-2's; empty otherwise
  const LayerWeights& layer(int l) const { return layers_[static_cast<std::size_t>(l)]; }
  VectorView final_norm() const { return final_norm_; }  // (H) on the head's computing device

  // Bytes of a layer's matrices packed one after another, each starting on a 64-byte line.
  static std::int64_t packed_bytes(const LayerWeights& w);
  // Copies w's matrices into `dst` (packed as above) with device.copy_from_host and points
  // `out`'s matrices at the copies; `out` keeps its small vectors. Runs on the calling thread.
  static void copy_packed(const LayerWeights& w, Device& device, Buffer& dst, LayerWeights& out);

 private:
  WeightMatrix place(const WeightMatrix& src, const ModulePlace& at, RunMemory& memory, const std::string& what);
  // Copies src[i] into `dst` packed (each on a 64-byte line) and points *to[i] at its copy.
  static void copy_matrices(const std::vector<const WeightMatrix*>& src, const std::vector<WeightMatrix*>& to, Device& device,
                            Buffer& dst);
  // Copies src's small vectors to `mem`'s device (layer_vector_bytes) and points out's at them.
  void place_vectors(const ModelConfig& config, const LayerWeights& src, DeviceMemory& mem, const std::string& what,
                     LayerWeights& out);

  std::vector<Buffer> buffers_;
  std::vector<LayerWeights> layers_;
  WeightMatrix embed_, head_;
  WeightMatrix positions_;  // GPT-2 only, on the embedding's device
  VectorView final_norm_;
};

}  // namespace plexus
