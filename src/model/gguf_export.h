// A Hugging Face checkpoint written as a GGUF v3 file that llama.cpp loads: llama.cpp's metadata
// keys and tensor names, every weight matrix in the type a named mix gives it (model/quant_mix.h:
// llama.cpp's rules) or in one float type, norms and biases as F32. Mixture-of-experts layers as
// llama.cpp has them: the router as ffn_gate_inp (F32), each expert projection stacked over the
// experts as ffn_{gate,up,down}_exps.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/gguf_writer.h"
#include "model/config.h"
#include "model/quant_mix.h"

namespace plexus {

struct GgufExportOptions {
  QuantMix mix = QuantMix::kQ8_0;
  // F32 | F16 | BF16: every weight matrix in that type instead of the mix's (llama-quantize's
  // --type F32/F16/BF16); a mixture-of-experts router stays F32 either way.
  std::optional<DType> float_type;
  int threads = 0;            // quantising threads (0: one per hardware thread)
  std::string name;           // general.name (default: the directory's name)
  // Before each tensor is produced (index of count); may throw (e.g. Interrupted) to stop.
  std::function<void(std::size_t index, std::size_t count, const std::string& name)> progress;
};

struct GgufExportResult {
  std::size_t tensors = 0;
  std::size_t quantised = 0;     // tensors written in a block format
  std::uint64_t bytes = 0;       // the file's size
  bool tokenizer = false;        // tokenizer.ggml.* written
  std::vector<std::string> warnings;
};

// llama.cpp's name for an HF tensor name ("model.layers.3.self_attn.q_proj.weight" →
// "blk.3.attn_q.weight"); empty for a name llama.cpp's converter does not carry over.
std::string gguf_tensor_name(const std::string& hf_name);
// The same in architecture A's names (gguf_layer_part_names(A)): Gemma's norms, Phi-3's fused
// attn_qkv / ffn_up, GPT-2's position_embd and its q, k, v all in one attn_qkv.
std::string gguf_tensor_name(const std::string& hf_name, Arch a);
// The GGUF architecture string for a config: llama (mistral and mixtral too), qwen2, qwen3,
// qwen3moe, gpt-oss, gemma2, gemma3, phi3, gpt2.
std::string gguf_arch_name(Arch a);
// The per-frequency divisors llama.cpp's `rope_freqs.weight` holds for llama3 rope scaling
// (head_dim / 2 values).
std::vector<float> llama3_rope_freq_factors(const ModelConfig& c);

// Reads MODEL_DIR (config.json, safetensors, tokenizer files when present) and writes OUT
// atomically. InputError naming the model, tensor or option when it cannot be converted.
GgufExportResult export_gguf(const std::string& model_dir, const std::string& out, const GgufExportOptions& options);

}  // namespace plexus
