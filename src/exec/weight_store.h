// Where each module's weights live during a run: copies in device buffers for modules kept on
// their computing device, copies in host memory for "cpu", views of the mmapped checkpoint for
// "disk". Every copy is allocated through RunMemory, so budgets are enforced and measured.
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

  // The weights to compute with when resident; the source to stream from otherwise.
  const WeightMatrix& embedding() const { return embed_; }
  const WeightMatrix& lm_head() const { return head_; }
  const LayerWeights& layer(int l) const { return layers_[static_cast<std::size_t>(l)]; }
  VectorView final_norm() const { return final_norm_; }

  // Bytes of a layer's matrices packed one after another, each starting on a 64-byte line.
  static std::int64_t packed_bytes(const LayerWeights& w);
  // Copies w's matrices into `dst` (packed as above) with device.copy_from_host and points
  // `out`'s matrices at the copies; `out` keeps its small vectors. Runs on the calling thread.
  static void copy_packed(const LayerWeights& w, Device& device, Buffer& dst, LayerWeights& out);

 private:
  WeightMatrix place(const WeightMatrix& src, const ModulePlace& at, RunMemory& memory, const std::string& what);

  std::vector<Buffer> buffers_;
  std::vector<LayerWeights> layers_;
  WeightMatrix embed_, head_;
  VectorView final_norm_;
};

}  // namespace plexus
