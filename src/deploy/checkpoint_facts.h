// What `plexus deploy` reads from a checkpoint that another engine serves (vLLM, TGI, TEI), so it
// can size any architecture without plexus's loader: the parameter bytes from the safetensors
// headers (or the index's metadata.total_size) and the attention shape from config.json, each
// number with the key it came from. Rules: docs/deploy.md "Sizing for vLLM, TGI and TEI".
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "core/json.h"

namespace plexus::deploy {

struct WeightBytes {
  std::int64_t bytes = 0;
  // Where the number came from: "the headers of model.safetensors (28 tensors)", "metadata.total_size
  // of model.safetensors.index.json (its shards are not here)".
  std::string source;
};

// InputError naming MODEL when it is no directory (a GGUF file): vLLM, TGI and TEI deployments are
// sized from a Hugging Face model directory.
void require_model_directory(const std::string& model);

// The bytes of every tensor of MODEL_DIR's safetensors checkpoint: the headers of the shards
// model.safetensors.index.json names (its metadata.total_size where a shard is not there), else of
// model.safetensors, else of every *.safetensors. InputError (exit 2) naming the file when MODEL
// holds no safetensors file or a header is malformed.
WeightBytes read_weight_bytes(const std::string& model_dir);

// A number config.json gives, with its key: "n_layer", "text_config.num_hidden_layers"; a derived
// one says how: "n_embd 64 / n_head 4".
struct ConfigNumber {
  std::int64_t value = 0;
  std::string key;
};

// The first of `keys` that config.json (or its text_config, for multimodal models) holds as a
// positive integer; none when it holds none of them.
std::optional<ConfigNumber> config_number(const Json& config, std::initializer_list<const char*> keys);

// The KV cache's element size: the engines keep K and V in the model's 16-bit dtype (vLLM's
// --kv-cache-dtype auto; an FP32 checkpoint runs in FP16).
inline constexpr std::int64_t kKvElementBytes = 2;

// The attention config the KV cache follows (for an encoder-decoder model, its decoder's: each
// token is held once per decoder layer, as self-attention K and V for the tokens it generates, as
// cross-attention K and V for the input's).
struct AttentionShape {
  bool encoder_decoder = false;
  ConfigNumber layers;
  ConfigNumber heads;
  ConfigNumber kv_heads;  // the heads' key where the config names no KV heads (every head keeps its K and V)
  ConfigNumber head_dim;
  ConfigNumber hidden;    // hidden_size / n_embd / d_model, or heads × head_dim
  ConfigNumber vocab;
  // 2 (K and V) × layers × KV heads × head_dim × kKvElementBytes.
  std::int64_t kv_bytes_per_token() const;
  // That product with each number's key: "2 (K, V) × n_layer 2 × KV heads 4 (n_head, no KV-head
  // key) × head_dim 16 (n_embd 64 / n_head 4) × 2 bytes".
  std::string text() const;
};

// InputError (exit 2) naming `where` (MODEL/config.json) and the keys looked for when the config
// gives no layers, heads, head_dim (nor a hidden size that the heads divide) or vocabulary size.
AttentionShape read_attention_shape(const Json& config, const std::string& where);

// The positions the model takes (max_position_embeddings, n_positions, ...); none for models with
// relative positions only (T5).
std::optional<ConfigNumber> max_positions(const Json& config);

}  // namespace plexus::deploy
