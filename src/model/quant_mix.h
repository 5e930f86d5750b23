// llama.cpp's named quantisation mixes (Q4_K_M, Q5_K_S, IQ4_XS, ...): which type each tensor of a
// model takes, by the rules of llama.cpp's llama_tensor_get_type (src/llama-quant.cpp) without an
// importance matrix. One module for `plexus quantize`, `--quantize` on load and the planner.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace plexus {

enum class QuantMix { kQ8_0, kQ6_K, kQ5_K_M, kQ5_K_S, kQ5_1, kQ5_0, kQ4_K_M, kQ4_K_S, kQ4_1, kQ4_0, kIQ4_XS, kIQ4_NL, kQ3_K_M, kQ2_K };

struct QuantMixInfo {
  QuantMix mix;
  std::string_view name;         // "Q4_K_M": llama-quantize's spelling
  DType base;                    // the type most tensors take
  std::uint32_t ftype;           // llama.cpp's LLAMA_FTYPE_MOSTLY_* code (GGUF general.file_type)
  std::string_view description;  // one line, for help and docs
};

// Every mix, in the order users see them listed (most bits first).
std::span<const QuantMixInfo> quant_mixes();
const QuantMixInfo& quant_mix_info(QuantMix mix);
// "q4_k_m": the name in lower case, as JSON reports and --quantize values show it.
std::string quant_mix_lower_name(QuantMix mix);
// "Q8_0, Q6_K, ..., Q2_K": the names, for messages.
std::string quant_mix_list();

// A mix by name, any case; llama-quantize's aliases Q4_K, Q5_K and Q3_K name Q4_K_M, Q5_K_M and
// Q3_K_M. Nothing for any other name.
std::optional<QuantMix> parse_quant_mix(std::string_view name);

// What the rules need to know of the model.
struct QuantModelFacts {
  std::int64_t n_layers = 0;
  std::int64_t n_heads = 0;
  std::int64_t n_kv_heads = 0;
  bool tied_embeddings = false;  // no output.weight / lm_head.weight of its own
  std::int64_t n_experts = 0;    // a mixture of experts' experts per layer (llama.cpp's rules for 8: attn_k/v Q8_0, attn_output Q5_K)
};

// The type `mix` gives tensor `name` of `shape` (outermost first, the row last: Hugging Face order;
// a GGUF file's ne reversed), or nothing when the tensor is left as stored (1-D tensors, norms,
// anything not a weight). `name` is a Hugging Face name (model.layers.3.self_attn.v_proj.weight,
// model.embed_tokens.weight, lm_head.weight) or llama.cpp's (blk.3.attn_v.weight, token_embd.weight,
// output.weight). A row that the chosen type's block does not divide falls back as llama.cpp does
// (Q2_K, Q3_K → Q4_0; Q4_K → Q5_0; Q5_K → Q5_1; Q6_K → Q8_0; IQ4_XS → IQ4_NL), and to F16
// when 32 does not divide it either.
std::optional<DType> quant_mix_type(QuantMix mix, std::string_view name, std::span<const std::int64_t> shape,
                                    const QuantModelFacts& facts);

}  // namespace plexus
