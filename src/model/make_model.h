// Writes random-weight Hugging Face checkpoints (config.json + safetensors) for tests, demos
// and benchmarks, since no pretrained weights can be downloaded here.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/config.h"

namespace plexus {

struct MakeModelOptions {
  std::string preset = "tiny";   // preset_names()
  Arch arch = Arch::kLlama;      // kLlama | kQwen2 | kQwen3 | kMixtral | kQwen3Moe (kMistral writes a Mistral config)
  DType dtype = DType::kBF16;
  std::uint64_t seed = 0;
  double std = 0.02;             // standard deviation of the random matrices
  std::int64_t vocab_size = 0;   // 0: the preset's
  int shards = 1;                // >1 writes model-0000k-of-0000n.safetensors + index
  std::optional<std::int64_t> bos_token_id;  // default 1
  std::optional<std::int64_t> eos_token_id;  // default 2 (the real-shape presets: 128001)
  std::optional<MoeConfig> moe;  // the mixture of a MoE --arch, in place of the preset's (tests)
  // gpt-oss only: the experts as OpenAI's checkpoints store them, MXFP4 (NAME_blocks + NAME_scales,
  // uint8; model/gpt_oss_mxfp4.h), quantised from the random values (llama.cpp's MXFP4 rule), and
  // config.json's quantization_config {"quant_method": "mxfp4", ...}. The rest stays in `dtype`.
  bool mxfp4_experts = false;
  int threads = 0;  // the real-shape presets' generating threads (model/bulk_weights.h); 0: all
  bool config_only = false;  // config.json alone, no weights (--config-only: for estimate and plan)
  // Polled between tensors: true stops with Interrupted (files already complete stay, no
  // temporary file is left). Empty: never.
  std::function<bool()> stop_requested;
  // Called after each tensor (the real-shape presets: each block) is made: parameters done so far
  // and in all, for a progress line. Empty: none.
  std::function<void(std::int64_t done, std::int64_t total)> progress;
};

// The presets: tiny and small (made-up shapes, weights from one Box-Muller sequence, bit for bit
// what earlier versions wrote) and the real shapes llama-3.2-1b, llama-3.1-8b (Meta's shapes, rope
// scaling and token ids), mixtral-8x7b, qwen3-30b-a3b and moe-cpu-bench (mixtures of experts),
// whose weights model/bulk_weights.h writes (several threads, large writes).
std::vector<std::string> preset_names();
std::string preset_list();  // "tiny, small, llama-3.2-1b or llama-3.1-8b"
bool is_bulk_preset(const std::string& preset);
// The architecture a real-shape preset fixes (llama-3.x: Llama; mixtral-8x7b: Mixtral;
// qwen3-30b-a3b, moe-cpu-bench: Qwen3-MoE); nullopt for tiny and small, which take --arch.
std::optional<Arch> preset_arch(const std::string& preset);

// The config a preset describes (throws InputError for an unknown preset, and for a real-shape
// preset with an architecture other than Llama).
ModelConfig preset_config(const std::string& preset, Arch arch, std::int64_t vocab_size);

// Writes OUT_DIR/config.json and the weights, each file atomically (core/atomic_file.h), the
// config last; returns the number of parameters. RuntimeError naming the file on a write error;
// InputError for mxfp4_experts on another architecture or widths not multiples of 32.
std::int64_t write_random_model(const std::string& out_dir, const MakeModelOptions& options);

// config.json text of a config (the fields Hugging Face reads for these architectures).
Json config_to_json(const ModelConfig& c, DType dtype);
// gpt-oss's config.json quantization_config for MXFP4 experts, as OpenAI's checkpoints write it.
Json gpt_oss_mxfp4_quantization_config();

}  // namespace plexus
