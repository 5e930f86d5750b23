// gpt-oss's MXFP4 experts (gpt_oss_mxfp4.h): finding and checking NAME_blocks + NAME_scales, and
// repacking their rows into plexus MXFP4 blocks.
#include "model/gpt_oss_mxfp4.h"

#include "core/error.h"
#include "kernels/mxfp4_hf.h"

namespace plexus {

namespace {

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t;
  for (const std::int64_t d : s) t += (t.empty() ? "" : ", ") + std::to_string(d);
  return "[" + t + "]";
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// config.json's names for the fused tensor's (rows, cols), for messages.
struct Dims {
  std::string rows, cols;
};
Dims dims_named(const ModelConfig& c, const std::string& fused) {
  const std::string H = "hidden_size " + std::to_string(c.hidden_size);
  const std::string I = "intermediate_size " + std::to_string(c.moe.expert_intermediate_size);
  if (ends_with(fused, "gate_up_proj")) return {"2 · " + I, H};
  return {H, I};
}

}  // namespace

std::vector<std::int64_t> mxfp4_expert_shape(const ModelConfig& c, const std::string& fused) {
  const std::int64_t H = c.hidden_size, Ie = c.moe.expert_intermediate_size;
  if (ends_with(fused, "gate_up_proj")) return {2 * Ie, H};
  return {H, Ie};
}

std::optional<Mxfp4Experts> gpt_oss_mxfp4_experts(const Checkpoint& ck, const ModelConfig& c, const std::string& fused) {
  const std::string bn = fused + kMxfp4BlocksSuffix, sn = fused + kMxfp4ScalesSuffix;
  const bool has_blocks = ck.contains(bn), has_scales = ck.contains(sn);
  if (!has_blocks && !has_scales) return std::nullopt;
  if (has_blocks != has_scales) {
    const TensorRef one = ck.get(has_blocks ? bn : sn);
    throw InputError(one.path() + ": the checkpoint holds '" + (has_blocks ? bn : sn) + "' but not '" + (has_blocks ? sn : bn) +
                     "': an MXFP4 tensor is stored as both");
  }
  Mxfp4Experts m;
  m.blocks = ck.get(bn);
  m.scales = ck.get(sn);
  if (ck.contains(fused)) {
    throw InputError(ck.get(fused).path() + ": the checkpoint holds '" + fused + "' and its MXFP4 parts '" + bn + "', '" + sn +
                     "': keep one of the two");
  }
  for (const TensorRef* t : {&m.blocks, &m.scales}) {
    if (t->info->dtype_name != "U8") {
      throw InputError(t->path() + ": tensor '" + t->info->name + "' is " + t->info->dtype_name +
                       "; MXFP4 blocks and scales are U8 (uint8)");
    }
  }
  const std::vector<std::int64_t> rc = mxfp4_expert_shape(c, fused);
  m.experts = c.moe.num_experts, m.rows = rc[0], m.cols = rc[1];
  const Dims named = dims_named(c, fused);
  if (m.cols % 32 != 0) {
    throw InputError(m.blocks.path() + ": tensor '" + bn + "' is MXFP4, whose blocks are 32 wide, but config.json's " + named.cols +
                     " is not a multiple of 32");
  }
  const std::vector<std::int64_t> want_blocks = {m.experts, m.rows, m.cols / 32, 16};
  const std::vector<std::int64_t> want_scales = {m.experts, m.rows, m.cols / 32};
  const std::string why = " (num_local_experts " + std::to_string(m.experts) + "; " + named.rows + "; " + named.cols + " / 32";
  if (m.blocks.info->shape != want_blocks) {
    throw InputError(m.blocks.path() + ": tensor '" + bn + "' has shape " + shape_text(m.blocks.info->shape) +
                     " but config.json implies " + shape_text(want_blocks) + why + "; 16 bytes a block)");
  }
  if (m.scales.info->shape != want_scales) {
    throw InputError(m.scales.path() + ": tensor '" + sn + "' has shape " + shape_text(m.scales.info->shape) +
                     " but config.json implies " + shape_text(want_scales) + why + ")");
  }
  return m;
}

void Mxfp4Experts::repack_row(std::int64_t e, std::int64_t r, void* out) const {
  const std::int64_t nb = blocks_per_row(), first = (e * rows + r) * nb;  // the row's first block
  mxfp4_from_hf_blocks(static_cast<const std::uint8_t*>(blocks.data) + first * 16,
                       static_cast<const std::uint8_t*>(scales.data) + first, nb, out);
}

}  // namespace plexus
