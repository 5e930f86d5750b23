// GPT-2 checkpoints (GPT2LMHeadModel) in the engine's layout. Hugging Face's GPT-2 stores its
// projections as Conv1D weights, (in, out), with q, k and v fused in one c_attn (H, 3·H); the
// engine's matrices are (out, in) per projection. The Conv1D weights are read in place, never
// copied: each becomes an (out, in) view of the stored (in, out) bytes (TensorRef::in_out_ld; the
// matmuls read WeightMatrix::in_out weights as stored), q, k and v as column thirds of c_attn;
// --quantize makes (out, in) block copies of them (checkpoint_quantize.cpp). Every tensor takes
// the engine's name (ModuleTree):
//   wte.weight               -> model.embed_tokens.weight       (vocab, H), in place
//   wpe.weight               -> model.embed_tokens.positions    (n_positions, H), in place
//   h.N.ln_1.{weight,bias}   -> model.layers.N.input_layernorm.{weight,bias}
//   h.N.attn.c_attn.weight   -> model.layers.N.self_attn.{q,k,v}_proj.weight (H, H) each, column thirds
//   h.N.attn.c_attn.bias     -> model.layers.N.self_attn.{q,k,v}_proj.bias, slices in place
//   h.N.attn.c_proj          -> model.layers.N.self_attn.o_proj
//   h.N.ln_2                 -> model.layers.N.post_attention_layernorm
//   h.N.mlp.c_fc             -> model.layers.N.mlp.up_proj      (I, H)
//   h.N.mlp.c_proj           -> model.layers.N.mlp.down_proj    (H, I)
//   ln_f.{weight,bias}       -> model.norm.{weight,bias}
// with or without the "transformer." prefix; h.N.attn.bias and h.N.attn.masked_bias (the causal
// mask buffers older checkpoints saved) are dropped.
#include "core/error.h"
#include "model/checkpoint.h"

namespace plexus {

namespace {

struct Gpt2Rename {
  const char* gpt2;    // the part after "h.N." (or the whole name outside the layers)
  const char* engine;  // the part after "model.layers.N." (or the whole name)
};

constexpr Gpt2Rename kGpt2TopLevel[] = {
    {"wte.weight", "model.embed_tokens.weight"}, {"wpe.weight", "model.embed_tokens.positions"},
    {"ln_f.weight", "model.norm.weight"},        {"ln_f.bias", "model.norm.bias"},
};

// In-place renames inside layer N (the Conv1D weights and c_attn's bias are handled apart).
constexpr Gpt2Rename kGpt2LayerParts[] = {
    {"ln_1.weight", "input_layernorm.weight"},          {"ln_1.bias", "input_layernorm.bias"},
    {"ln_2.weight", "post_attention_layernorm.weight"}, {"ln_2.bias", "post_attention_layernorm.bias"},
    {"attn.c_proj.bias", "self_attn.o_proj.bias"},      {"mlp.c_fc.bias", "mlp.up_proj.bias"},
    {"mlp.c_proj.bias", "mlp.down_proj.bias"},
};

// Conv1D weights (in, out) -> the engine's (out, in) matrices.
constexpr Gpt2Rename kGpt2Conv1D[] = {
    {"attn.c_proj.weight", "self_attn.o_proj.weight"},
    {"mlp.c_fc.weight", "mlp.up_proj.weight"},
    {"mlp.c_proj.weight", "mlp.down_proj.weight"},
};

// "h.12.attn.c_attn.weight" -> layer 12, part "attn.c_attn.weight"; false for other names.
bool gpt2_layer_part(const std::string& name, std::string* layer, std::string* part) {
  if (name.rfind("h.", 0) != 0) return false;
  const std::size_t dot = name.find('.', 2);
  if (dot == std::string::npos || dot == 2) return false;
  *layer = name.substr(2, dot - 2);
  if (layer->find_first_not_of("0123456789") != std::string::npos) return false;
  *part = name.substr(dot + 1);
  return true;
}

}  // namespace

void Checkpoint::adopt_gpt2_layout() {
  if (!index_.count("wte.weight") && !index_.count("transformer.wte.weight")) return;
  std::map<std::string, TensorRef> out;
  // The columns [c0, c0 + width) of Conv1D weight `src` (in, out) as an (out, in) = (width, in)
  // matrix read in place: TensorRef::in_out_ld, the stored row length.
  auto in_place = [this, &out](const TensorRef& src, const std::string& gpt2_name, const std::string& name,
                               std::int64_t c0, std::int64_t width) {
    const TensorInfo& in = *src.info;
    if (in.dtype != DType::kF32 && in.dtype != DType::kBF16 && in.dtype != DType::kF16) {
      throw InputError(src.path() + ": tensor '" + gpt2_name + "' is " + in.dtype_name +
                       "; GPT-2's Conv1D weights are read as F32, BF16 or F16");
    }
    TensorInfo& info = renamed_infos_.emplace_back(in);  // name, begin and end stay the file's
    info.shape = {width, in.shape[0]};
    TensorRef t = src;
    t.info = &info;
    t.data = static_cast<const std::uint8_t*>(src.data) + static_cast<std::size_t>(c0) * dtype_size(in.dtype);
    t.in_out_ld = in.shape[1];
    out[name] = t;
  };
  auto require_matrix = [](const TensorRef& r, const std::string& gpt2_name, std::int64_t col_multiple) {
    const std::vector<std::int64_t>& s = r.info->shape;
    if (s.size() != 2 || s[1] % col_multiple != 0) {
      std::string shape;
      for (std::int64_t d : s) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      throw InputError(r.path() + ": tensor '" + gpt2_name + "' has shape [" + shape + "]; GPT-2 stores it as a Conv1D weight (in, " +
                       (col_multiple == 3 ? "3 x out" : "out") + ")");
    }
  };
  for (const auto& [full, ref] : index_) {
    const std::string name = full.rfind("transformer.", 0) == 0 ? full.substr(12) : full;
    std::string engine;
    for (const Gpt2Rename& r : kGpt2TopLevel)
      if (name == r.gpt2) engine = r.engine;
    std::string layer, part;
    if (engine.empty() && gpt2_layer_part(name, &layer, &part)) {
      const std::string p = "model.layers." + layer + ".";
      if (part == "attn.bias" || part == "attn.masked_bias") continue;  // mask buffers, not parameters
      if (part == "attn.c_attn.weight") {  // (H, 3·H): q, k, v are column thirds
        require_matrix(ref, full, 3);
        const std::int64_t w = ref.info->shape[1] / 3;
        in_place(ref, full, p + "self_attn.q_proj.weight", 0, w);
        in_place(ref, full, p + "self_attn.k_proj.weight", w, w);
        in_place(ref, full, p + "self_attn.v_proj.weight", 2 * w, w);
        continue;
      }
      if (part == "attn.c_attn.bias") {  // (3·H): q, k, v one after another, viewed in place
        const std::int64_t n = ref.info->numel();
        if (ref.info->shape.size() != 1 || n % 3 != 0) {
          throw InputError(ref.path() + ": tensor '" + full + "' must be a vector of 3 x n_embd values, got " +
                           std::to_string(n));
        }
        const std::size_t bytes = static_cast<std::size_t>(n / 3) * dtype_size(ref.info->dtype);
        const char* parts[] = {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"};
        for (std::size_t i = 0; i < 3; ++i) {
          TensorInfo& t = renamed_infos_.emplace_back(*ref.info);
          t.shape = {n / 3};  // t.name stays the file's
          t.begin = ref.info->begin + i * bytes;
          t.end = t.begin + bytes;
          TensorRef slice = ref;
          slice.info = &t;
          slice.data = static_cast<const std::uint8_t*>(ref.data) + i * bytes;
          out[p + parts[i]] = slice;
        }
        continue;
      }
      bool done = false;
      for (const Gpt2Rename& r : kGpt2Conv1D) {
        if (part != r.gpt2) continue;
        require_matrix(ref, full, 1);
        in_place(ref, full, p + r.engine, 0, ref.info->shape[1]);
        done = true;
      }
      if (done) continue;
      for (const Gpt2Rename& r : kGpt2LayerParts)
        if (part == r.gpt2) engine = p + r.engine;
    }
    if (engine.empty()) {
      out[full] = ref;  // kept as named: lm_head.weight (tied), or a tensor ModuleTree will refuse
      continue;
    }
    out[engine] = ref;  // its TensorInfo keeps the file's name, for messages
  }
  index_ = std::move(out);
}

}  // namespace plexus
