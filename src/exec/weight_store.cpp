// Placing weights: device copies, host copies, or the checkpoint's own pages.
#include "exec/weight_store.h"

namespace plexus {

namespace {
constexpr std::int64_t kLine = 64;
std::int64_t round_line(std::int64_t b) { return (b + kLine - 1) / kLine * kLine; }
}  // namespace

std::int64_t WeightStore::packed_bytes(const LayerWeights& w) {
  std::int64_t b = 0;
  for (const WeightMatrix* m : {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down}) b += round_line(m->bytes());
  return b;
}

void WeightStore::copy_packed(const LayerWeights& w, Device& device, Buffer& dst, LayerWeights& out) {
  const WeightMatrix* src[7] = {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down};  // packing order
  WeightMatrix* to[7] = {&out.q, &out.k, &out.v, &out.o, &out.gate, &out.up, &out.down};
  std::int64_t offset = 0;
  for (int i = 0; i < 7; ++i) {
    device.copy_from_host(dst, static_cast<std::size_t>(offset), src[i]->data, static_cast<std::size_t>(src[i]->bytes()));
    *to[i] = *src[i];
    to[i]->data = dst.as<std::uint8_t>() + offset;
    offset += round_line(src[i]->bytes());
  }
}

WeightMatrix WeightStore::place(const WeightMatrix& src, const ModulePlace& at, RunMemory& memory,
                                const std::string& what) {
  if (at.residence == Residence::kDisk) return src;  // the mmapped checkpoint, read in place
  DeviceMemory& mem = at.residence == Residence::kHost ? memory.host : memory.of(at.device);
  Buffer b = mem.allocate(static_cast<std::size_t>(src.bytes()), "weights of " + what);
  mem.device().copy_from_host(b, 0, src.data, static_cast<std::size_t>(src.bytes()));
  WeightMatrix out = src;
  out.data = b.data();
  buffers_.push_back(std::move(b));
  return out;
}

WeightStore::WeightStore(const LlamaFamilyModel& model, const StageLayout& layout, RunMemory& memory) {
  embed_ = place(model.embedding(), layout.embed, memory, "model.embed_tokens");
  const bool tied = model.lm_head().data == model.embedding().data;
  const bool same_home = layout.head.residence == layout.embed.residence &&
                         (layout.head.residence != Residence::kDevice || layout.head.device == layout.embed.device);
  head_ = tied && same_home ? embed_ : place(model.lm_head(), layout.head, memory, "lm_head");
  final_norm_ = model.final_norm();
  layers_.reserve(layout.layers.size());
  for (std::size_t l = 0; l < layout.layers.size(); ++l) {
    const LayerWeights& src = model.layer_weights(static_cast<int>(l));
    const ModulePlace& at = layout.layers[l];
    if (at.residence == Residence::kDisk) {
      layers_.push_back(src);
      continue;
    }
    DeviceMemory& mem = at.residence == Residence::kHost ? memory.host : memory.of(at.device);
    Buffer b = mem.allocate(static_cast<std::size_t>(packed_bytes(src)), "weights of model.layers." + std::to_string(l));
    LayerWeights w = src;
    copy_packed(src, mem.device(), b, w);
    layers_.push_back(std::move(w));
    buffers_.push_back(std::move(b));
  }
}

}  // namespace plexus
