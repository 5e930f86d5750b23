// GGUF models as the rest of plexus sees them: the hyper-parameters from the file's metadata (as
// a ModelConfig) and the Hugging Face name of each tensor llama.cpp's converter renamed.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/gguf_file.h"
#include "model/config.h"
#include "model/module_tree.h"

namespace plexus {

// Whether PATH names a GGUF model: a regular file that starts with the GGUF magic.
bool is_gguf_model_path(const std::string& path);

// The config of a GGUF model (general.architecture llama | qwen2 | qwen3 | qwen3moe | gpt-oss |
// gemma2 | gemma3 | phi3 | gpt2; llama with llama.expert_count > 0 is Mixtral): sizes from
// `<arch>.*` keys, vocab from the embedding tensor or the token list, tied embeddings when there
// is no output.weight, bos/eos from tokenizer.ggml.*; rope_interleaved for llama (its q/k rows
// were permuted by llama.cpp's converter); llama3-style rope factors from rope_freqs.weight.
// Experts as llama.cpp reads them (<arch>.expert_count, expert_used_count, qwen3moe's
// expert_feed_forward_length; see gguf_model.cpp). Gemma, Phi-3 and GPT-2 as llama.cpp reads
// them (gguf_model_families.cpp): Gemma's norms stored as (1 + w) (ModelConfig::
// norm_weights_hold_one), its attention scale and layer pattern derived as llama.cpp derives
// them; Phi-3's partial rotary and LongRoPE factor tensors; GPT-2's LayerNorm epsilon and
// learned positions. InputError naming the file and key otherwise.
ModelConfig gguf_model_config(const GgufFile& file);

// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight", "token_embd.weight" ->
// "model.embed_tokens.weight", ...; nullopt for tensors with no Hugging Face counterpart.
std::optional<std::string> hf_name_of_gguf_tensor(const std::string& name);
// The same for architecture A's names (gguf_layer_part_names(A)).
std::optional<std::string> hf_name_of_gguf_tensor(const std::string& name, Arch a);

// The names llama.cpp and Hugging Face give one tensor: whole names outside the layers
// ("token_embd.weight" ↔ "model.embed_tokens.weight"), and the part of decoder layer N between
// the layer and ".weight"/".bias" ("attn_q" ↔ "self_attn.q_proj"). One table for both directions.
struct GgufNamePair {
  const char* gguf;
  const char* hf;
};
std::span<const GgufNamePair> gguf_top_level_names();
std::span<const GgufNamePair> gguf_layer_part_names();
// The same for architecture A: A's own names first, then the tables above. Gemma 2/3: attn_norm
// ↔ input_layernorm, post_attention_norm ↔ post_attention_layernorm, ffn_norm ↔
// pre_feedforward_layernorm, post_ffw_norm ↔ post_feedforward_layernorm; Phi-3: attn_qkv ↔
// self_attn.qkv_proj, ffn_up ↔ mlp.gate_up_proj (gate and up fused, 2·I rows); GPT-2:
// position_embd.weight ↔ model.embed_tokens.positions, output_norm.bias ↔ model.norm.bias (its
// attn_qkv is split into q/k/v by gguf_hf_tensors and fused by the export).
std::vector<GgufNamePair> gguf_top_level_names(Arch a);
std::vector<GgufNamePair> gguf_layer_part_names(Arch a);

// llama.cpp's stacked expert tensors of a layer: blk.N.<gguf>.weight, ne [H, Ie, E] (gate, up) or
// [Ie, H, E] (down): expert e's (Ie, H) or (H, Ie) matrix is the e-th slice of whole rows.
struct GgufExpertPart {
  const char* gguf;          // ffn_gate_exps | ffn_up_exps | ffn_down_exps
  const char* MoeNames::*hf;  // the Hugging Face part: &MoeNames::gate | up | down
};
std::span<const GgufExpertPart> gguf_expert_parts();

// One Hugging Face tensor inside a GGUF tensor: its name, shape (HF order, outermost first) and
// bytes from `offset` within the GGUF tensor's data.
struct GgufHfTensor {
  std::string hf;
  std::vector<std::int64_t> shape;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};
// The Hugging Face tensors GGUF tensor T of a model configured as C (gguf_model_config) holds:
// none (no counterpart, e.g. rope_freqs.weight); T itself renamed (hf_name_of_gguf_tensor); a
// mixture-of-experts router blk.N.ffn_gate_inp.weight (ne [H, E]) as the architecture's router;
// or a stacked expert tensor as E per-expert tensors at expert e's offset (no copy: whole rows,
// so any block format too). InputError naming PATH, the tensor and the numbers when a router's
// or stack's dims disagree with the metadata (expert count, hidden size, expert width).
std::vector<GgufHfTensor> gguf_hf_tensors(const GgufTensor& t, const ModelConfig& c, const std::string& path);

}  // namespace plexus
