// Placing weights: device copies, host copies, or the checkpoint's own pages.
#include "exec/weight_store.h"

#include <cassert>

#include "core/error.h"

namespace plexus {

namespace {
constexpr std::int64_t kLine = 64;

// The mmapped checkpoint is host memory: read in place where the host keeps and computes the
// weights, or where they are read from disk.
bool in_place(const ModulePlace& at) {
  return at.residence == Residence::kDisk || (at.residence == Residence::kDevice && at.device == kHostDevice);
}
std::int64_t round_line(std::int64_t b) { return (b + kLine - 1) / kLine * kLine; }

// A layer's small vectors in packing order (that of layer_vector_bytes).
constexpr VectorView LayerWeights::* kVectors[] = {
    &LayerWeights::q_bias, &LayerWeights::k_bias, &LayerWeights::v_bias,     &LayerWeights::o_bias,
    &LayerWeights::q_norm, &LayerWeights::k_norm, &LayerWeights::input_norm, &LayerWeights::post_attention_norm,
    &LayerWeights::sinks,  &LayerWeights::router_bias, &LayerWeights::expert_gate_bias, &LayerWeights::expert_up_bias,
    &LayerWeights::expert_down_bias, &LayerWeights::pre_feedforward_norm, &LayerWeights::post_feedforward_norm,
    &LayerWeights::up_bias, &LayerWeights::down_bias};
}  // namespace

std::int64_t WeightStore::packed_bytes(const LayerWeights& w) {
  std::int64_t b = 0;
  for (const WeightMatrix* m : layer_matrices(w)) b += round_line(m->bytes());
  return b;
}

void WeightStore::copy_packed(const LayerWeights& w, Device& device, Buffer& dst, LayerWeights& out) {
  out.experts.resize(w.experts.size());
  copy_matrices(layer_matrices(w), layer_matrices(out), device, dst);  // packing order
}

void WeightStore::copy_matrices(const std::vector<const WeightMatrix*>& src, const std::vector<WeightMatrix*>& to,
                                Device& device, Buffer& dst) {
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < src.size(); ++i) {
    *to[i] = *src[i];
    if (src[i]->data == nullptr) continue;  // an expert another rank holds (expert parallelism): stays empty
    device.copy_from_host(dst, static_cast<std::size_t>(offset), src[i]->data, static_cast<std::size_t>(src[i]->bytes()));
    to[i]->data = dst.as<std::uint8_t>() + offset;
    offset += round_line(src[i]->bytes());
  }
}

WeightMatrix WeightStore::place(const WeightMatrix& src, const ModulePlace& at, RunMemory& memory,
                                const std::string& what) {
  if (in_place(at)) return src;  // the mmapped checkpoint, read in place
  DeviceMemory& mem = at.residence == Residence::kHost ? memory.host : memory.of(at.device);
  Buffer b = mem.allocate(static_cast<std::size_t>(src.bytes()), "weights of " + what);
  mem.device().copy_from_host(b, 0, src.data, static_cast<std::size_t>(src.bytes()));
  WeightMatrix out = src;
  out.data = b.data();
  buffers_.push_back(std::move(b));
  return out;
}

void WeightStore::place_vectors(const ModelConfig& config, const LayerWeights& src, DeviceMemory& mem,
                                const std::string& what, LayerWeights& out) {
  Buffer b = mem.allocate(static_cast<std::size_t>(layer_vector_bytes(config)), "norms and biases of " + what);
  std::int64_t offset = 0;
  for (VectorView LayerWeights::*v : kVectors) {
    const VectorView from = src.*v;
    if (from.empty()) continue;
    const std::int64_t bytes = from.size * static_cast<std::int64_t>(sizeof(float));
    mem.device().copy_from_host(b, static_cast<std::size_t>(offset), from.data, static_cast<std::size_t>(bytes));
    out.*v = VectorView{b.as<float>() + offset / static_cast<std::int64_t>(sizeof(float)), from.size};
    offset += round_line(bytes);
  }
  assert(offset == static_cast<std::int64_t>(b.size()) && "the vectors agree with the config");
  buffers_.push_back(std::move(b));
}

WeightStore::WeightStore(const LlamaFamilyModel& model, const StageLayout& layout, RunMemory& memory) {
  embed_ = place(model.embedding(), layout.embed, memory, "model.embed_tokens");
  if (model.position_embedding().data) {  // GPT-2's learned positions, beside the token embedding
    positions_ = place(model.position_embedding(), layout.embed, memory, "model.embed_tokens.positions");
  }
  const bool tied = model.lm_head().data == model.embedding().data && model.lm_head().rows == model.embedding().rows;
  const bool same_home = layout.head.residence == layout.embed.residence &&
                         (layout.head.residence != Residence::kDevice || layout.head.device == layout.embed.device);
  head_ = tied && same_home ? embed_ : place(model.lm_head(), layout.head, memory, "lm_head");
  const ModelConfig& c = model.config();
  DeviceMemory& head_home = memory.of(layout.head.device);
  Buffer norm = head_home.allocate(static_cast<std::size_t>(final_norm_bytes(c)), "the final norm (model.norm)");
  const VectorView from = model.final_norm();
  head_home.device().copy_from_host(norm, 0, from.data, static_cast<std::size_t>(from.size) * sizeof(float));
  final_norm_ = VectorView{norm.as<float>(), from.size};
  buffers_.push_back(std::move(norm));
  layers_.reserve(layout.layers.size());
  for (std::size_t l = 0; l < layout.layers.size(); ++l) {
    const LayerWeights& src = model.layer_weights(static_cast<int>(l));
    const ModulePlace& at = layout.layers[l];
    const std::string what = "model.layers." + std::to_string(l);
    LayerWeights w = src;
    if (at.host_experts) {
      // --n-cpu-moe: attention and router on the device; the experts stay the host's views (the
      // mmapped checkpoint, or the model's quantised copy), which the host-addressable CPU
      // devices read in place.
      const std::vector<const WeightMatrix*> part = {&src.q, &src.k, &src.v, &src.o, &src.router};
      std::int64_t bytes = 0;
      for (const WeightMatrix* m : part) bytes += round_line(m->bytes());
      DeviceMemory& mem = memory.of(at.device);
      if (mem.device().kind() == DeviceKind::kCuda) {
        throw InputError(what + " on " + mem.device().name() +
                         ": --cpu-moe / --n-cpu-moe keep experts on the host, and a GPU layer computing them there is not "
                         "built yet (the CPU and virtual devices run it); leave the flag out to run the experts on the GPU");
      }
      Buffer b = mem.allocate(static_cast<std::size_t>(bytes), "weights of " + what + " (its experts on the host)");
      copy_matrices(part, {&w.q, &w.k, &w.v, &w.o, &w.router}, mem.device(), b);
      buffers_.push_back(std::move(b));
    } else if (!in_place(at)) {
      DeviceMemory& mem = at.residence == Residence::kHost ? memory.host : memory.of(at.device);
      Buffer b = mem.allocate(static_cast<std::size_t>(packed_bytes(src)), "weights of " + what);
      copy_packed(src, mem.device(), b, w);
      buffers_.push_back(std::move(b));
    }
    place_vectors(c, src, memory.of(at.device), what, w);
    layers_.push_back(w);
  }
}

}  // namespace plexus
