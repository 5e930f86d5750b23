// The model's parameters with their exact Hugging Face names, shapes and owning modules: the
// single source of truth for names, shared by the loader, the planner and the executor.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "model/config.h"
#include "model/quant_mix.h"

namespace plexus {

class Checkpoint;

struct ParamInfo {
  std::string name;                 // e.g. "model.layers.3.self_attn.q_proj.weight"
  std::string module;               // owning module, e.g. "model.layers.3.self_attn.q_proj"
  std::vector<std::int64_t> shape;  // as stored: (out, in) for linear weights
  int layer = -1;                   // decoder layer index; -1 outside the layers
  std::optional<std::string> tied_to;  // set on a parameter that shares another's storage
  std::optional<DType> dtype;       // the checkpoint's dtype, when read from headers
  std::int64_t numel() const;
};

// A mixture-of-experts layer's Hugging Face names: PREFIX + router + ".weight" (E, H), and
// PREFIX + experts + "E." + gate | up | down + ".weight" per expert.
struct MoeNames {
  const char* router;   // ".block_sparse_moe.gate" | ".mlp.gate"
  const char* experts;  // ".block_sparse_moe.experts." | ".mlp.experts."
  const char* gate;     // w1 | gate_proj: (Ie, H)
  const char* up;       // w3 | up_proj: (Ie, H)
  const char* down;     // w2 | down_proj: (H, Ie)
  const char* order[3];  // the three in the module's declaration order
};
MoeNames moe_names(Arch arch);
// The expert E of a parameter named "…" + n.experts + "E.…", or -1 for any other name.
std::int64_t expert_index(const std::string& name, const MoeNames& n);
// The names of decoder layer `layer`'s weight matrices in the order the run packs them
// (layer_matrices in model/llama_family.h): q k v o, then gate up down, or the router and each
// expert's gate up down (gpt-oss: the router and the fused gate_up_proj and down_proj, which
// the run packs as E experts' transposed gate, up and down).
std::vector<std::string> layer_matrix_names(const ModelConfig& config, int layer);
// The row counts of the matrices a fused weight is viewed as (Phi-3: qkv_proj as q, k, v;
// gate_up_proj as gate, up), in packing order; {} for a weight viewed whole.
std::vector<std::int64_t> fused_row_parts(const ModelConfig& config, const std::string& name);

class ModuleTree {
 public:
  // Names and shapes from config.json alone, in Hugging Face's named_parameters order
  // (embedding, layers 0..L-1, final norm, lm_head). With tied embeddings, lm_head.weight is
  // listed with tied_to = "model.embed_tokens.weight".
  static ModuleTree from_config(const ModelConfig& config);
  // The same, checked against a checkpoint's headers: every expected tensor present with the
  // expected shape (InputError naming the tensor otherwise); dtypes recorded. gpt-oss experts
  // stored as MXFP4 (NAME_blocks + NAME_scales, model/gpt_oss_mxfp4.h) are listed as NAME with
  // dtype kMXFP4 and their stored shape, (E, 2·Ie, H) and (E, H, Ie).
  static ModuleTree from_checkpoint(const ModelConfig& config, const Checkpoint& checkpoint);

  // A tree of the given parameters (a tensor-parallel shard's shapes, model/tensor_split.h).
  static ModuleTree from_params(const ModelConfig& config, std::vector<ParamInfo> params);

  const ModelConfig& config() const { return config_; }
  const std::vector<ParamInfo>& params() const { return params_; }
  const ParamInfo* find(const std::string& name) const;  // by name, in constant time
  // Quantise on load, as sizes: every weight matrix takes the type the named mix gives it
  // (model/quant_mix.h), as Checkpoint::quantize makes it. InputError for one the mix changes
  // that is already in a block format — the check Checkpoint::quantize makes.
  void quantize_as(QuantMix mix);
  // Whether any parameter is stored in a block format (a quantised checkpoint or quantize_as).
  bool quantized() const;

  // Module prefixes that are never split: "model.embed_tokens", "model.layers.N", "model.norm", "lm_head".
  static std::string layer_prefix(int layer);  // "model.layers.N"

 private:
  void index_names();  // fills by_name_ once params_ holds every name

  ModelConfig config_;
  std::vector<ParamInfo> params_;
  std::unordered_map<std::string, std::size_t> by_name_;  // name -> index in params_
};

}  // namespace plexus
