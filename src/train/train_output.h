// What `plexus train` leaves in --out: the trained model as a Hugging Face checkpoint
// (config.json with torch_dtype float32, model.safetensors in F32 with HF names, the tied lm_head
// not stored, the model's tokenizer files), each file written atomically; and the checks of an
// --out directory before a run starts.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "core/json.h"
#include "model/config.h"
#include "train/param_layout.h"

namespace plexus {

// The tensors of `params` (layout.total()) as an F32 safetensors file at `path`, atomically
// (temporary file, fsync, rename). `prefix` goes before each name ("exp_avg." for optimizer state).
void write_params_safetensors(const std::string& path, const ParamLayout& layout, std::span<const float> params,
                              const std::string& prefix = "");
// The inverse: `out` (layout.total()) from PATH's tensors PREFIX+name. InputError naming PATH and
// the tensor when one is missing or has another shape or dtype.
void read_params_safetensors(const std::string& path, const ParamLayout& layout, std::span<float> out,
                             const std::string& prefix = "");

// What identifies a model for training: its geometry and its parameters' names and shapes. Two
// models with equal fingerprints can exchange weights and optimizer state.
Json model_fingerprint(const ModelConfig& config, const ParamLayout& layout);
// The geometry alone (what a config.json of another model differs in).
Json model_geometry(const ModelConfig& config);

// Checks --out before any step: InputError naming OUT/config.json when it holds another model,
// or OUT/checkpoints when it holds checkpoints and `resume` is false (pass --resume or choose
// another --out: nothing is overwritten). Writes nothing.
void check_out_dir(const std::string& out, const ModelConfig& config, bool resume);

// config.json of the trained model: model_dir's with torch_dtype float32, or one made from
// `config` (a GGUF model).
Json trained_config_json(const std::string& model_dir, const ModelConfig& config);

// Copies the tokenizer files of `model_dir` that exist (tokenizer.json, tokenizer_config.json,
// special_tokens_map.json, generation_config.json) into `dir`, each atomically; nothing for a
// GGUF model.
void copy_model_side_files(const std::string& model_dir, const std::string& dir);

// Writes the trained model into `out`: model.safetensors, the tokenizer files of `model_dir`
// that exist (tokenizer.json, tokenizer_config.json, special_tokens_map.json,
// generation_config.json), then config.json (model_dir's with torch_dtype float32, or one made
// from `config` for a GGUF model) last, each atomically.
void write_trained_model(const std::string& out, const std::string& model_dir, const ModelConfig& config,
                         const ParamLayout& layout, std::span<const float> params);

}  // namespace plexus
