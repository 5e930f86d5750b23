// gpt-oss's experts as OpenAI's checkpoints store them: MXFP4, each fused expert tensor NAME
// (model.layers.L.mlp.experts.gate_up_proj | down_proj) held as NAME_blocks + NAME_scales, both
// uint8, beside bf16 biases; config.json carries quantization_config {"quant_method": "mxfp4",
// "modules_to_not_convert": [...]}.
//
// The layout, from transformers (integrations/mxfp4.py: Mxfp4GptOssExperts declares the shapes,
// convert_moe_packed_tensors dequantises; models/gpt_oss/modeling_gpt_oss.py runs them):
//   gate_up_proj_blocks (E, 2·Ie, H/32, 16)  gate_up_proj_scales (E, 2·Ie, H/32)
//   down_proj_blocks    (E, H, Ie/32, 16)    down_proj_scales    (E, H, Ie/32)
// Per expert, a matrix of rows = output features (2·Ie, then H) by columns = input features (H,
// then Ie) in MXFP4 blocks of 32 along the columns (kernels/mxfp4_hf.h has the bytes). Dequantised,
// convert_moe_packed_tensors gives (E, 2·Ie, H) and transposes it to the bf16 model's (E, H, 2·Ie)
// gate_up_proj, whose columns 0::2 are the gate and 1::2 the up (GptOssExperts: gate_up[..., ::2],
// gate_up[..., 1::2]): in the stored matrix the gate is rows 0, 2, 4, … and the up rows 1, 3, 5, ….
// down_proj (E, H, Ie) dequantised is transposed to (E, Ie, H) the same way. The biases
// (gate_up_proj_bias (E, 2·Ie), interleaved the same, and down_proj_bias (E, H)) stay bf16.
//
// plexus runs these as stored: each expert's gate (Ie, H), up (Ie, H) and down (H, Ie) become
// DType::kMXFP4 matrices of the same blocks, never dequantised. The module tree lists such a
// tensor under its fused name with dtype kMXFP4 and its stored orientation, (E, 2·Ie, H) and
// (E, H, Ie) (blocks along the last dimension, as every block format).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/config.h"

namespace plexus {

// One fused expert tensor held as MXFP4: its two stored parts, checked against config.json.
struct Mxfp4Experts {
  TensorRef blocks;  // uint8 (E, rows, cols / 32, 16)
  TensorRef scales;  // uint8 (E, rows, cols / 32)
  std::int64_t experts = 0, rows = 0, cols = 0;  // per expert: (rows, cols), rows the outputs
  std::int64_t blocks_per_row() const { return cols / 32; }
  // Row r of expert e as nb = blocks_per_row() plexus MXFP4 blocks (17 · nb bytes) at `out`.
  void repack_row(std::int64_t e, std::int64_t r, void* out) const;
};

// "_blocks" and "_scales": the suffixes of the stored parts of a fused expert tensor.
inline constexpr const char* kMxfp4BlocksSuffix = "_blocks";
inline constexpr const char* kMxfp4ScalesSuffix = "_scales";

// Per expert, the (rows, cols) of gpt-oss's fused tensor `fused` ("….gate_up_proj": (2·Ie, H);
// "….down_proj": (H, Ie)) as stored in MXFP4, outputs first.
std::vector<std::int64_t> mxfp4_expert_shape(const ModelConfig& c, const std::string& fused);

// The MXFP4 parts of `fused` (a gpt-oss layer's "….mlp.experts.gate_up_proj" or "….down_proj")
// when the checkpoint holds NAME_blocks or NAME_scales; nullopt when it holds neither (the bf16
// or f32 layout). InputError naming the tensor and the numbers when one part is missing, the
// dense tensor is there too, a part is not uint8, or a shape disagrees with config.json
// (num_local_experts, intermediate_size, hidden_size; MXFP4 needs hidden_size and intermediate_size
// to be multiples of 32).
std::optional<Mxfp4Experts> gpt_oss_mxfp4_experts(const Checkpoint& ck, const ModelConfig& c, const std::string& fused);

}  // namespace plexus
